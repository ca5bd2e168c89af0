#!/usr/bin/env bash
# bench/device-sched.sh - a lone hash job through wavedd before and after
# the fair scheduler (issue 12), on the GPU machine, in one run:
#
#   bench/device-sched.sh DIR OUT
#
# DIR holds wavedd-old (the baseline build), wavedd-new, wavectl, packs/
# and libs/ (bundle-libs.sh).  Each daemon serves one cuda device; each
# runs the same job of pack main (2^29 nonces) twice, alternating
# old/new/old/new, timed by the wall clock around `wavectl submit hash`
# and by the job's own seconds (JobInfo.seconds: first piece to last).
# Then the new daemon runs two such jobs of two clients at once: both end,
# and their combined rate is set against the lone job's.  Prints a table.
set -uo pipefail
D=$(cd "${1:?folder}" && pwd)
OUT=${2:?output folder}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
n=$((1 << 29))
sock=/tmp/wavedd-sched-$$.sock
url=ipc://$sock
cat >"$OUT/daemon.yaml" <<EOF
listen: [$url]
log_level: info
packs:
  dir: $D/packs
  load: [main]
devices:
  - {name: cuda0, backend: cuda, index: 0}
EOF
ctl() { timeout 240 "$D/wavectl" --url "$url" --timeout 120000 "$@"; }
start() {
  "$D/$1" --config "$OUT/daemon.yaml" --foreground 2>>"$OUT/$1.log" &
  pid=$!
  for _ in $(seq 1 1800); do
    ctl status --json >"$OUT/status.json" 2>/dev/null &&
      grep -q '"ready": true' "$OUT/status.json" && return 0
    kill -0 $pid 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
stop() { kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; }
# job LABEL NONCE: one job; prints "wall_rate job_rate fingerprint"
job() {
  local t0 t1 r
  t0=$(date +%s.%N)
  r=$(ctl submit hash --pack main --nonce "$2" --count $n \
        --target 0000010000000000 --max-winners 8 --device cuda0 --json \
        2>"$OUT/$1.err") || { echo "FAIL $1: $(tail -n 2 "$OUT/$1.err")" >&2; return 1; }
  t1=$(date +%s.%N)
  printf '%s\n' "$r" >"$OUT/$1.json"
  local s fp
  s=$(printf '%s' "$r" | grep -o '"seconds": *[0-9.e+-]*' | head -n 1 | awk '{ print $2 }')
  fp=$(printf '%s' "$r" | grep -o '"job_fingerprint": *"[0-9a-f]*"' | awk '{ print $2 }')
  awk -v n=$n -v a="$t0" -v b="$t1" -v s="$s" -v fp="$fp" \
    'BEGIN { printf "%.1f %.1f %s\n", n / (b - a) / 1e6, (s > 0 ? n / s / 1e6 : 0), fp }'
}
declare -A wall jobr fps
for round in 1 2; do
  for v in old new; do
    start wavedd-$v || { echo "FAIL wavedd-$v did not come up"; tail "$OUT/wavedd-$v.log"; exit 1; }
    read -r w j f < <(job "$v-$round" 0x200000000) || { stop; exit 1; }
    wall[$v]="${wall[$v]:-} $w" jobr[$v]="${jobr[$v]:-} $j" fps[$v,$round]=$f
    echo "     $v round $round: wall $w M/s, job $j M/s, fingerprint $f"
    stop
  done
done
same=ok
for k in "${!fps[@]}"; do [ "${fps[$k]}" = "${fps[old,1]}" ] || same=DIFFER; done
# two clients at once on the new daemon
start wavedd-new || exit 1
t0=$(date +%s.%N)
job pair-a 0x200000000 >"$OUT/pair-a.txt" & pa=$!
job pair-b 0x400000000 >"$OUT/pair-b.txt" & pb=$!
wait $pa; ra=$?; wait $pb; rb=$?
t1=$(date +%s.%N)
stop
pair=$(awk -v n=$n -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", 2 * n / (b - a) / 1e6 }')
mean() { awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.1f", s / NF }' <<<"$1"; }
wo=$(mean "${wall[old]}") wn=$(mean "${wall[new]}")
jo=$(mean "${jobr[old]}") jn=$(mean "${jobr[new]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "?" }'; }
echo
echo "| lone job, main 2^29, cuda0 | old M/s | new M/s | new / old |"
echo "|---|---|---|---|"
echo "| wall (wavectl submit .. result) | $wo | $wn | $(ratio "$wn" "$wo") |"
echo "| JobInfo.seconds (first to last piece) | $jo | $jn | $(ratio "$jn" "$jo") |"
echo "| two clients at once (new), combined wall | | $pair | $(ratio "$pair" "$wn") of lone |"
echo "fingerprints old/new, both rounds: $same; pair jobs: rc $ra $rb, $(cat "$OUT/pair-a.txt" "$OUT/pair-b.txt" | tr '\n' ' ')"
