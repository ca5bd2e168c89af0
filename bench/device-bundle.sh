#!/usr/bin/env bash
# bench/device-bundle.sh - make what bench/device-run.sh needs on the GPU
# machine, here on the build machine: a build with the GPU backends on
# (build-dev: CUDA for sm_80 and sm_90, Vulkan, OpenCL; HIP off), its
# programs copied into .devrun/, their libraries into .devlibs/
# (../shared/device/bundle-libs.sh), and the glvnd and Vulkan loader
# packages into .gl/ (the NVIDIA Vulkan ICD needs libGLX/libGLdispatch,
# which that machine lacks).  Keep the three folders out of git
# (.git/info/exclude) and carry them to the GPU machine, where
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
#   bench/device-run.sh .devrun
# runs every step.  Re-running only rebuilds what changed (ccache when
# installed).
#
#   bench/device-bundle.sh [BUILD_DIR]     (default build-dev)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
B=${1:-build-dev}
export PATH=$PATH:/usr/local/cuda/bin
command -v nvcc >/dev/null || { echo "device-bundle: no nvcc" >&2; exit 2; }
launch=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$root")}
  for l in C CXX CUDA; do launch+=(-DCMAKE_${l}_COMPILER_LAUNCHER=ccache); done
fi
if [ ! -f "$B/CMakeCache.txt" ]; then
  cmake -S . -B "$B" -G Ninja -DWAVE_CUDA=ON -DWAVE_VULKAN=ON -DWAVE_HIP=OFF \
    -DWAVE_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES="80;90" "${launch[@]}" >/dev/null
fi
cmake --build "$B" -j "${WAVE_JOBS:-$(nproc)}"

rm -rf .devrun
mkdir -p .devrun/tests .devrun/bench .devrun/client
cp "$B"/wavedd "$B"/wavectl .devrun/
cp "$B"/tests/conformance .devrun/tests/
for t in vkcaps test_vulkan test_opencl; do
  [ -x "$B/tests/$t" ] && cp "$B/tests/$t" .devrun/tests/
done
find "$B"/bench -maxdepth 1 -type f -name 'wvbench-*' -perm -u+x \
  -exec cp {} .devrun/bench/ \;
cp -P "$B"/client/libwaveclient.so* .devrun/client/
grep '^WAVE_VULKAN:' "$B"/CMakeCache.txt > .devrun/CMakeCache.txt

rm -rf .devlibs
../shared/device/bundle-libs.sh -o .devlibs .devrun/wavedd .devrun/wavectl \
  .devrun/tests/* .devrun/bench/* .devrun/client/libwaveclient.so.* \
  $(ldconfig -p | awk '/libOpenCL.so.1 /{print $NF; exit}')

if [ ! -d .gl ] || [ -z "$(ls .gl/*.deb 2>/dev/null)" ]; then
  mkdir -p .gl
  (cd .gl && apt-get download -q libglvnd0 libglx0 libgl1 libegl1 \
     libopengl0 libgles2 libvulkan1 >/dev/null)
fi
echo "device-bundle: .devrun ($(ls .devrun/bench | wc -l) benches)," \
  "$(ls .devlibs | wc -l) libraries, $(ls .gl | wc -l) packages"
