#!/usr/bin/env bash
# .ci/deps.sh - install the Debian packages wavedd's build and tests need.
# Idempotent and quiet: does nothing (and prints nothing) when all are present.
# The CUDA toolkit (nvcc) is not a Debian package here; the build uses it when
# it is installed (/usr/local/cuda/bin/nvcc) and skips the CUDA backend if not.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config
  libuv1-dev libnng-dev libprotobuf-c-dev protobuf-c-compiler libyaml-dev check
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-tools
  pocl-opencl-icd ocl-icd-opencl-dev
  hipcc
  libsystemd-dev systemd
  podman runc debootstrap prometheus
)
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
