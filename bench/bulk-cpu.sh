#!/usr/bin/env bash
# bench/bulk-cpu.sh - issue 10's figures on the build machine, each against
# its baseline in the same run:
#   - wavectl submit reduce (u32 sum, CPU device, ipc: the file read into a
#     shared-memory region) of a 256 MiB and a 1 GiB file vs `cat FILE
#     >/dev/null`, interleaved, 3 pairs each (page cache warm);
#   - a 1 GiB wave_reduce over tcp://127.0.0.1 with the default limits (a
#     stream) vs a raw nng transfer of the same bytes (wvbench-bulk).
#
#   bench/bulk-cpu.sh [BUILD_DIR]   (default: build)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$root/build}
tmp=$(mktemp -d /tmp/wave-bulk.XXXXXX)
port=$((20000 + $$ % 20000))
cat >"$tmp/d.yaml" <<CFG
listen: ["ipc://$tmp/w.sock", "tcp://127.0.0.1:$port"]
auth: none
allow_client_shm: true
packs:
  load: []
devices:
  - {name: cpu0, backend: cpu}
CFG
"$B/wavedd" --config "$tmp/d.yaml" --foreground 2>"$tmp/wavedd.log" &
pid=$!
for _ in $(seq 1 100); do
  "$B/wavectl" --url "ipc://$tmp/w.sock" status >/dev/null 2>&1 && break
  sleep 0.1
done
now() { date +%s.%N; }
for mib in 256 1024; do
  f=$tmp/in-$mib.raw
  head -c $((mib << 20)) /dev/urandom >"$f"
  cat "$f" >/dev/null
  for i in 1 2 3; do
    t0=$(now); cat "$f" >/dev/null; t1=$(now)
    "$B/wavectl" --url "ipc://$tmp/w.sock" submit reduce --dtype u32 \
      --op sum --input "$f" >/dev/null || echo "FAIL wavectl"
    t2=$(now)
    awk -v m="$mib" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
      printf "| %d MiB | cat %.3f s | wavectl %.3f s | %.2fx cat |\n",
             m, b - a, c - b, (c - b) / (b - a) }'
  done
  rm -f "$f"
done
"$B/bench/wvbench-bulk" "tcp://127.0.0.1:$port" 28
kill -TERM $pid
wait $pid
echo "wavedd exit $?"
rm -rf "$tmp"
