#!/usr/bin/env bash
# tests/install_test.sh BUILD_DIR - `cmake --install` into a fresh prefix
# gives a daemon that starts from the installed config and serves every
# shipped pack; the unit passes systemd-analyze verify; the man pages render
# without groff warnings; the completions parse.
#
# The installed config listens on /run/wavedd (the unit's RuntimeDirectory),
# which is not ours outside the unit, so the run uses a copy whose listen
# line is the only change; `--check-config` runs on the file as installed
# (as a user it must refuse only that socket folder) and on the copy.
# (tests/container/ runs the unit, unchanged, under systemd.)
set -euo pipefail
# a command that fails under set -e says where, not just the exit status
trap 'echo "install_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build=$(cd "$1" && pwd)
. "$(dirname "$0")/proc.sh"
tmp=$(mktemp -d /tmp/wave-install.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ]; then wv_stop "$pid" || true; fi  # detached: not a child
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/wavedd bin/wavectl lib/systemd/system/wavedd.service \
         lib/sysusers.d/wavedd.conf lib/tmpfiles.d/wavedd.conf \
         etc/wavedd/devices.yaml share/man/man8/wavedd.8 \
         share/man/man1/wavectl.1 share/man/man5/devices.yaml.5 \
         share/bash-completion/completions/wavectl \
         share/bash-completion/completions/wavedd \
         share/zsh/vendor-completions/_wavectl \
         share/fish/vendor_completions.d/wavectl.fish; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
packs=$(ls "$prefix/share/wavedd/packs")
src_packs=$(cd "$WAVE_SOURCE_DIR/config/packs" && ls *.yaml)
[ "$packs" = "$src_packs" ] || fail "packs installed: $packs; shipped: $src_packs"

# the unit, as installed: ExecStart names the installed binary and config
unit=$prefix/lib/systemd/system/wavedd.service
grep -q "^ExecStart=$prefix/bin/wavedd --config \${WAVEDD_CONFIG} --foreground$" "$unit" ||
  fail "ExecStart does not name $prefix/bin/wavedd"
grep -q "^Environment=WAVEDD_CONFIG=$prefix/etc/wavedd/devices.yaml$" "$unit" ||
  fail "the unit does not name the installed config"
if command -v systemd-analyze >/dev/null; then
  MANPATH=$prefix/share/man: systemd-analyze verify "$unit" ||
    fail "systemd-analyze verify $unit"
fi
for m in "$prefix"/share/man/man*/*; do
  warn=$(groff -man -ww -z "$m" 2>&1) || fail "groff $m"
  [ -z "$warn" ] || fail "groff warnings in $m: $warn"
done
bash -n "$prefix/share/bash-completion/completions/wavectl"
bash -n "$prefix/share/bash-completion/completions/wavedd"

# a copy with the listen line moved to a socket of ours, its only change
sed "s|ipc:///run/wavedd/wavedd.sock|ipc://$tmp/w.sock|" \
  "$prefix/etc/wavedd/devices.yaml" > "$prefix/etc/wavedd/test.yaml"
changed=$(diff "$prefix/etc/wavedd/devices.yaml" "$prefix/etc/wavedd/test.yaml" |
  grep -c '^>' || true)
[ "$changed" = 1 ] || fail "$changed lines changed, not just the listen line"

# the installed config, unchanged, is valid with every shipped pack.
# --check-config refuses what the start refuses, so a user who may not
# make /run/wavedd (the unit's RuntimeDirectory) gets that one error; the
# copy then passes
n=$(ls "$prefix/share/wavedd/packs" | wc -l)
check() { "$prefix/bin/wavedd" --config "$1" --check-config 2>"$tmp/check.err"; }
if [ -w /run ] || [ -w /run/wavedd ]; then
  check "$prefix/etc/wavedd/devices.yaml" | grep -q ", $n pack(s)$" ||
    fail "--check-config of the installed config: $(cat "$tmp/check.err")"
else
  ! check "$prefix/etc/wavedd/devices.yaml" >/dev/null ||
    fail "--check-config passed a socket folder this user cannot make"
  grep -q "socket folder /run/wavedd" "$tmp/check.err" ||
    fail "--check-config of the installed config: $(cat "$tmp/check.err")"
fi
check "$prefix/etc/wavedd/test.yaml" | grep -q ", $n pack(s)$" ||
  fail "--check-config of the copy: $(cat "$tmp/check.err")"

# run it, detached: the parent returns once the daemon is ready
"$prefix/bin/wavedd" --config "$prefix/etc/wavedd/test.yaml" 2>"$tmp/log"
pid=$(sed -n 's/^wavedd: running as pid \([0-9]*\)$/\1/p' "$tmp/log")
[ -n "$pid" ] || fail "no pid: $(cat "$tmp/log")"
export WAVE_URL=ipc://$tmp/w.sock
ctl=$prefix/bin/wavectl
# every shipped pack passes its known answers on the installed daemon: the
# installed config prepares a pack on first use (packs.prepare), so each
# job waits for its pack's preparation, and then every check has run
for p in ${packs//.yaml/}; do
  "$ctl" submit hash --pack "$p" --nonce 0 --count 4096 --json >"$tmp/h.json" ||
    fail "hash job on pack $p"
  grep -q '"job_fingerprint"' "$tmp/h.json" || fail "no result for $p"
done
out=$("$ctl" packs --json)
for p in ${packs//.yaml/}; do
  echo "$out" | grep -q "\"name\": \"$p\"" || fail "pack $p not served: $out"
done
echo "$out" | grep -q '"state": "failed"' && fail "a pack failed its self-check: $out"
[ "$(echo "$out" | grep -o '"state": "ok"' | wc -l)" -eq "$n" ] ||
  fail "not every pack ok: $out"
kill -TERM "$pid"
# its end from /proc (tests/proc.sh), not kill -0, which a zombie passes
for i in $(seq 1 300); do wv_running "$pid" || break; sleep 0.1; done
wv_running "$pid" && fail "wavedd did not stop"
pid=""
[ ! -e "$tmp/w.sock" ] || fail "stale socket after SIGTERM"
echo "install_test: ok ($n packs served by $prefix/bin/wavedd)"
