#!/usr/bin/env bash
# .ci/build.sh [normal|asan] - configure and build into build/ or build-asan/.
# The normal build turns on every backend whose compiler is present here,
# decided again at every run: CUDA when nvcc exists, HIP when hipcc exists,
# OpenCL when its headers and loader do (cmake/options.cmake, AUTO),
# Vulkan always (glslc is a dependency).  The sanitizer build is CPU + Vulkan: ASan/UBSan instrument
# host C code, and the GPU toolchains add compile time without adding
# host code worth checking twice.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-normal}
jobs=${WAVE_JOBS:-$(nproc)}
export PATH=$PATH:/usr/local/cuda/bin
args=(-G Ninja -DWAVE_VULKAN=ON)
case "$kind" in
  normal)
    dir=build
    # WAVE_CUDA / WAVE_HIP in the environment: auto (default), ON or OFF.
    # auto: decided at every run, ON or OFF, never left to the cache of an
    # earlier configure (the options follow what is installed now)
    case "${WAVE_CUDA:-auto}" in
      auto) if command -v nvcc >/dev/null; then args+=(-DWAVE_CUDA=ON)
            else args+=(-DWAVE_CUDA=OFF); fi ;;
      *) args+=(-DWAVE_CUDA="$WAVE_CUDA") ;;
    esac
    case "${WAVE_HIP:-auto}" in
      auto) if command -v hipcc >/dev/null; then args+=(-DWAVE_HIP=ON)
            else args+=(-DWAVE_HIP=OFF); fi ;;
      *) args+=(-DWAVE_HIP="$WAVE_HIP") ;;
    esac
    # WAVE_TESTS: auto (default) builds the Check suites when Check is
    # installed (.ci/deps.sh; `deps.sh build`, as the demo runs, has none)
    case "${WAVE_TESTS:-auto}" in
      auto) if pkg-config --exists check; then args+=(-DWAVE_TESTS=ON)
            else args+=(-DWAVE_TESTS=OFF); fi ;;
      *) args+=(-DWAVE_TESTS="$WAVE_TESTS") ;;
    esac
    ;;
  asan)
    dir=build-asan
    args+=(-DWAVE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DWAVE_BENCH=OFF)
    ;;
  *) echo "usage: $0 [normal|asan]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" -j "$jobs"
