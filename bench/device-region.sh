#!/usr/bin/env bash
# bench/device-region.sh - issue 10 on the GPU machine: a 2^28-row (1 GiB)
# shared-memory region reduced by wavedd's CUDA device and by its Vulkan
# device, against a pinned host->device copy measured in the same run
# (wvbench-gpu-region: both ways to meet a region, and a bits check against
# cpu0); the CUDA run again with the region of 2 MiB huge pages when
# WAVE_REGION_HUGE_POOL pages can be reserved (default 1400, put back
# after); wvbench-vkhost (Vulkan import vs copy, when built); and a 1 GiB
# file reduced by wavectl through a region against `cat FILE`.  After
# each wvbench-gpu-region run, "where the time went": how many of its jobs
# went through the reader pool, and the daemon's debug line for the first
# of them (the first use of "fill, then register"): how long the device
# waited for the readers, and how long it copied and reduced.
# bench/device-run.sh calls it as its "region" step; alone:
#
#   bench/device-region.sh BUILD_DIR OUT_DIR
#
# Exit status 0 when the daemon served, the bench's repeats gave the first
# run's bits, and SIGTERM stopped the daemon with status 0.
set -uo pipefail
B=${1:?build folder}
OUT=${2:?output folder}
mkdir -p "$OUT"
sockdir=$(mktemp -d /tmp/wavedd-region.XXXXXX)  # private: wavedd refuses world-writable /tmp
trap 'rm -rf "$sockdir"' EXIT
sock=$sockdir/w.sock
url=ipc://$sock
cfg=$OUT/region.yaml
cat >"$cfg" <<CFG
listen:
  - $url
log_level: debug
allow_client_shm: true
limits:
  max_job_rows: 268435456
packs:
  load: []
devices:
  - name: cuda0
    backend: cuda
    index: 0
  - name: cpu0
    backend: cpu
  - name: vk0
    backend: vulkan
    index: 0
CFG
"$B/wavedd" --config "$cfg" --foreground 2>"$OUT/wavedd-region.log" &
pid=$!
for _ in $(seq 1 600); do
  "$B/wavectl" --url "$url" status >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
fails=0
log=$OUT/wavedd-region.log
# the reader-pool lines the daemon logged since line $1 of its log: their
# count, and the first
went() {
  local lines
  lines=$(tail -n +"$(($1 + 1))" "$log" | grep "rows through the readers")
  echo "where the time went: $(printf '%s' "$lines" | grep -c .) jobs through the readers; the first:"
  printf '%s\n' "$lines" | head -n 1 | sed 's/^.*reduction of/  reduction of/'
}
echo "== cuda0, ordinary pages"
at=$(wc -l <"$log")
"$B/bench/wvbench-gpu-region" "$url" cuda0 28 || fails=$((fails + 1))
went "$at"
echo "== vk0, ordinary pages"
at=$(wc -l <"$log")
"$B/bench/wvbench-gpu-region" "$url" vk0 28 || fails=$((fails + 1))
went "$at"
pool=/proc/sys/vm/nr_hugepages
had=$(cat $pool 2>/dev/null || echo -1)
if [ "$had" != -1 ] && echo $((had + ${WAVE_REGION_HUGE_POOL:-1400})) >$pool 2>/dev/null; then
  echo "== cuda0, 2 MiB huge pages ($(cat $pool) reserved)"
  at=$(wc -l <"$log")
  "$B/bench/wvbench-gpu-region" "$url" cuda0 28 || fails=$((fails + 1))
  went "$at"
  echo "$had" >$pool
else
  echo "== huge pages: cannot reserve any here"
fi
if [ -x "$B/bench/wvbench-vkhost" ]; then
  echo "== wvbench-vkhost (Vulkan import vs copy)"
  # a driver that cannot import is a figure, not a failure: the daemon
  # stages for it (checked by the vk0 bits above)
  "$B/bench/wvbench-vkhost" --mib 1024 --reps 5 || echo "   (no import here)"

fi
# wavectl through a region (the CUDA device) vs cat of the same file
f=$OUT/region-1g.raw
head -c $((1 << 30)) /dev/urandom >"$f"
cat "$f" >/dev/null
for i in 1 2 3; do
  t0=$(date +%s.%N); cat "$f" >/dev/null; t1=$(date +%s.%N)
  "$B/wavectl" --url "$url" --timeout 120000 submit reduce --dtype u32 \
    --op sum --device cuda0 --input "$f" >/dev/null || fails=$((fails + 1))
  t2=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "| wavectl 1 GiB (cuda0) | cat %.3f s | wavectl %.3f s | %.2fx cat |\n", b - a, c - b, (c - b) / (b - a) }'
done
rm -f "$f"
kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] || { echo "FAIL wavedd exit $rc"; fails=$((fails + 1)); }
tail -n 5 "$OUT/wavedd-region.log"
if [ $fails = 0 ]; then echo "ok   region bench"; else echo "FAIL region bench ($fails)"; fi
exit $((fails > 0))
