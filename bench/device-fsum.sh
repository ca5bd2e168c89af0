#!/usr/bin/env bash
# bench/device-fsum.sh - issue 39's comparison of two CUDA fsum kernels on
# the GPU machine, in one run: `wvbench-gpu-reduce fsum` of build A and of
# build B, alternately, RUNS times each (every case checks its bits against
# the CPU reference, with and without a mask), then the conformance suite's
# fsum case of B (cpu against cuda).  Prints, last, CUB / fsum per case and
# build (above 1: fsum is faster), as min-max over the runs; for the small
# jobs (2^10..2^14 rows) fsum / plain sum latency instead.
#
#   bench/device-fsum.sh A_DIR B_DIR OUT [RUNS] [REPS]   (default 2, 9)
#
# A_DIR and B_DIR each hold wvbench-gpu-reduce; B_DIR may hold
# tests/conformance and libs/ (bundle-libs.sh of it).  Whole logs go to
# OUT/fsum-{A,B}-K.log and OUT/conformance.log.
set -uo pipefail
A=$(cd "${1:?build A}" && pwd)
B=$(cd "${2:?build B}" && pwd)
OUT=${3:?output folder}
RUNS=${4:-2}
REPS=${5:-9}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
fails=0
for k in $(seq 1 "$RUNS"); do
  for side in A B; do
    dir=$A
    [ "$side" = B ] && dir=$B
    "$dir/wvbench-gpu-reduce" fsum "$REPS" >"$OUT/fsum-$side-$k.log" 2>&1 ||
      { echo "fsum $side run $k: rc $?"; fails=$((fails + 1)); }
    if grep -q 'BITS DIFFER' "$OUT/fsum-$side-$k.log"; then
      echo "fsum $side run $k: bits differ"
      fails=$((fails + 1))
    fi
  done
done
if [ -x "$B/tests/conformance" ]; then
  LD_LIBRARY_PATH=$B/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    WAVE_CONFORMANCE_BACKENDS=cpu,cuda WAVE_REQUIRE_BACKENDS=cpu,cuda \
    WAVE_CONFORMANCE_MAX_LOG2=${WAVE_CONFORMANCE_MAX_LOG2:-24} \
    CK_RUN_CASE=fsum CK_DEFAULT_TIMEOUT=600 \
    "$B/tests/conformance" >"$OUT/conformance.log" 2>&1 ||
    fails=$((fails + 1))
  grep -E '^conformance:|Checks:' "$OUT/conformance.log" | tail -n 4
fi
echo
echo "CUB / fsum (A: $A, B: $B; $RUNS runs each, alternately)"
awk '/^fsum f(32|64) 2\^[0-9]+ / {
       side = FILENAME; sub(/.*fsum-/, "", side); sub(/-.*/, "", side)
       key = $2 " " $3 " " $4
       r = $4 == "small" ? $12 : $11     # small jobs: fsum / plain latency
       gsub(/[()x]/, "", r); r += 0
       k = key SUBSEP side
       if (!(k in lo) || r < lo[k]) lo[k] = r
       if (!(k in hi) || r > hi[k]) hi[k] = r
       if (!(key in seen)) { seen[key] = 1; order[++n] = key }
     }
     END {
       printf "| case | A | B |\n|---|---|---|\n"
       for (i = 1; i <= n; i++) {
         key = order[i]
         printf "| %s | %.3f-%.3f | %.3f-%.3f |\n", key,
           lo[key SUBSEP "A"], hi[key SUBSEP "A"],
           lo[key SUBSEP "B"], hi[key SUBSEP "B"]
       }
     }' "$OUT"/fsum-*.log
echo "failures: $fails"
exit $((fails != 0))
