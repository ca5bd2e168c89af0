#!/bin/bash
# tests/log_journal_test.sh BUILD - wavedd's log under journald: with
# $JOURNAL_STREAM naming its stderr (what systemd sets, sd-daemon(3)) every
# line starts with its syslog priority ("<3>error: ..." for an error,
# "<6>info: ..." for info) and carries no timestamp and no pid (the journal
# adds both); with a JOURNAL_STREAM that names another stream, the plain
# "TIME wavedd[PID] LEVEL: message" lines.  The error is a failed reload
# (SIGHUP with a broken config), the info line the ready line.
set -u
build=$1
src=${WAVE_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d /tmp/wv-logj-XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "log_journal_test: $*" >&2; cat "$tmp"/*.log >&2 2>/dev/null; exit 1; }
# a bound that only catches a hang (a poll every 0.1 s, 60 s in all)
wait_for() {
  for _ in $(seq 600); do grep -q -- "$1" "$2" && return 0; sleep 0.1; done
  return 1
}

cat >"$tmp/devices.yaml" <<YAML
listen:
  - ipc://$tmp/wavedd.sock
auth: none
log_level: info
packs:
  dir: $src/config/packs
  load: [small]
devices:
  - name: cpu0
    backend: cpu
    threads: 1
YAML

# $1: the log file; $2: JOURNAL_STREAM for it ("" for its own dev:inode)
run() {
  : >"$1"
  local js=$2
  [ -n "$js" ] || js=$(stat -c '%d:%i' "$1")
  env -u WAVEDD_LOG JOURNAL_STREAM="$js" "$build/wavedd" \
    --config "$tmp/devices.yaml" --foreground 2>>"$1" &
  pid=$!
  wait_for 'ready: ' "$1" || fail "no ready line in $1"
}
stop() {
  kill -TERM "$pid"
  wait "$pid" || fail "wavedd exited $? on SIGTERM"
  pid=
}

j=$tmp/journal.log
run "$j" ""
cp "$tmp/devices.yaml" "$tmp/good.yaml"
printf 'limits: [\n' >>"$tmp/devices.yaml"
kill -HUP "$pid"
wait_for 'reload failed' "$j" || fail "no reload error logged"
stop
cp "$tmp/good.yaml" "$tmp/devices.yaml"
grep -q '^<3>error: reload failed, the old configuration keeps serving: ' "$j" ||
  fail "the reload error lacks <3>"
grep -q '^<6>info: ready: ' "$j" || fail "the ready line lacks <6>"
bad=$(grep -v '^<[3467]>\(error\|warn\|info\|debug\): ' "$j")
[ -z "$bad" ] || fail "lines without a priority prefix: $bad"
! grep -q 'wavedd\[\|[0-9]T[0-9][0-9]:[0-9][0-9]:' "$j" ||
  fail "journal lines carry a timestamp or pid"

p=$tmp/plain.log
run "$p" "1:1"   # another stream: not the journal
stop
grep -q '^[0-9-]*T[0-9:.]*Z wavedd\[[0-9]*\] info: ready: ' "$p" ||
  fail "the plain ready line changed"
! grep -q '^<[0-9]>' "$p" || fail "plain lines carry a priority prefix"
echo "log_journal_test: ok"
