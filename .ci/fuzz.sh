#!/usr/bin/env bash
# .ci/fuzz.sh [SECONDS] - the bounded fuzz run of CI (fuzz/README.md).
# Builds the libFuzzer targets into build-fuzz/ (clang-14, ASan + UBSan,
# CPU only; only the three targets, so a rebuild is incremental) and runs
# wf-config, wf-pack and wf-request at the same time for SECONDS each
# (default 60, or $WAVE_FUZZ_SECONDS): about one minute of wall time on a
# 2-core machine.  Each starts from fuzz/corpus/<target>/ plus what earlier
# runs kept in build-fuzz/corpus-<target>/ (the repository's seeds are
# never written).  Exit 1 on any finding; the input that caused it is in
# build-fuzz/findings/, the log in build-fuzz/fuzz-<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-${WAVE_FUZZ_SECONDS:-60}}
jobs=${WAVE_JOBS:-$(nproc)}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWAVE_FUZZ=ON -DWAVE_TESTS=OFF \
  -DWAVE_BENCH=OFF -DWAVE_CUDA=OFF -DWAVE_HIP=OFF -DWAVE_VULKAN=OFF \
  -DWAVE_OPENCL=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target wf-config wf-pack wf-request
mkdir -p build-fuzz/findings
targets=(config pack request)
pids=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus-$t"
  opts=(-max_total_time="$secs" -max_len=8192 -timeout=30 -rss_limit_mb=2048
        -artifact_prefix="build-fuzz/findings/$t-" -print_final_stats=1)
  # the daemon's threads allocate between inputs: no per-input leak check
  [ "$t" = request ] && opts+=(-detect_leaks=0)
  "build-fuzz/fuzz/wf-$t" "${opts[@]}" "build-fuzz/corpus-$t" "fuzz/corpus/$t" \
    >"build-fuzz/fuzz-$t.log" 2>&1 &
  pids+=($!)
done
fail=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/fuzz-$t.log")
    echo "fuzz: wf-$t: ${runs:-?} inputs in ${secs} s, no finding"
  else
    echo "fuzz: wf-$t FAILED (build-fuzz/fuzz-$t.log, build-fuzz/findings/):"
    grep -E "ERROR|SUMMARY|runtime error|fuzz_" "build-fuzz/fuzz-$t.log" | head -20
    fail=1
  fi
done
exit $fail
