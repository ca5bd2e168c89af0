#!/usr/bin/env bash
# bench/fleet-bench.sh - a fleet of three local daemons against the sum of
# their single-daemon rates, in one run (docs/fleet.md, issue 13's target:
# the fleet at >= 0.9x the sum).
#
#   bench/fleet-bench.sh BUILD_DIR [OUT_DIR]
#
# Three wavedd, each with one CPU device of T threads, each pinned with
# taskset to its own T cores (T = WAVE_BENCH_THREADS, default (cores - 3) / 3:
# three cores stay free for the daemons' loop and decode threads and the
# coordinator; with all cores hashing the host itself is the limit, see
# docs/fleet.md), listen on 127.0.0.1.  The
# same job (WAVE_BENCH_PACK, default small; WAVE_BENCH_COUNT nonces,
# default 2^26, from nonce 0) runs first on each daemon alone, then over
# the three as a fleet (wavectl --fleet).  Rates are end to end: nonces
# over the wall time of the wavectl call.  Prints each single rate, their
# sum, the fleet rate and the ratio, daemon 0 as a "fleet of one" against
# itself (the coordinator's own cost), the fleet with the old fixed cut
# (pieces of count/48) beside the default guided cut, and the three single
# jobs run at the same time (what the three daemons give together on this
# host: they share caches, memory and clock boosts); checks that every
# job fingerprint, winners and best agree.  Needs at least
# 3 cores to mean anything (with fewer, the daemons share cores and the
# ratio can only show the sharing); exit 0 when the bits agree.
set -uo pipefail
B=$(cd "${1:?build folder}" && pwd)
OUT=${2:-$(mktemp -d /tmp/fleet-bench.XXXXXX)}
mkdir -p "$OUT"
root=$(cd "$(dirname "$0")/.." && pwd)
export WAVE_PACKS_DIR=$root/config/packs  # the fleet re-hashes winners
pack=${WAVE_BENCH_PACK:-small}
count=${WAVE_BENCH_COUNT:-67108864}
# arithmetic in awk (bc is not on every machine, the GPU host lacks it)
calc() { awk "BEGIN { printf \"%.9g\", $1 }"; }
target=${WAVE_BENCH_TARGET:-0000100000000000}
cores=$(nproc)
T=${WAVE_BENCH_THREADS:-$(( (cores - 3) / 3 ))}; [ $T -ge 1 ] || T=1
base=${WAVE_BENCH_PORT:-$((30000 + $$ % 20000))}
pids=()
stop() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap stop EXIT
now() { date +%s.%N; }

urls=()
for i in 0 1 2; do
  port=$((base + i))
  cat > "$OUT/d$i.yaml" <<Y
listen: ["tcp://127.0.0.1:$port"]
auth: none                      # loopback only
log_level: warn
packs: {dir: $root/config/packs, load: [$pack]}
devices: [{name: cpu0, backend: cpu, threads: $T}]
Y
  lo=$(( (i * T) % cores )); hi=$(( lo + T - 1 )); [ $hi -lt $cores ] || hi=$((cores - 1))
  taskset -c "$lo-$hi" "$B/wavedd" --config "$OUT/d$i.yaml" --foreground 2> "$OUT/d$i.log" &
  pids+=($!)
  urls+=("tcp://127.0.0.1:$port")
done
fleet=$(IFS=,; echo "${urls[*]}")
for t in $(seq 1 300); do "$B/wavectl" --timeout 1000 status --probe --fleet "$fleet" && break; sleep 0.2; done
echo "fleet-bench: $cores cores, 3 daemons x $T threads (pinned), pack $pack, $count nonces"
[ "$cores" -ge 3 ] || echo "fleet-bench: WARNING: fewer than 3 cores: the daemons share cores"

key() { for k in job_fingerprint winner_count; do grep -o "\"$k\": [^,}]*" "$1" | head -1; done
        grep -o '"best": {[^}]*}' "$1" | head -1; grep -o '"winners": \[[^]]*\]' "$1" | head -1; }
sum=0
for i in 0 1 2; do
  t0=$(now)
  "$B/wavectl" --url "${urls[$i]}" submit hash --pack "$pack" --nonce 0 --count "$count" \
    --target "$target" --json > "$OUT/single$i.json" || { echo "FAIL: single daemon $i"; exit 1; }
  t1=$(now)
  r=$(calc "$count / ($t1 - $t0)")
  sum=$(calc "$sum + $r")
  [ "$i" -eq 0 ] && single0=$r
  printf 'single %d: %.4g hashes/s (%.3f s)\n' "$i" "$r" "$(calc "$t1 - $t0")"
done
# the coordinator's own cost: daemon 0 as a fleet of one, against itself
t0=$(now)
"$B/wavectl" submit hash --fleet "${urls[0]}" --pack "$pack" --nonce 0 --count "$count" \
  --target "$target" --json > "$OUT/fleet1.json" || { echo "FAIL: fleet of one"; exit 1; }
t1=$(now)
r1=$(calc "$count / ($t1 - $t0)")
printf 'fleet of one (daemon 0): %.4g hashes/s\n' "$r1"
# the old default cut for comparison: fixed pieces of count / (16 x 3)
t0=$(now)
"$B/wavectl" submit hash --fleet "$fleet" --pack "$pack" --nonce 0 --count "$count" \
  --target "$target" --piece $((count / 48)) --json > "$OUT/fleet-fixed.json" \
  || { echo "FAIL: fleet job (fixed pieces)"; exit 1; }
t1=$(now)
frx=$(calc "$count / ($t1 - $t0)")
# the fleet as it runs by default (guided pieces)
t0=$(now)
"$B/wavectl" submit hash --fleet "$fleet" --pack "$pack" --nonce 0 --count "$count" \
  --target "$target" --json > "$OUT/fleet.json" || { echo "FAIL: fleet job"; exit 1; }
t1=$(now)
fr=$(calc "$count / ($t1 - $t0)")
# the three singles at once, each on its own daemon: what the three can
# give together on this host (shared caches, memory, clocks)
for i in 0 1 2; do
  ( t0=$(now)
    "$B/wavectl" --url "${urls[$i]}" submit hash --pack "$pack" --nonce 0 \
      --count "$count" --target "$target" --json > "$OUT/conc$i.json"
    t1=$(now); calc "$count / ($t1 - $t0)" > "$OUT/conc$i.rate" ) &
  cpids+=($!)
done
wait "${cpids[@]}"
csum=0
for i in 0 1 2; do
  r=$(cat "$OUT/conc$i.rate"); csum=$(calc "$csum + $r")
  printf 'single %d, the three at once: %.4g hashes/s\n' "$i" "$r"
done
printf 'sum of singles: %.4g hashes/s\nsum of singles run at once: %.4g hashes/s\n' "$sum" "$csum"
printf 'fleet, fixed pieces of count/48: %.4g hashes/s (ratio to the sum %.3f)\n' "$frx" "$(calc "$frx / $sum")"
printf 'fleet: %.4g hashes/s (%.3f s)\nratio fleet / sum: %.3f\nratio fleet / sum run at once: %.3f\nratio fleet of one / single 0: %.3f\n' \
  "$fr" "$(calc "$count / $fr")" "$(calc "$fr / $sum")" "$(calc "$fr / $csum")" \
  "$(calc "$r1 / $single0")"
grep -o '"daemons": \[.*\]' "$OUT/fleet.json" | head -1
grep -o '"pieces": [0-9]*' "$OUT/fleet.json" | head -1
ok=0
for i in 0 1 2; do
  [ "$(key "$OUT/conc$i.json")" = "$(key "$OUT/fleet.json")" ] || { echo "FAIL: single daemon $i (at once) differs"; ok=1; }
done
[ "$(key "$OUT/fleet-fixed.json")" = "$(key "$OUT/fleet.json")" ] || { echo "FAIL: the fixed-piece fleet differs"; ok=1; }
for i in 0 1 2; do
  [ "$(key "$OUT/single$i.json")" = "$(key "$OUT/fleet.json")" ] || { echo "FAIL: fleet bits differ from single daemon $i"; ok=1; }
done
[ "$(key "$OUT/fleet1.json")" = "$(key "$OUT/fleet.json")" ] || { echo "FAIL: the fleet of one differs"; ok=1; }
[ $ok -eq 0 ] && echo "ok: the fleet's job fingerprint, winners and best equal each single daemon's"
exit $ok
