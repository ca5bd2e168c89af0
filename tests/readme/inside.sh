#!/usr/bin/env bash
# tests/readme/inside.sh - the README test's part inside its container
# (tests/readme/run.sh mounts /fixture: src.tar, the blocks, the examples'
# certificates).  Runs as the image's non-root user: README.md's blocks
# with the image's XDG_RUNTIME_DIR, docs/cli.md's examples, then README.md's
# blocks again without XDG_RUNTIME_DIR (a user without a login session).
set -euo pipefail
say() { echo "readme_test: inside: $*"; }
[ "$(id -u)" -ne 0 ] || { say "running as root"; exit 1; }
mkdir ~/src
tar -C ~/src -xf /fixture/src.tar
# one block: bash -e -o pipefail, from DIR, echoing its commands, at most
# 10 minutes; its background jobs (a daemon it started) stopped when it ends
block() {
  local dir=$1 f=$2
  (cd "$dir" && timeout 600 bash -e -o pipefail -c \
     'trap '\''j=$(jobs -p); [ -z "$j" ] || kill $j 2>/dev/null || :; wait || :'\'' EXIT
      set -x; . "$1"' _ "$f")
}
# every block runs, even after one failed (each failure is named at the end)
failed=()
readme() {  # readme PASS: README.md's blocks, in order, from ~/src
  local f line rc t0=$SECONDS
  for f in /fixture/readme/*.sh; do
    line=$(cut -d' ' -f1 "${f%.sh}.meta")
    say "README.md:$line ($1)"
    sed 's/^/  | /' "$f"
    block ~/src "$f" || { rc=$?; say "README.md:$line ($1): the block failed (exit $rc)"
                          [ ! -f ~/src/build/wavedd.log ] || tail -20 ~/src/build/wavedd.log
                          failed+=("README.md:$line ($1, exit $rc)"); }
  done
  say "README.md ($1): $((SECONDS - t0)) s"
}
readme "with XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR"
[ -x ~/src/build/wavectl ] || { say "no build/wavectl: the examples cannot run"; exit 1; }

# docs/cli.md's examples talk to a "gpu-box" (127.0.0.1 here) over tcp and
# TLS, with its token, and to the local daemon over ipc; the files they name
say "docs/cli.md: the examples' gpu-box and files"
cd ~
mkdir -m 0700 .wave
(umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >.wave/gpu-box.token)
cp /fixture/site-ca.crt /fixture/gpu-box.crt .
(umask 077; cp /fixture/gpu-box.key .)
printf '\x01\x00\x00\x00\x02\x00\x00\x00' >part1.bin   # uint32 1, 2
printf '\x03\x00\x00\x00' >part2.bin                   # uint32 3
cp src/a.npy x.npy                                     # float32 1.5 -2.25 nan
# a uint32 mask of x.npy's 3 rows, as .ci/demo writes .npy files
h="{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }"
{ printf '\x93NUMPY\x01\x00\x76\x00%s%*s\n' "$h" $((117 - ${#h})) ''
  printf '\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00'; } >keep.npy
cat >gpu-box.yaml <<YAML
listen:
  - ipc://$XDG_RUNTIME_DIR/wavedd/wavedd.sock
  - tcp://0.0.0.0:5555
  - tls+tcp://0.0.0.0:5556
tls: {cert_file: gpu-box.crt, key_file: gpu-box.key}
auth: {tokens: [{name: docs, file: .wave/gpu-box.token}]}
packs: {dir: src/config/packs}
devices: [{name: cpu0, backend: cpu}]
YAML
src/build/wavedd --config gpu-box.yaml --foreground 2>gpu-box.log &
for _ in $(seq 1 600); do
  src/build/wavectl status --probe 2>/dev/null && break
  kill -0 $! 2>/dev/null || { cat gpu-box.log; exit 1; }
  sleep 0.1
done
export PATH=~/src/build:$PATH
for f in /fixture/cli/*.sh; do
  say "docs/cli.md:$(cut -d' ' -f1 "${f%.sh}.meta")"
  sed 's/^/  | /' "$f"
  block ~ "$f" || { rc=$?; say "docs/cli.md: the examples failed (exit $rc)"
                    tail -20 gpu-box.log
                    failed+=("docs/cli.md:$(cut -d' ' -f1 "${f%.sh}.meta") (exit $rc)"); }
done
# docs/fleet.md's runnable blocks: the same gpu-box, from ~
for f in /fixture/fleet/*.sh; do
  [ -f "$f" ] || continue
  say "docs/fleet.md:$(cut -d' ' -f1 "${f%.sh}.meta")"
  sed 's/^/  | /' "$f"
  block ~ "$f" || { rc=$?; say "docs/fleet.md: the block failed (exit $rc)"
                    tail -20 gpu-box.log
                    failed+=("docs/fleet.md:$(cut -d' ' -f1 "${f%.sh}.meta") (exit $rc)"); }
done
kill %1
wait || true

# again as a user without a login session (su, podman exec, a CI runner):
# no XDG_RUNTIME_DIR, so wavedd and wavectl take /tmp/wavedd-UID (the
# demo's build is there already: its second run builds nothing)
unset XDG_RUNTIME_DIR
readme "no XDG_RUNTIME_DIR"
[ -d /tmp/wavedd-"$(id -u)" ] || { say "no /tmp/wavedd-$(id -u): the second pass never started wavedd there"
                                  failed+=("no /tmp/wavedd-$(id -u)"); }
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "ok"
