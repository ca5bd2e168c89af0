#!/usr/bin/env bash
# bench/device-wide.sh - issue 23 on the GPU machine: the 64-bit dtypes and
# argmin/argmax of the CUDA backend.  First the conformance suite's wide
# case on cpu0 and cuda0 (every 64-bit dtype x op and argmin/argmax of all
# six dtypes, masks, chunks, specials: bits, count and index against the
# CPU reference), then wvbench-gpu-wide: its own bits checks (2^27/2^28
# device-resident rows and 2^25-row chunked, masked jobs through the
# backend) and the times against CUB of the same run (u64 and f64 sum at
# 2^27, f32 argmax at 2^28; u64 min, s64 max, f64 extent, f64 argmin for
# information).  Prints a short summary and the bench's table.
#
#   bench/device-wide.sh BUILD_DIR [OUT_DIR]        (OUT_DIR default .)
#
# WAVE_WIDE_REPS: timed calls per measurement (default 30).  Exit status 0
# when the conformance case found no mismatch and every bench check
# passed (a missed speed target is reported, not an error).
set -uo pipefail
B=${1:?build folder}
OUT=${2:-.}
mkdir -p "$OUT"
rc=0
if [ -x "$B/tests/conformance" ]; then
  WAVE_CONFORMANCE_BACKENDS=cpu,cuda WAVE_REQUIRE_BACKENDS=cuda \
    CK_RUN_CASE=wide CK_DEFAULT_TIMEOUT=3600 \
    timeout 900 "$B/tests/conformance" >"$OUT/wide-conformance.log" 2>&1 || rc=1
  echo "conformance (wide case):"
  grep -E '^conformance: .*(wide|cannot open|REQUIRED)|[0-9]+%: Checks' \
    "$OUT/wide-conformance.log" | sed 's/^/  /'
else
  echo "conformance: $B/tests/conformance not built"
fi
if [ ! -x "$B/bench/wvbench-gpu-wide" ]; then
  echo "wvbench-gpu-wide: not built (CUDA off?)"
  exit 2
fi
timeout 600 "$B/bench/wvbench-gpu-wide" "${WAVE_WIDE_REPS:-30}" \
  >"$OUT/wide-bench.log" 2>&1 || rc=1
log=$OUT/wide-bench.log
ok=$(grep -c '^bits .*equal to the CPU reference' "$log")
bad=$(grep -c '^bits .*DIFFER' "$log")
echo "wvbench-gpu-wide: $(grep -m1 '^device:' "$log")"
echo "  bits checks: $ok equal, $bad different"
grep -A3 'DIFFER' "$log" | sed 's/^/  /'
grep -E '^\|' "$log"
tail -n 1 "$log"
exit $rc
