#!/usr/bin/env bash
# .ci/deps.sh [all|build|demo] - install the Debian packages wavedd needs.
#   build: what compiling wavedd (CPU + Vulkan backends, no tests) needs;
#          the Dockerfile's build stage uses this.
#   demo: build + NumPy, what the README's first command and its quick tour
#          need (.ci/demo; the tour's Python lines use python/ in place).
#   all (default): build + tests (Check, lavapipe, PoCL), HIP's compiler,
#          the service tests (systemd, podman, debootstrap, Prometheus),
#          tmux (wavectl top's terminal test),
#          clang with libFuzzer for .ci/fuzz.sh, and the Python package's
#          NumPy, cffi, pytest and pip/venv/setuptools (python/).
# Idempotent and quiet: does nothing (and prints nothing) when all are present;
# otherwise it says what it installs, and apt-get works quietly for a while.
# As a user it installs with sudo; without sudo (or when sudo refuses) it
# prints the command to ask an admin to run.
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
  systemd groff-base bash-completion zsh fish tmux
  podman runc catatonit podman-compose debootstrap prometheus curl
  slurm-wlm munge
  clang-14 libclang-rt-14-dev
  python3-numpy python3-cffi python3-pytest python3-pip python3-venv python3-setuptools
)
case "${1:-all}" in
  build) pkgs=("${build[@]}") ;;
  demo) pkgs=("${build[@]}" python3-numpy) ;;
  all) pkgs=("${build[@]}" "${rest[@]}") ;;
  *) echo "usage: $0 [all|build|demo]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${#missing[@]} Debian package(s) with apt-get" \
     "(quiet, about a minute on a fresh machine): ${missing[*]}" >&2
SUDO=""
admin() {
  echo "deps: $1; ask an admin to run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  echo "deps: then run the same command again (deps.sh installs nothing once all are present)" >&2
  exit 1
}
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || admin "not root, and no sudo here"
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null || admin "apt-get update failed (above)"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
  admin "apt-get install failed (above)"
echo "deps: installed" >&2
