#!/usr/bin/env bash
# tests/integ_opencl.sh - wavedd with an `opencl` device (PoCL in CI),
# driven by wavectl over ipc the way a user runs it:
#   - the device opens, prints its exchange path and reason in status, and
#     passes the start-up self-check of packs small and closed;
#   - reductions (u32 sum/max/xor over random rows, f32 sum and extent over
#     floats of mixed sign and scale) give the same bits on ocl0 and cpu0;
#   - the metrics page's job-duration histogram has ocl0's transfer phase
#     (each reduction's copies into its windows, taking time) and no
#     transfer series for cpu0 (under a second);
#   - each pack's known answer (2^13 nonces from 0: one segment) on ocl0,
#     and a hash job with a target gives the same job fingerprint, best and
#     winners on both, and as one job over both devices;
#   - SIGTERM stops the daemon with exit status 0.
#   tests/integ_opencl.sh WAVEDD WAVECTL SOURCE_DIR
set -uo pipefail
D=${1:?wavedd}
C=${2:?wavectl}
S=$(cd "${3:?source folder}" && pwd)
T=$(mktemp -d /tmp/wv-integ-ocl.XXXXXX)
trap 'rm -rf "$T"' EXIT
url=ipc://$T/wavedd.sock
cat >"$T/wavedd.yaml" <<CFG
listen:
  - $url
log_level: info
metrics: http://127.0.0.1:0
packs:
  dir: $S/config/packs
  load: [small, closed]
devices:
  - name: cpu0
    backend: cpu
    threads: 1
  - name: ocl0
    backend: opencl
    platform: 0
    index: 0
CFG
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
ctl() { "$C" --url "$url" --timeout 300000 "$@"; }

"$D" --config "$T/wavedd.yaml" --foreground 2>"$T/wavedd.log" &
pid=$!
for _ in $(seq 1 600); do
  "$C" --url "$url" --timeout 1000 status >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
kill -0 $pid 2>/dev/null || { cat "$T/wavedd.log"; echo "FAIL wavedd exited"; exit 1; }
for _ in $(seq 1 3000); do
  ctl status --json >"$T/status.json" 2>&1 || break
  grep -q '"state": "pending"' "$T/status.json" || break
  sleep 0.1
done
ctl status >"$T/status.txt" 2>&1
cat "$T/status.txt"
blk() { awk -v d="$1" '$1 == d { on = 1; next } /^[^ ]/ { on = 0 } on' "$T/status.txt"; }
blk ocl0 | grep -Eq 'state +(idle|running)' && ok "ocl0 is up" || bad "ocl0 is not up"
blk ocl0 | grep -Eq 'exchange +local .*:' && ok "ocl0 status prints exchange path and reason" ||
  bad "ocl0 status: no exchange path with a reason"
n_ok=$(blk ocl0 | awk '$1 == "pack" && $3 == "ok" { n++ } END { print n + 0 }')
[ "$n_ok" = 2 ] && ok "ocl0: 2 packs pass their self-checks" || bad "ocl0: $n_ok of 2 packs pass"

head -c $((4 * 300000)) /dev/urandom >"$T/u32.raw"
awk 'BEGIN { srand(11); for (i = 0; i < 100000; i++)
       printf "%.9g\n", (rand() - 0.5) * 2 ^ (int(rand() * 40) - 20) }' >"$T/f32.txt"
reduce() {
  local label=$1 a b
  shift
  a=$(ctl submit reduce "$@" --device cpu0 --json 2>&1 | grep -o '"bits": *\[[^]]*\]')
  b=$(ctl submit reduce "$@" --device ocl0 --json 2>&1 | grep -o '"bits": *\[[^]]*\]')
  if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "reduce $label: $b on both"
  else bad "reduce $label: cpu0 $a, ocl0 $b"; fi
}
reduce "u32 sum" --op sum --dtype uint32 --format raw --input "$T/u32.raw"
reduce "u32 max" --op max --dtype uint32 --format raw --input "$T/u32.raw"
reduce "u32 xor" --op xor --dtype uint32 --format raw --input "$T/u32.raw"
reduce "f32 sum" --op sum --dtype float32 --format text --input "$T/f32.txt"
reduce "f32 extent" --op extent --dtype float32 --format text --input "$T/f32.txt"

# the page (rendered once a second) over bash's /dev/tcp, as HTTP/1.0
murl=$(grep -o 'metrics on http://[^ ]*' "$T/wavedd.log" | cut -d' ' -f3)
hp=${murl#http://}; hp=${hp%%/*}
page() {
  exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}" || return 1
  printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$hp" >&3
  timeout 10 cat <&3 | tr -d '\r' >"$T/page.txt"
  exec 3<&-
}
h='wavedd_job_duration_seconds'
for _ in $(seq 1 100); do
  page && grep -q "^${h}_count{device=\"ocl0\",kind=\"reduce\",phase=\"compute\"} 5$" \
    "$T/page.txt" && break
  sleep 0.1
done
xs=$(sed -n "s/^${h}_sum{device=\"ocl0\",kind=\"reduce\",phase=\"transfer\"} //p" "$T/page.txt")
if grep -q "^${h}_count{device=\"ocl0\",kind=\"reduce\",phase=\"transfer\"} 5$" "$T/page.txt" &&
   awk -v s="${xs:-0}" 'BEGIN { exit !(s > 0) }'; then
  ok "metrics: ocl0's 5 reductions observed a transfer of $xs s in all"
else
  bad "metrics: ocl0's transfer phase: $(grep "^${h}_[a-z]*{device=\"ocl0\",kind=\"reduce\"" "$T/page.txt" | grep -v _bucket)"
fi
grep -q 'device="cpu0",kind="[a-z]*",phase="transfer"' "$T/page.txt" &&
  bad "metrics: cpu0 has a transfer series" || ok "metrics: no transfer series for cpu0"

for pk in small:316e6eea0f3d12db closed:57a520b5d26aa046; do
  p=${pk%%:*} want=${pk#*:}
  # [0, 2^13) is one segment, whose fingerprint is the pack's batch_fnv.
  r=$(ctl submit hash --pack "$p" --nonce 0 --count 8192 --device ocl0 \
        --segments --json 2>&1)
  printf '%s' "$r" | grep -q "\"segments\": *\[\"$want\"\]" &&
    ok "hash $p known answer on ocl0" || bad "hash $p on ocl0: $r"
done
big=()
for d in cpu0 ocl0 cpu0,ocl0; do
  r=$(ctl submit hash --pack closed --nonce 12345 --count 40000 \
        --target 0100000000000000 --max-winners 8 --device "$d" --json 2>&1)
  big+=("$(printf '%s' "$r" | grep -o '"job_fingerprint".*"winner_count": *[0-9]*')")
done
if [ -n "${big[0]}" ] && [ "${big[0]}" = "${big[1]}" ]; then
  ok "hash closed 40000 with a target: cpu0 and ocl0 agree"
else
  bad "hash closed 40000: cpu0 ${big[0]}, ocl0 ${big[1]}"
fi
if [ -n "${big[0]}" ] && [ "${big[0]}" = "${big[2]}" ]; then
  ok "hash closed 40000 as one job over cpu0 and ocl0: the same as cpu0 alone"
else
  bad "hash closed 40000 over cpu0,ocl0: ${big[2]}"
fi
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] && ok "SIGTERM: wavedd exited 0" || bad "SIGTERM: wavedd exited $rc"
[ $fails = 0 ] || tail -n 30 "$T/wavedd.log"
echo "integ_opencl: $fails failed checks"
exit $((fails > 0))
