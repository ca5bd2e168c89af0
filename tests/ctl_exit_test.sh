#!/bin/bash
# tests/ctl_exit_test.sh BUILD - every row of docs/cli.md's "Errors and exit
# status" table, each with a real case against a real wavedd: 0 success, 1
# the daemon refused (unknown pack, op/dtype) or an input file is missing,
# 2 usage errors, 3 unreachable (nobody listens; a daemon stopped with
# SIGSTOP, which --timeout must bound, the dial included; status --probe
# says nothing then), 4 status --probe answered AUTH (tcp, no token), 130 Ctrl-C
# during submit hash and wait.  A status of the table without a case here
# fails the test.
#
# The stopped-daemon case runs under `timeout 5` with --timeout 500: a bound
# ten times the timeout, there to catch a hang, not to time anything (before
# the dial was bounded, wavectl waited 10 s there and said "cannot
# connect"; it must now say TIMEDOUT "not connected within 500 ms").
set -u
build=$1
src=${WAVE_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$src/tests/proc.sh"  # wv_free_port
ctl=$build/wavectl
tmp=$(mktemp -d /tmp/wv-exit-XXXXXX)
pid= spid=
cleanup() {
  for p in $pid $spid; do kill -CONT "$p"; kill -KILL "$p"; done 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "ctl_exit_test: $*" >&2; tail -20 "$tmp"/*.log >&2; exit 1; }
# bounded polls that only catch a hang (0.1 s steps, 60 s in all)
wait_for() {
  for _ in $(seq 600); do grep -q -- "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
declare -A seen

# expect STATUS NAME_ON_STDERR_OR_EMPTY CMD...: run CMD (wavectl's args),
# check its exit status and the "wavectl: NAME:" line
expect() {
  local want=$1 name=$2
  shift 2
  "$ctl" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq "$want" ] || fail "wavectl $*: exit $rc, not $want: $(cat "$tmp/err")"
  if [ -n "$name" ]; then
    grep -q "^wavectl: $name: " "$tmp/err" ||
      fail "wavectl $*: stderr lacks 'wavectl: $name:': $(cat "$tmp/err")"
    [ ! -s "$tmp/out" ] || fail "wavectl $*: printed on stdout: $(cat "$tmp/out")"
  fi
  seen[$want]=1
}

# start_daemon NAME [LISTEN AUTH]: a wavedd on ipc://$tmp/NAME.sock (or
# LISTEN, with AUTH), its pid in $started
start_daemon() {
  cat >"$tmp/$1.yaml" <<YAML
listen:
  - ${2:-ipc://$tmp/$1.sock}
auth: ${3:-none}
log_level: info
packs:
  dir: $src/config/packs
  load: [small]
devices:
  - name: cpu0
    backend: cpu
    threads: 1
YAML
  "$build/wavedd" --config "$tmp/$1.yaml" --foreground 2>"$tmp/$1.log" &
  started=$!
  wait_for 'ready: ' "$tmp/$1.log" || fail "wavedd $1 is not ready"
}
start_daemon wavedd
pid=$started
url=ipc://$tmp/wavedd.sock
export WAVE_URL=$url

# 0: success
expect 0 "" status
expect 0 "" help submit
printf '\1\0\0\0\2\0\0\0' >"$tmp/two.raw"
expect 0 "" submit reduce --op sum --dtype u32 --input "$tmp/two.raw"
grep -q '^sum uint32 = 3 ' "$tmp/out" || fail "sum of 1 and 2: $(cat "$tmp/out")"
# the same 8 bytes as one uint64 row (2^33 + 1), and argmax over two (issue 23)
expect 0 "" submit reduce --op sum --dtype u64 --input "$tmp/two.raw"
grep -q '^sum uint64 = 8589934593  (bits 0x0000000200000001)$' "$tmp/out" ||
  fail "sum of one uint64 row: $(cat "$tmp/out")"
printf '5\n9007199254740993\n7\n9007199254740993\n' >"$tmp/four.txt"
expect 0 "" submit reduce --op argmax --dtype u64 --format text --input "$tmp/four.txt"
grep -q '^argmax uint64 = 9007199254740993 ' "$tmp/out" && grep -q '^index: 1$' "$tmp/out" ||
  fail "argmax of four uint64 rows: $(cat "$tmp/out")"

# 1: the daemon refused or failed the job; a bad input file
expect 1 PACK submit hash --pack nosuch --nonce 0 --count 10
expect 1 OPDTYPE submit reduce --op xor --dtype f32 --input "$tmp/two.raw"
expect 1 IO submit reduce --op sum --dtype u32 --input "$tmp/missing.raw"
grep -q 'missing.raw: No such file' "$tmp/err" || fail "missing file: $(cat "$tmp/err")"
# rows of 8 bytes: 12 bytes are not whole rows; a text number past the dtype
printf '\1\0\0\0\2\0\0\0\3\0\0\0' >"$tmp/twelve.raw"
expect 1 LENGTH submit reduce --op sum --dtype f64 --input "$tmp/twelve.raw"
grep -q 'twelve.raw: 12 bytes is not a whole number of 8-byte float64 rows' "$tmp/err" ||
  fail "12 bytes as float64: $(cat "$tmp/err")"
printf '1\n2\n18446744073709551616\n' >"$tmp/big.txt"
expect 1 ARG submit reduce --op sum --dtype u64 --format text --input "$tmp/big.txt"
grep -q "big.txt:3: '18446744073709551616' is out of range for uint64" "$tmp/err" ||
  fail "2^64 as uint64: $(cat "$tmp/err")"
expect 1 NOJOB wait 12345

# 2: usage errors
expect 2 ARG status --frob
expect 2 ARG submit reduce --op frob --dtype u32 --input "$tmp/two.raw"
expect 2 ARG submit reduce --op argmax --dtype float128 --input "$tmp/two.raw"
expect 2 ARG --timeout soon status
expect 2 ARG frob
expect 2 ARG --url 'nonsense://x' status
# no --dtype: only a .npy input, whose header names it, may leave it out
expect 2 ARG submit reduce --op sum --input "$tmp/two.raw"
grep -q 'missing --dtype' "$tmp/err" || fail "no --dtype: $(cat "$tmp/err")"

# 3: nobody listens; a daemon that does not answer within --timeout
expect 3 IO --url "ipc://$tmp/nobody.sock" status
grep -q 'connection refused' "$tmp/err" || fail "refused: $(cat "$tmp/err")"
# status --probe: nobody listens is a probe's normal answer, said quietly
expect 3 "" --url "ipc://$tmp/nobody.sock" status --probe
[ ! -s "$tmp/err" ] || fail "status --probe, nobody listens: $(cat "$tmp/err")"
# (a daemon of its own: the aborted handshake leaks a half-made pipe in nng
# 1.5.2, daemon/net/listen.c, which an ASan build would report at its exit; it
# is killed, not stopped, at the end)
start_daemon stopped
spid=$started
kill -STOP "$spid"
timeout 5 "$ctl" --url "ipc://$tmp/stopped.sock" --timeout 500 status \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
kill -CONT "$spid"
[ $rc -ne 124 ] || fail "--timeout 500 against a stopped daemon: no exit within 5 s"
[ $rc -eq 3 ] || fail "stopped daemon: exit $rc, not 3: $(cat "$tmp/err")"
grep -q '^wavectl: TIMEDOUT: .*not connected within 500 ms' "$tmp/err" ||
  fail "stopped daemon: $(cat "$tmp/err")"
seen[3]=1
# it serves on once resumed (its ipc listener may first have to recover
# from the aborted handshake: a few tries)
for _ in 1 2 3 4 5; do
  "$ctl" --url "ipc://$tmp/stopped.sock" --timeout 2000 status >/dev/null 2>&1 && break
done
expect 0 "" --url "ipc://$tmp/stopped.sock" --timeout 5000 status
kill -KILL "$spid"
wait "$spid" 2>/dev/null
spid=

# 4: status --probe against a tcp listener without the token: AUTH, one
# line (a probe that lacks its token is not a daemon that is down)
port=$(wv_free_port) || fail "no free port"
start_daemon tcp "tcp://127.0.0.1:$port" \
  "{tokens: [{name: probe, file: $tmp/probe.token, generate: true}]}"
tpid=$started
expect 4 AUTH --url "tcp://127.0.0.1:$port" status --probe
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "probe without token: $(cat "$tmp/err")"
WAVE_TOKEN_FILE=$tmp/probe.token expect 0 "" --url "tcp://127.0.0.1:$port" \
  status --probe
[ ! -s "$tmp/err" ] || fail "probe with the token: $(cat "$tmp/err")"
kill -TERM "$tpid"
wait "$tpid" || fail "wavedd (tcp) exited $? on SIGTERM"

# 130: Ctrl-C during submit hash (the job is cancelled) and during wait
"$ctl" submit hash --pack small --nonce 0 --count 100000000000 --progress \
  >"$tmp/out" 2>"$tmp/err" &
c=$!
wait_for '^job [0-9]*: ' "$tmp/err" || fail "no progress line from submit hash --progress"
kill -INT $c
wait $c
rc=$?
[ $rc -eq 130 ] || fail "Ctrl-C in submit hash: exit $rc: $(cat "$tmp/err")"
grep -q '^wavectl: CANCELLED: job [0-9]* cancelled after ' "$tmp/err" ||
  fail "Ctrl-C in submit hash: $(cat "$tmp/err")"
expect 0 "" submit hash --pack small --nonce 0 --count 100000000000 --detach
id=$(grep -o '^job [0-9]*' "$tmp/out" | cut -d' ' -f2)
[ -n "$id" ] || fail "no job id from --detach: $(cat "$tmp/out")"
"$ctl" wait "$id" --progress >"$tmp/out" 2>"$tmp/err" &
c=$!
wait_for "^job $id: " "$tmp/err" || fail "no progress line from wait --progress"
kill -INT $c
wait $c
rc=$?
[ $rc -eq 130 ] || fail "Ctrl-C in wait: exit $rc: $(cat "$tmp/err")"
grep -q "^wavectl: CANCELLED: stopped waiting; job $id runs on" "$tmp/err" ||
  fail "Ctrl-C in wait: $(cat "$tmp/err")"
seen[130]=1
expect 0 "" cancel "$id"
grep -q "^job $id: cancelled, " "$tmp/out" || fail "cancel $id: $(cat "$tmp/out")"
# a cancel that did what it was asked is no error; one call takes several
! grep -q 'error\|CANCELLED' "$tmp/out" || fail "cancel $id printed an error: $(cat "$tmp/out")"
ids=
for _ in 1 2; do
  expect 0 "" submit hash --pack small --nonce 0 --count 100000000000 --detach
  ids+=" $(grep -o '^job [0-9]*' "$tmp/out" | cut -d' ' -f2)"
done
expect 0 "" cancel $ids
for i in $ids; do
  grep -q "^job $i: cancelled, " "$tmp/out" || fail "cancel$ids: $(cat "$tmp/out")"
done
expect 0 "" cancel $ids --json   # ended already: their state again
[ "$(grep -o '"state": "cancelled"' "$tmp/out" | wc -l)" -eq 2 ] ||
  fail "cancel$ids --json: $(cat "$tmp/out")"
# an unknown id fails (exit 1, NOJOB); the others are still printed
"$ctl" cancel 12345 $ids >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q '^wavectl: NOJOB: ' "$tmp/err" &&
  [ "$(grep -c ': cancelled, ' "$tmp/out")" -eq 2 ] ||
  fail "cancel 12345$ids: exit $rc: $(cat "$tmp/out" "$tmp/err")"

kill -TERM "$pid"
wait "$pid" || fail "wavedd exited $? on SIGTERM"
pid=

# every status of the table has a case above
rows=$(sed -n '/^## Errors and exit status/,/^## /p' "$src/docs/cli.md" |
  grep -o '^| [0-9]* ' | tr -d '| ')
[ -n "$rows" ] || fail "no exit status table in docs/cli.md"
for r in $rows; do
  [ -n "${seen[$r]:-}" ] || fail "docs/cli.md's exit status $r has no case here"
done
echo "ctl_exit_test: statuses $(echo $rows) checked"
