#!/usr/bin/env bash
# bench/device-run.sh - the one check-and-measure run on the GPU machine.
# Builds nothing: run it from the repository root next to a build folder
# made on the build machine (GPU backends on, real targets) and the
# libraries that bundle-libs.sh collected into .devlibs/.
#
#   bench/device-run.sh [BUILD_DIR]        (default: build-cuda, else build)
#
# Steps, each logged in full to $OUT/<step>.log (OUT defaults to
# ./device-logs), each under its own time limit:
#   conformance  tests/conformance: the same reduce (and hash, when built)
#                jobs on every backend that opens, bits against the CPU
#   check        wvbench-gpu-job --check: CUDA jobs the conformance suite
#                does not shape (thousands of chunks, slices, masks)
#   reduce       wvbench-gpu-reduce: kernels vs CUB, 2^10..2^30; vs a
#                streaming read at 2^28 and 2^30
#   fsum         wvbench-gpu-reduce fsum: the exact sum vs CUB's Sum and the
#                plain float sum, float32 2^28/2^30, float64 2^27/2^29,
#                narrow, full-range and cancelling data, small jobs; every
#                result against the CPU reference (issue 39)
#   job          wvbench-gpu-job: jobs from host memory vs a pinned copy
#   hash         wvbench-gpu-hash: self-checks, hash rate vs the random-load
#                roofline, both exchange paths; hash_batch (device fold)
#                beside the kernel alone at 2^26..2^28 nonces
#   vulkan       the Vulkan engineer's bench (bench/wvbench-vulkan*), if built
#   wide         bench/device-wide.sh: the conformance suite's wide case on
#                cpu and cuda, and wvbench-gpu-wide: the 64-bit dtypes and
#                argmin/argmax against CUB of the same run (issue 23)
#   vkwide       wvbench-vkwide, if built: the same jobs on the Vulkan
#                backend against its own streaming read of the same run
#   opencl       wvbench-opencl on NVIDIA's OpenCL (WAVE_OPENCL_MATCH,
#                default "nvidia"), if built: device-resident reductions
#                and the hash per exchange set-up; the run registers
#                NVIDIA's ICD first (/etc/OpenCL/vendors/nvidia.icd)
#   daemon       bench/device-daemon.sh: wavedd with cpu, cuda and vulkan
#                devices, driven by wavectl (same bits, known answers)
#   region       bench/device-region.sh: a registered 2^28-row region
#                reduced by wavedd's CUDA device (u32 and f32 sum, first use
#                with the pinning, and repeats) vs a pinned copy of the same
#                run; wavectl of a 1 GiB file vs cat (issue 10)
#   firsthour    bench/device-firsthour.sh: a 1 GiB file through wavectl on
#                cuda0 and cpu0 as the daemon's uid and as another uid, vs
#                cat; first-use pack preparation on cuda0 and vk0 (issue 19)
#   files        bench/device-files.sh: a 1 GiB page-cached file through
#                wavectl --input on cuda0 and vk0 (the reader pool into
#                pinned rings) vs cat and a pinned copy (wvbench-gpu-copy)
#                of the same run, swept over limits.file_readers 1 4 8 12
#                and the default; torch/CuPy peers when present (issue 21)
#   twogpu       bench/device-twogpu.sh: two CUDA devices of one daemon
#                (GPU 0 and 1, or both GPU 0 on a one-GPU host, said so):
#                a hash job on one and on both, same bits; cuda0's region
#                ratios alone and while cuda1 pins (issue 21 item 4)
#   python       bench/python-bulk.py: 1 GiB of float32 from Python (the
#                wavedd package): a region-backed array, a plain NumPy
#                array, torch and CuPy when installed, against a pinned copy
#                of the same run (issue 24); it says "skipped" and succeeds
#                when python3 has no NumPy
#   service      bench/device-service.sh: probes, the metrics page, device
#                health through NVML beside nvidia-smi, wavectl top, and
#                the shuffle exchange's test entries
# then prints every step's result and the benches' tables, last.
#
# How it was run (2026-11-29): here, build with CUDA and Vulkan into
# build-dev, copy the programs into .devrun/ (tests/conformance,
# tests/vkcaps, bench/wvbench-*, wavedd, wavectl, and CMakeCache.txt's
# WAVE_VULKAN line),
# bundle their libraries into .devlibs/ with ../shared/device/bundle-libs.sh,
# and download the glvnd and Vulkan loader packages into .gl/ (the device
# README's recipe: the NVIDIA Vulkan ICD needs libGLX/libGLdispatch, which
# that machine lacks); there, carrying .devrun .devlibs .gl:
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
#   bench/device-run.sh .devrun
#
# Environment:
#   WAVE_DEVICE_STEPS          steps to run (default: all of the above)
#   WAVE_CONFORMANCE_MAX_LOG2  largest conformance job, 2^N rows (default 28)
#   WAVE_REQUIRE_BACKENDS      backends that must open (default cpu,cuda and
#                              vulkan when the build has it)
#   WAVE_CONFORMANCE_BACKENDS  run only these backends in conformance
#   WAVE_CONFORMANCE_PACKS     hash packs in conformance (default all three)
#   WAVE_CONFORMANCE_LIMIT_S   time limit of the conformance step (900)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
B=${1:-}
if [ -z "$B" ]; then
  for d in build-cuda build; do [ -d "$d" ] && { B=$d; break; }; done
fi
if [ -z "$B" ] || [ ! -d "$B" ]; then echo "device-run: no build folder" >&2; exit 2; fi
OUT=${OUT:-$root/device-logs}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$root/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WAVE_SOURCE_DIR=$root
steps=${WAVE_DEVICE_STEPS:-conformance,check,reduce,job,hash,vulkan,wide,vkwide,opencl,daemon,region,firsthour,files,twogpu,python,service}
has_vulkan=0
grep -q '^WAVE_VULKAN:BOOL=ON' "$B/CMakeCache.txt" 2>/dev/null && has_vulkan=1
req=cpu,cuda
[ $has_vulkan = 1 ] && req=cpu,cuda,vulkan
export WAVE_REQUIRE_BACKENDS=${WAVE_REQUIRE_BACKENDS:-$req}
export WAVE_CONFORMANCE_MAX_LOG2=${WAVE_CONFORMANCE_MAX_LOG2:-28}
export WAVE_CONFORMANCE_PACKS=${WAVE_CONFORMANCE_PACKS:-small,closed,main}
# Check's own timeout would stop a 2^28 GPU run.
export CK_DEFAULT_TIMEOUT=3600

summary=$OUT/summary.log
{
  echo "device-run $(date -u +%Y-%m-%dT%H:%MZ) build=$B steps=$steps"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  echo "cpu: $(nproc) cores; conformance max 2^$WAVE_CONFORMANCE_MAX_LOG2," \
    "required backends: $WAVE_REQUIRE_BACKENDS"
} >"$summary"

results=()
# step NAME LIMIT_S COMMAND...: run one step, log it, remember the outcome.
step() {
  local name=$1 limit=$2
  shift 2
  case ",$steps," in *",$name,"*) ;; *) return 0 ;; esac
  if [ ! -x "$1" ]; then
    results+=("$name|missing|0|$1 not built")
    return 0
  fi
  local t0=$SECONDS rc
  echo "== $name: $*" | tee -a "$summary"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  local dt=$((SECONDS - t0)) last
  last=$(grep -v '^\s*$' "$OUT/$name.log" | tail -n 1 | cut -c1-100)
  [ $rc = 124 ] && last="timed out after ${limit}s"
  results+=("$name|$rc|$dt|$last")
  echo "   rc=$rc ${dt}s: $last" | tee -a "$summary"
}

# NVIDIA's OpenCL library is installed there but not registered: register
# it before conformance, whose opencl device is then NVIDIA's, not PoCL
# (WAVE_CONFORMANCE_MATCH, default "nvidia" once it is registered).
if ldconfig -p 2>/dev/null | grep -q libnvidia-opencl.so.1; then
  [ -f /etc/OpenCL/vendors/nvidia.icd ] ||
    { mkdir -p /etc/OpenCL/vendors &&
      echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd; }
  export WAVE_CONFORMANCE_MATCH=${WAVE_CONFORMANCE_MATCH-nvidia}
fi
step conformance "${WAVE_CONFORMANCE_LIMIT_S:-900}" "$B/tests/conformance"
step check 300 "$B/bench/wvbench-gpu-job" --check
step reduce 300 "$B/bench/wvbench-gpu-reduce"
step fsum 600 "$B/bench/wvbench-gpu-reduce" fsum
step job 300 "$B/bench/wvbench-gpu-job"
step hash 300 "$B/bench/wvbench-gpu-hash" "$root/config/packs"
vk=$(find "$B/bench" -maxdepth 1 -name "wvbench-vulkan*" -type f 2>/dev/null | head -n 1)
if [ -n "$vk" ]; then
  step vulkan 300 "$vk"
fi
step wide 900 "$root/bench/device-wide.sh" "$B" "$OUT/wide"
[ -x "$B/bench/wvbench-vkwide" ] && step vkwide 300 "$B/bench/wvbench-vkwide"
if [ -x "$B/bench/wvbench-opencl" ]; then
  step opencl 300 "$B/bench/wvbench-opencl" --match "${WAVE_OPENCL_MATCH:-nvidia}"
fi
step daemon 900 "$root/bench/device-daemon.sh" "$B" "$OUT/daemon"
step region 300 "$root/bench/device-region.sh" "$B" "$OUT/region"
step firsthour 600 "$root/bench/device-firsthour.sh" "$B" "$OUT/firsthour"
step files 600 "$root/bench/device-files.sh" "$B" "$OUT/files"
step twogpu 600 "$root/bench/device-twogpu.sh" "$B" "$OUT/twogpu"
step python 600 "$root/bench/python-bulk.py" "$B"
step service 300 "$root/bench/device-service.sh" "$B" "$OUT/service"

# The tables, then one line per step: the end of the output is what the
# GPU machine's caller sees.
for f in conformance reduce job hash vulkan wide vkwide opencl daemon region firsthour files twogpu python service; do
  [ -f "$OUT/$f.log" ] || continue
  case $f in
    conformance) grep -E '^conformance: .*(jobs|opened|cannot)|Checks:' "$OUT/$f.log" ;;
    vulkan | opencl) grep -E '^device:|^paths:|warm-up|stream read|x stream|Mhash' "$OUT/$f.log" ;;
    daemon) grep -E '^(ok|FAIL) |^     (hash main|e2e|kernels)|^\| (e2e|cuda0|vk0|cpu0)|^\|---' "$OUT/$f.log" ;;
    region) grep -E '^\||^pinned|^==|^where|^  reduction|^(ok|FAIL) ' "$OUT/$f.log" ;;
    firsthour) grep -E '^\||^pinned|^(ok|FAIL) ' "$OUT/$f.log" ;;
    files) grep -E '^\||^pinned|^where|^note|^(ok|FAIL) ' "$OUT/$f.log" ;;
    wide) grep -E '^\||^conformance|^  |^wvbench' "$OUT/$f.log" ;;
    vkwide) grep -E '^\||^device|FAIL|x stream' "$OUT/$f.log" ;;
    twogpu) grep -E '^\| (hash|cuda0)|^== one|^== [0-9]|^(ok|FAIL) ' "$OUT/$f.log" ;;
    python) grep -E '^\||^python-bulk|^baseline|^target|^note' "$OUT/$f.log" ;;
    service) grep -E '^(ok|FAIL) ' "$OUT/$f.log" ;;
    *) grep -E '^\|' "$OUT/$f.log" ;;
  esac
done | tee -a "$summary"

# The issue's comparison, from this run's logs: the Vulkan backend against
# the CUDA backend, 2^28-row reductions (time) and the main pack's hash
# (rate: the device's own exchange path against CUDA's shuffle kernel).
if [ -f "$OUT/reduce.log" ] && [ -f "$OUT/vulkan.log" ]; then
  echo "| 2^28 rows | CUDA us | Vulkan us | Vulkan / CUDA (speed) |"
  echo "|---|---:|---:|---:|"
  for op in "u32 sum" "u32 max" "f32 sum"; do
    c=$(awk -F'|' -v op="$op" '$2 ~ /^ *2\^28 *$/ && $3 ~ "^ *" op " *$" {
          gsub(/ /, "", $4); print $4; exit }' "$OUT/reduce.log")
    v=$(awk -v op="$op" 'index($0, "  " op " ") == 1 && / us / {
          for (i = 1; i <= NF; i++) if ($i == "us") { print $(i - 1); exit } }' \
          "$OUT/vulkan.log")
    [ -n "$c" ] && [ -n "$v" ] &&
      awk -v op="$op" -v c="$c" -v v="$v" \
        'BEGIN { printf "| %s | %s | %s | %.2f |\n", op, c, v, c / v }'
  done
  c=$(awk -F'|' '$2 ~ /shuffle .*kernel/ { gsub(/ /, "", $3); print $3; exit }' \
        "$OUT/hash.log" 2>/dev/null)
  v=$(awk '/exchange .*Mhash/ { for (i = 1; i <= NF; i++)
             if ($i == "Mhash/s") { print $(i - 1); exit } }' "$OUT/vulkan.log")
  [ -n "$c" ] && [ -n "$v" ] &&
    awk -v c="$c" -v v="$v" 'BEGIN { printf "| hash, M hashes/s | %s | %s | %.2f |\n", c, v, v / c }'
  # hash_batch (hash + device fold + copy-back), s = 13, 2^28 nonces.
  c=$(awk -F'|' '$2 ~ /2\^28 nonces, hash_batch s=13/ { gsub(/ /, "", $3); print $3; exit }' \
        "$OUT/hash.log" 2>/dev/null)
  v=$(awk '/hash_batch s=13 +268435456 nonces/ { for (i = 1; i <= NF; i++)
             if ($i == "Mhash/s") { print $(i - 1); exit } }' "$OUT/vulkan.log")
  [ -n "$c" ] && [ -n "$v" ] &&
    awk -v c="$c" -v v="$v" 'BEGIN { printf "| hash_batch s=13 2^28, M hashes/s | %s | %s | %.2f |\n", c, v, v / c }'
fi | tee -a "$summary"
# The same comparison for the OpenCL backend (issue 14: >= 0.9x CUDA).
if [ -f "$OUT/reduce.log" ] && [ -f "$OUT/opencl.log" ]; then
  echo "| 2^28 rows | CUDA us | OpenCL us | OpenCL / CUDA (speed) |"
  echo "|---|---:|---:|---:|"
  for op in "u32 sum" "u32 max" "f32 sum"; do
    c=$(awk -F'|' -v op="$op" '$2 ~ /^ *2\^28 *$/ && $3 ~ "^ *" op " *$" {
          gsub(/ /, "", $4); print $4; exit }' "$OUT/reduce.log")
    v=$(awk -v op="$op" 'index($0, "  " op " ") == 1 && / us / {
          for (i = 1; i <= NF; i++) if ($i == "us") { print $(i - 1); exit } }' \
          "$OUT/opencl.log")
    [ -n "$c" ] && [ -n "$v" ] &&
      awk -v op="$op" -v c="$c" -v v="$v" \
        'BEGIN { printf "| %s | %s | %s | %.2f |\n", op, c, v, c / v }'
  done
  c=$(awk -F'|' '$2 ~ /shuffle .*kernel/ { gsub(/ /, "", $3); print $3; exit }' \
        "$OUT/hash.log" 2>/dev/null)
  v=$(awk '/exchange .*Mhash/ { for (i = 1; i <= NF; i++)
             if ($i == "Mhash/s") { print $(i - 1); exit } }' "$OUT/opencl.log")
  [ -n "$c" ] && [ -n "$v" ] &&
    awk -v c="$c" -v v="$v" 'BEGIN { printf "| hash, M hashes/s | %s | %s | %.2f |\n", c, v, v / c }'
fi | tee -a "$summary"
echo
printf '%-12s %-8s %6s  %s\n' step rc seconds last-line | tee -a "$summary"
fail=0
for r in "${results[@]}"; do
  IFS='|' read -r n rc dt last <<<"$r"
  printf '%-12s %-8s %6s  %s\n' "$n" "$rc" "$dt" "$last" | tee -a "$summary"
  [ "$rc" = 0 ] || fail=1
done
exit $fail
