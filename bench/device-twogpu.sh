#!/usr/bin/env bash
# bench/device-twogpu.sh - issue 21 item 4 on the GPU machine: two CUDA
# devices of one daemon.  On a host with two GPUs they are GPU 0 and GPU 1;
# on a host with one (nvidia-smi -L lists one) both are GPU 0, and the
# table says so: then the hash figure shows the daemon's split and merge
# over two device threads, not two GPUs' rate.
#
#   bench/device-twogpu.sh BUILD_DIR OUT_DIR
#
# Runs, in one daemon:
#   - `wavectl submit hash --pack main` over 2^30 nonces
#     (WAVE_TWOGPU_COUNT) on cuda0, then `--device cuda0,cuda1`: the rates
#     by the wall clock around wavectl, their ratio, and whether the bits
#     (job fingerprint, winners, best) are the same;
#   - wvbench-gpu-region on cuda0 alone, then again while another
#     wvbench-gpu-region runs on cuda1 at the same time (its "fill, then
#     register" pins on cuda1 while cuda0 reduces): cuda0's ratios to the
#     pinned copy in both, which says whether one device's pinning stalls
#     the other's jobs.
# Exit status 0 when every job gave the same bits and the daemon stopped
# with status 0.
set -uo pipefail
B=${1:?build folder}
OUT=${2:?output folder}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
second=1
if [ "${gpus:-0}" -lt 2 ]; then
  second=0
  echo "== one GPU here ($gpus listed): cuda0 and cuda1 are both GPU 0"
else
  echo "== $gpus GPUs: cuda0 is GPU 0, cuda1 is GPU 1"
fi
sockdir=$(mktemp -d /tmp/wavedd-two.XXXXXX)
trap 'rm -rf "$sockdir"' EXIT
url=ipc://$sockdir/w.sock
cfg=$OUT/twogpu.yaml
cat >"$cfg" <<CFG
listen:
  - $url
log_level: info
allow_client_shm: true
limits:
  max_job_rows: 268435456
packs:
  dir: $root/config/packs
devices:
  - name: cuda0
    backend: cuda
    index: 0
  - name: cuda1
    backend: cuda
    index: $second
  - name: cpu0
    backend: cpu
CFG
"$B/wavedd" --config "$cfg" --foreground 2>"$OUT/wavedd-two.log" &
pid=$!
ctl() { timeout 300 "$B/wavectl" --url "$url" --timeout 240000 "$@"; }
for _ in $(seq 1 1800); do  # start-up preparation and self-checks
  ctl status --json 2>/dev/null | grep -q '"ready": true' && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
if ! kill -0 $pid 2>/dev/null; then
  echo "FAIL wavedd did not start:"; tail -n 20 "$OUT/wavedd-two.log"; exit 1
fi
fails=0
n=${WAVE_TWOGPU_COUNT:-1073741824}
declare -A rate fp
for set in cuda0 cuda0,cuda1; do
  ctl submit hash --pack main --nonce 0 --count 67108864 --device "$set" \
      --json >/dev/null 2>&1  # warm-up
  t0=$(date +%s.%N)
  r=$(ctl submit hash --pack main --nonce 0x300000000 --count "$n" \
        --target 0000010000000000 --max-winners 8 --device "$set" --json \
        2>"$OUT/hash-$set.err")
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\n' "$r" >"$OUT/hash-$set.json"
  if [ $rc != 0 ]; then
    echo "FAIL hash on $set: rc $rc: $(tail -n 3 "$OUT/hash-$set.err")"
    fails=$((fails + 1))
  fi
  rate[$set]=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) / 1e6 }')
  fp[$set]=$(printf '%s' "$r" | grep -o '"job_fingerprint".*"winner_count": *[0-9]*')
done
same=no
[ -n "${fp[cuda0]}" ] && [ "${fp[cuda0]}" = "${fp[cuda0,cuda1]}" ] && same=yes
[ $same = yes ] || { echo "FAIL hash: cuda0,cuda1 and cuda0 differ"; fails=$((fails + 1)); }

echo "== wvbench-gpu-region on cuda0 alone"
"$B/bench/wvbench-gpu-region" "$url" cuda0 28 >"$OUT/region-alone.log" 2>&1 ||
  fails=$((fails + 1))
echo "== wvbench-gpu-region on cuda0 while cuda1 runs the same"
"$B/bench/wvbench-gpu-region" "$url" cuda1 28 >"$OUT/region-other.log" 2>&1 &
other=$!
"$B/bench/wvbench-gpu-region" "$url" cuda0 28 >"$OUT/region-busy.log" 2>&1 ||
  fails=$((fails + 1))
wait $other || fails=$((fails + 1))
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] || { echo "FAIL wavedd exit $rc"; fails=$((fails + 1)); }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "?" }'; }
echo
echo "| hash main 2^$(awk -v n="$n" 'BEGIN { printf "%d", log(n) / log(2) + 0.5 }') | M hashes/s | vs cuda0 | same bits |"
echo "|---|---|---|---|"
echo "| cuda0 | ${rate[cuda0]} | 1.000 | - |"
echo "| cuda0,cuda1 ($([ $second = 1 ] && echo "two GPUs" || echo "both GPU 0")) | ${rate[cuda0,cuda1]} | $(ratio "${rate[cuda0,cuda1]}" "${rate[cuda0]}") | $same |"
echo
echo "cuda0's region ratios to the pinned copy (lines of wvbench-gpu-region):"
for k in alone busy; do
  echo "-- $k"
  grep -E '^\|' "$OUT/region-$k.log" | head -n 12
done
if [ $fails = 0 ]; then echo "ok   twogpu bench"; else echo "FAIL twogpu bench ($fails)"; fi
exit $((fails > 0))
