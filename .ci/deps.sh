#!/usr/bin/env bash
# .ci/deps.sh [all|build] - install the Debian packages wavedd needs.
#   build: what compiling wavedd (CPU + Vulkan backends, no tests) needs;
#          the Dockerfile's build stage uses this.
#   all (default): build + tests (Check, lavapipe, PoCL), HIP's compiler,
#          the service tests (systemd, podman, debootstrap, Prometheus),
#          clang with libFuzzer for .ci/fuzz.sh, and the Python package's
#          NumPy, cffi, pytest and pip/venv/setuptools (python/).
# Idempotent and quiet: does nothing (and prints nothing) when all are present.
# The CUDA toolkit (nvcc) is not a Debian package here; the build uses it when
# it is installed (/usr/local/cuda/bin/nvcc) and skips the CUDA backend if not.
set -euo pipefail
build=(
  build-essential cmake ninja-build pkg-config
  libuv1-dev libnng-dev libprotobuf-c-dev protobuf-c-compiler libyaml-dev
  libsystemd-dev libvulkan-dev glslc
)
rest=(
  check mesa-vulkan-drivers vulkan-tools openssl
  pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers
  hipcc
  systemd groff-base bash-completion zsh fish
  podman runc catatonit podman-compose debootstrap prometheus curl
  slurm-wlm munge
  clang-14 libclang-rt-14-dev
  python3-numpy python3-cffi python3-pytest python3-pip python3-venv python3-setuptools
)
case "${1:-all}" in
  build) pkgs=("${build[@]}") ;;
  all) pkgs=("${build[@]}" "${rest[@]}") ;;
  *) echo "usage: $0 [all|build]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
