#!/usr/bin/env bash
# bench/device-fair.sh - issue 35's many-chunk bound on a host with free
# cores (the GPU machine's 16): `bench_fair --chunks 4194304 --dtype f64`,
# the big request sent from a process of its own and from a thread of the
# bench, alternately, RUNS times each, so that a stall in the bench's own
# nng (the thread way shares it with the light client) shows apart from
# one in the daemon.
#
#   bench/device-fair.sh DIR OUT [RUNS]     (default 5)
#
# DIR holds wavedd, bench_fair, libwaveclient.so.4 and libs/ (bundle-libs.sh
# of the three).  Each run's whole output goes to OUT/fair-SENDER-K.log; a
# table of the loaded latency over (2 x idle + one slice), quantile for
# quantile, and the slowest wait is printed last, then where each run's
# slowest waits went (bench/fair-where.py: the daemon's slow request log,
# limits.slow_request_ms 3, against the bench's send times).
set -uo pipefail
D=$(cd "${1:?folder}" && pwd)
OUT=${2:?output folder}
RUNS=${3:-5}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D:$D/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export WAVE_BINARY_DIR=$D
# the daemon as its unit and image start it (docs/service.md, "Memory");
# WAVE_DAEMON_GLIBC_TUNABLES= (empty) runs it without huge pages
export WAVE_DAEMON_GLIBC_TUNABLES=${WAVE_DAEMON_GLIBC_TUNABLES-glibc.malloc.hugetlb=1}
echo "host: $(nproc) cores, $(uname -r), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), daemon GLIBC_TUNABLES '$WAVE_DAEMON_GLIBC_TUNABLES'"
rows=()
for k in $(seq 1 "$RUNS"); do
  for s in process thread; do
    log=$OUT/fair-$s-$k.log
    "$D/bench_fair" --chunks 4194304 --dtype f64 --iters 13000 --sender "$s" \
      --slow-log 3 >"$log" 2>&1
    rc=$?
    q=$(grep -o 'quantile for quantile:.*' "$log" | sed 's/quantile for quantile: *//')
    slow=$(grep -o '^slowest 1: [0-9.]* us' "$log" | grep -o '[0-9.]* us')
    at=$(grep -o '^slowest 1: .*sent at +[0-9.]* s' "$log" | grep -o '+[0-9.]* s$')
    rows+=("$(printf '%-7s %2d  rc %d  %-62s  slowest %s at %s' "$s" "$k" "$rc" \
      "${q:-?}" "${slow:-?}" "${at:-?}")")
  done
done
echo
echo "loaded / (2 x idle + one slice), by sender (bench_fair --chunks 4194304 --dtype f64 --iters 13000)"
printf '%s\n' "${rows[@]}"
echo
echo "where the slowest waits went (fair-where.py)"
for k in $(seq 1 "$RUNS"); do
  for s in process thread; do
    echo "$s $k:"
    python3 "$(dirname "$0")/fair-where.py" "$OUT/fair-$s-$k.log" 3
  done
done
