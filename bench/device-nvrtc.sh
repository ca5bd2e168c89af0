#!/usr/bin/env bash
# bench/device-nvrtc.sh - issue 9 item 5 on the GPU machine, in one call:
# the hash conformance of the cuda backend with the per-pack NVRTC kernels
# (WAVE_CUDA_NVRTC=1, the default since), then wvbench-gpu-hash (interpreter and NVRTC
# kernels side by side, both exchange paths, the random-load roofline, all
# in the same run).  Builds nothing.  Layout next to this script (a stage
# folder made on the build machine):
#   bin/conformance bin/wvbench-gpu-hash   from a -DWAVE_CUDA=ON build
#   config/packs/                          the packs
#   libs/                                  bundle-libs.sh of the two programs
#   nv/libnvrtc*.gz                        libnvrtc, used only when the
#                                          machine's toolkit has none
# Logs go to $OUT (default ./logs); the short table comes last.
set -u
cd "$(dirname "$0")" || exit 2
root=$PWD
OUT=${OUT:-$root/logs}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$root/libs
NV=
for d in /usr/local/cuda/lib64 /usr/local/cuda-13.0/lib64 \
         /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libnvrtc.so.13" ] && { NV=$d; break; }
done
if [ -z "$NV" ] && [ -e nv/libnvrtc.so.13.gz ]; then
  NV=/tmp/wv-nvrtc
  mkdir -p $NV
  gunzip -c nv/libnvrtc.so.13.gz >$NV/libnvrtc.so.13
  gunzip -c nv/libnvrtc-builtins.so.13.0.gz >$NV/libnvrtc-builtins.so.13.0
  ln -sf libnvrtc-builtins.so.13.0 $NV/libnvrtc-builtins.so.13
fi
[ -n "$NV" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$NV
export WAVE_SOURCE_DIR=$root CK_DEFAULT_TIMEOUT=3600
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader \
  2>&1 | sed 's/^/gpu: /' | tee "$OUT/summary.log"
echo "libnvrtc from: ${NV:-none}" | tee -a "$OUT/summary.log"

T0=$SECONDS
# step NAME LIMIT_S ENV... -- CMD...
step() {
  local name=$1 lim=$2 t=$SECONDS
  shift 2
  timeout -k 5 "$lim" env "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t)) s" | tee -a "$OUT/summary.log"
}
step conformance 60 WAVE_CUDA_NVRTC=1 WAVE_CONFORMANCE_BACKENDS=cuda \
  WAVE_REQUIRE_BACKENDS=cuda WAVE_CONFORMANCE_PACKS=small,closed,main \
  WAVE_CONFORMANCE_MAX_LOG2=20 CK_RUN_CASE=hash bin/conformance
grep -E 'exchange|nvrtc|interpreter|mismatch|Checks:|FAIL|conformance:' \
  "$OUT/conformance.log" | head -30
step bench 110 bin/wvbench-gpu-hash "$root/config/packs"
grep -vE '^\|' "$OUT/bench.log" | tail -40
echo "== table (total $((SECONDS - T0)) s)"
cat "$OUT/summary.log"
grep -E '^\|' "$OUT/bench.log"
tail -12 "$OUT/bench.log" | grep -vE '^\|'
