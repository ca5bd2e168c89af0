#!/usr/bin/env bash
# tests/container/base.sh - make the Debian 12 base image the container
# tests build on, from Debian's mirror (no registry is reachable here):
# debootstrap --variant=minbase bookworm, then podman import.  Cached: an
# existing localhost/wavedd-base:bookworm is kept, so a run makes it once.
set -euo pipefail
image=${WAVE_BASE_IMAGE:-localhost/wavedd-base:bookworm}
mirror=${WAVE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if podman image exists "$image"; then
  exit 0
fi
root=$(mktemp -d /var/tmp/wavedd-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "base: debootstrap --variant=minbase bookworm ($mirror)" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# the build's apt sees the same mirror, with the security suite
cat >"$root/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SRC
# minbase ships apt's caches and docs; the image is smaller without them
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
echo "base: $image made" >&2
