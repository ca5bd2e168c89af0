#!/usr/bin/env bash
# bench/device-vkprobe.sh - where a vk0 region job's time goes (issue 21):
# wvbench-gpu-region on vk0 in a daemon with vk0 alone and in one with
# cuda0 beside it, and a file job on vk0 for comparison, each daemon at
# log_level debug with WAVE_VK_TRACE=1 (one line per Vulkan reduce call:
# rows bound in place, rows staged, time).  Prints the bench tables and a
# summary of the trace and reader lines.
#
#   bench/device-vkprobe.sh BUILD_DIR OUT_DIR [LOG2_ROWS]
set -uo pipefail
B=${1:?build folder}
OUT=${2:?output folder}
L=${3:-26}
mkdir -p "$OUT"
dir=$(mktemp -d /tmp/wavedd-vkprobe.XXXXXX)
trap 'rm -rf "$dir"' EXIT
url=ipc://$dir/w.sock
fails=0
run_daemon() {  # name devices-yaml
  local name=$1 devs=$2
  cat >"$OUT/probe-$name.yaml" <<CFG
listen:
  - $url
log_level: debug
allow_client_shm: true
limits:
  max_job_rows: 268435456
packs:
  load: []
devices:
$devs
CFG
  WAVE_VK_TRACE=1 "$B/wavedd" --config "$OUT/probe-$name.yaml" --foreground \
    2>"$OUT/probe-$name.log" &
  pid=$!
  for _ in $(seq 1 600); do
    "$B/wavectl" --url "$url" status >/dev/null 2>&1 && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
}
stop_daemon() {
  kill -TERM $pid; wait $pid || { echo "FAIL wavedd exit"; fails=$((fails + 1)); }
}
summ() {  # log
  echo "-- pins and rings:"
  grep -E "ring buffer|staging ring|cannot pin|pinned on" "$1" | sed 's/^[^ ]* //' | sort | uniq -c | head -n 10
  echo "-- readers lines (device waited / reduced):"
  grep "through the readers (" "$1" | sed 's/.*rows through/through/' | head -n 40
  echo "-- vulkan trace, grouped (rows, masked, pieces, in place, staged: count, median ms):"
  grep "vulkan trace:" "$1" | sed 's/.*vulkan trace: //' |
    awk '{ key = $0; sub(/, [0-9.]+ ms.*/, "", key); ms = $0; sub(/.* staged, /, "", ms); sub(/ ms.*/, "", ms);
           n[key]++; s[key] = s[key] " " ms }
         END { for (k in n) print n[k] "x | " k " | ms:" substr(s[k], 1, 120) }' | sort -rn | head -n 30
}
cpu='  - name: cpu0
    backend: cpu'
vk='  - name: vk0
    backend: vulkan
    index: 0'
cuda='  - name: cuda0
    backend: cuda
    index: 0'
f=$dir/probe.raw
m=$dir/probe.mask
head -c $((4 << L)) /dev/urandom >"$f"; cat "$f" >/dev/null
head -c $((4 << L)) /dev/urandom >"$m"; cat "$m" >/dev/null
files() {  # when
  for i in 1 2 3; do
    for mk in "" "--mask $m"; do
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086
      a=$("$B/wavectl" --url "$url" --timeout 120000 submit reduce --dtype u32 \
        --op max --device vk0 --input "$f" $mk | grep -v '^device:') ||
        fails=$((fails + 1))
      t1=$(date +%s.%N)
      # shellcheck disable=SC2086
      c=$("$B/wavectl" --url "$url" --timeout 120000 submit reduce --dtype u32 \
        --op max --device cpu0 --input "$f" $mk | grep -v '^device:') ||
        fails=$((fails + 1))
      [ "$a" = "$c" ] || { echo "FAIL vk0 and cpu0 differ: $a / $c"; fails=$((fails + 1)); }
      awk -v a="$t0" -v b="$t1" -v w="$1" -v k="${mk:+masked }" \
        'BEGIN { printf "%sfile job on vk0 (%s): %.1f ms\n", k, w, (b - a) * 1e3 }'
    done
  done
}
echo "== vk0 alone (with cpu0): a file, wvbench-gpu-region vk0 $L, the file again"
run_daemon vkonly "$cpu
$vk"
files "before any region"
"$B/bench/wvbench-gpu-region" "$url" vk0 "$L" || fails=$((fails + 1))
files "after the regions"
stop_daemon
summ "$OUT/probe-vkonly.log"
echo "== vk0 beside cuda0, wvbench-gpu-region vk0 $L"
run_daemon both "$cuda
$cpu
$vk"
"$B/bench/wvbench-gpu-region" "$url" vk0 "$L" || fails=$((fails + 1))
stop_daemon
summ "$OUT/probe-both.log"
rm -f "$f"
if [ $fails = 0 ]; then echo "ok   vkprobe"; else echo "FAIL vkprobe ($fails)"; fi
exit $((fails > 0))
