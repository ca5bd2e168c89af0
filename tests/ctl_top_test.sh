#!/bin/bash
# tests/ctl_top_test.sh BUILD once|tty - `wavectl top` against a real
# wavedd (wavedd-test: wavedd plus the fake backend) with two CPU devices,
# cpu0 running a hash job and cpu1 idle, and a fake device fk0 whose
# health comes from a telemetry feed written here.
#
#   once: the frame of `top --once` (and of `top` with stdout a file, which
#         prints the same one frame): the header, the device rows (state,
#         queue, busy, rate; the feed's temperature and power on fk0's, and
#         its throttle line; "-" for the CPUs' health), the job's row,
#         its progress between what `jobs --json` said just before and just
#         after, no escape bytes; the same frame as --json; the usage
#         errors and an unreachable daemon.  Then a job over cpu0 and
#         cpu1: both rows show a rate (the daemon's per-device hash
#         counts), the job's row names cpu0+1, and `status --json` gives
#         both devices' hashes.
#         Then `wavectl bench` (small sizes: seconds) once the job is
#         cancelled: a row per device, all ok, exit 0, no escape bytes;
#         --json parses with every device ok; with fk0's wrong_bits file
#         present (the fake backend flips a bit of each hash batch and
#         reduction) fk0's row is FAILED and the exit 1; a usage error.
#   tty:  the live view in a tmux pane (the tmux package): the job's row
#         drawn on the alternate screen, and q, then Ctrl-C in a second
#         pane, end it with exit 0, the primary screen back and the
#         terminal's settings (stty -g) as they were; with the daemon
#         stopped (SIGSTOP) while top waits on it, two Ctrl-C end it at
#         once (exit 130), the terminal restored too.  Exit 77 (skipped)
#         without tmux.
# The waits are bounded polls (0.1 s steps, 60 s in all) that only catch a
# hang; nothing is timed.
set -u
build=$1 mode=${2:-once}
src=${WAVE_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
ctl=$build/wavectl
if [ "$mode" = tty ] && ! command -v tmux >/dev/null; then
  echo "ctl_top_test: tmux is not installed: the terminal view is not tested: skipped"
  exit 77
fi
tmp=$(mktemp -d /tmp/wv-top-XXXXXX)
pid=
T=(tmux -S "$tmp/tmux.sock")
cleanup() {
  [ "$mode" = tty ] && "${T[@]}" kill-server 2>/dev/null
  [ -n "$pid" ] && { kill -CONT "$pid"; kill -KILL "$pid"; } 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "ctl_top_test: $*" >&2; tail -5 "$tmp"/*.log >&2; exit 1; }
wait_for() {  # wait_for CMD...: until CMD succeeds
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  return 1
}

cat >"$tmp/top.yaml" <<YAML
listen:
  - ipc://$tmp/top.sock
auth: none
log_level: info
packs:
  dir: $src/config/packs
  load: [small]
devices:
  - name: cpu0
    backend: cpu
    threads: 1
  - name: cpu1
    backend: cpu
    threads: 1
  - {name: fk0, backend: fake, threads: 1, device: "telemetry=$tmp/feed,wrong_bits=$tmp/wrong"}
YAML
printf 'temp_c 61.4\npower_w 142.6\npower_limit_w 300\nthrottle sw_thermal\n' >"$tmp/feed"
"$build/wavedd-test" --config "$tmp/top.yaml" --foreground 2>"$tmp/wavedd.log" &
pid=$!
wait_for grep -q 'ready: ' "$tmp/wavedd.log" || fail "wavedd is not ready"
url=ipc://$tmp/top.sock
export WAVE_URL=$url

# a job on cpu0 that outlasts the test (cancelled at the end): 5e7 nonces
"$ctl" submit hash --pack small --nonce 0 --count 50000000 --device cpu0 \
  --detach >"$tmp/sub" || fail "submit: $(cat "$tmp/sub")"
id=$(grep -o '^job [0-9]*' "$tmp/sub" | cut -d' ' -f2)
[ -n "$id" ] || fail "no job id: $(cat "$tmp/sub")"
done_now() { "$ctl" jobs --json | grep -o '"done": [0-9]*' | head -1 | cut -d' ' -f2; }
started() { [ "$(done_now)" -gt 0 ] 2>/dev/null; }
wait_for started || fail "job $id does not start"
# the first reading of fk0's feed (the daemon reads health every 2 s)
read_feed() { "$ctl" status --json | grep -q '"source": "feed", "note": "", "temperature_c": 61.4'; }
wait_for read_feed || fail "fk0's feed is not read: $("$ctl" status --json)"

if [ "$mode" = once ]; then
  before=$(done_now)
  "$ctl" top --once >"$tmp/frame" 2>"$tmp/err" || fail "top --once: exit $?: $(cat "$tmp/err")"
  after=$(done_now)
  f=$(cat "$tmp/frame")
  ! grep -q $'\033' "$tmp/frame" || fail "top --once wrote escape bytes: $f"
  grep -Eq "^wavedd [^ ]+ at $url  up [0-9dhms]+  ready  [0-9]{2}:[0-9]{2}:[0-9]{2}\$" <<<"$f" ||
    fail "no header: $f"
  grep -q '^hash jobs: 1 running, 0 queued, 0 preparing;' <<<"$f" || fail "no job count: $f"
  grep -Eq '^DEVICE +BACKEND +STATE +QUEUE +BUSY +RATE +TEMP +POWER$' <<<"$f" ||
    fail "no device header: $f"
  # cpu0 runs the job: busy from 5 samples of which some found it running
  grep -Eq '^cpu0 +cpu +running +[0-9]+/64 +([1-9][0-9]?|100)% +[0-9.]+ [kMG]?H/s +- +-$' <<<"$f" ||
    fail "no running cpu0 row: $f"
  grep -Eq '^cpu1 +cpu +idle +0/64 +0% +- +- +-$' <<<"$f" || fail "no idle cpu1 row: $f"
  grep -Eq '^fk0 +fake +idle +0/[0-9]+ +0% +- +61C +143/300W$' <<<"$f" || fail "no fk0 row: $f"
  grep -q '^  fk0: throttled: sw_thermal$' <<<"$f" || fail "no throttle line: $f"
  row=$(grep -E "^$id " <<<"$f") || fail "no row for job $id: $f"
  [[ $row =~ ^$id\ +uid:$(id -u)\ +hash\ +running\ +\[([#-]{10})\]\ +([0-9.]+)%\ +[0-9.]+\ [kMG]?H/s\ +[0-9dhms]+\ +cpu0$ ]] ||
    fail "job row: $row"
  bar=${BASH_REMATCH[1]} pct=${BASH_REMATCH[2]}
  hashes=${bar//-/}
  # the percent is the job's done/total at the time top asked: between
  # the two jobs --json around it (one decimal, rounded); the bar has one
  # '#' per whole 10%
  awk -v p="$pct" -v b="$before" -v a="$after" -v h="${#hashes}" 'BEGIN {
      lo = b / 5e5; hi = a / 5e5
      exit !(p >= lo - 0.05 && p <= hi + 0.05 && h == int(p / 10)) }' ||
    fail "job $id at $pct% ('$bar'), done $before then $after of 5e7"
  # stdout not a terminal: the same one frame, without --once
  "$ctl" top >"$tmp/frame2" 2>"$tmp/err" || fail "top to a file: exit $?: $(cat "$tmp/err")"
  grep -q "^$id .* cpu0\$" "$tmp/frame2" || fail "top to a file: $(cat "$tmp/frame2")"
  [ "$(grep -c '^wavedd ' "$tmp/frame2")" -eq 1 ] || fail "top to a file: not one frame"
  # --json: the same frame; busy and unknowns as numbers and nulls
  before=$(done_now)
  j=$("$ctl" top --json) || fail "top --json: exit $?"
  after=$(done_now)
  grep -Eq '"name": "cpu0", "backend": "cpu", "state": "running", "fault": "", "queue_depth": [0-9]+, "queue_capacity": 64, "busy_percent": [1-9][0-9]*, "hash_rate": [0-9.e+]+, "temperature_c": null, "power_w": null, "power_limit_w": null, "throttle": null' <<<"$j" ||
    fail "top --json cpu0: $j"
  grep -q '"name": "cpu1", "backend": "cpu", "state": "idle", "fault": "", "queue_depth": 0, "queue_capacity": 64, "busy_percent": 0, "hash_rate": null, "temperature_c": null, "power_w": null, "power_limit_w": null, "throttle": null' <<<"$j" ||
    fail "top --json cpu1: $j"
  grep -q '"name": "fk0", .*"temperature_c": 61.4, "power_w": 142.6, "power_limit_w": 300, "throttle": "sw_thermal"}' <<<"$j" ||
    fail "top --json fk0: $j"
  d=$(grep -o "\"job\": $id, \"owner\": \"uid:$(id -u)\", \"kind\": \"hash\", \"state\": \"running\", \"done\": [0-9]*" <<<"$j" |
    grep -o '[0-9]*$') || fail "top --json job: $j"
  [ "$d" -ge "$before" ] && [ "$d" -le "$after" ] || fail "top --json: done $d not in $before..$after"
  # usage errors, and nobody there
  "$ctl" top --probe >/dev/null 2>&1; [ $? -eq 2 ] || fail "top --probe: not exit 2"
  "$ctl" status --once >/dev/null 2>&1; [ $? -eq 2 ] || fail "status --once: not exit 2"
  "$ctl" --url "ipc://$tmp/nobody.sock" top --once >/dev/null 2>"$tmp/err"
  [ $? -eq 3 ] || fail "top against nobody: not exit 3: $(cat "$tmp/err")"
  grep -q '^wavectl: IO: .*connection refused' "$tmp/err" || fail "nobody: $(cat "$tmp/err")"
else
  # live, in a pane of 120x30; the pane's shell writes the terminal's
  # settings before and after, and top's exit status
  pane() { "${T[@]}" capture-pane -p -t "$1"; }
  alt() { "${T[@]}" display -p -t "$1" '#{alternate_on}'; }
  live() {  # live NAME KEY: start top in pane NAME, end it with KEY
    "${T[@]}" new-session -d -s "$1" -x 120 -y 30 \
      "stty -g >'$tmp/$1.before'; '$ctl' --url '$url' top 2>'$tmp/$1.err'; echo \$? >'$tmp/$1.rc'; stty -g >'$tmp/$1.after'; exec sleep 600"
    drawn() { pane "$1" | grep -Eq "^$id +uid:$(id -u) +hash +running +\[[#-]{10}\] .* cpu0\$" &&
              pane "$1" | grep -Eq '^cpu0 +cpu +running +[0-9]+/64 +[0-9]+% '; }
    wait_for drawn "$1" || fail "pane $1: no job row with a busy share: $(pane "$1")"
    pane "$1" | grep -q '^q or Ctrl-C: quit' || fail "pane $1: no footer: $(pane "$1")"
    [ "$(alt "$1")" = 1 ] || fail "pane $1: top is not on the alternate screen"
    "${T[@]}" send-keys -t "$1" "$2"
    wait_for test -s "$tmp/$1.after" || fail "pane $1: top does not end on $2: $(pane "$1")"
    [ "$(cat "$tmp/$1.rc")" = 0 ] || fail "pane $1: exit $(cat "$tmp/$1.rc"): $(cat "$tmp/$1.err")"
    cmp -s "$tmp/$1.before" "$tmp/$1.after" ||
      fail "pane $1: terminal settings not restored: $(cat "$tmp/$1.before") -> $(cat "$tmp/$1.after")"
    [ "$(alt "$1")" = 0 ] || fail "pane $1: still on the alternate screen after $2"
    ! pane "$1" | grep -q "^$id " || fail "pane $1: the frame is left on the screen"
  }
  live q q
  live ctrlc C-c
  # a daemon that stops answering: top waits in a status call (its main
  # thread in a futex, seen in /proc); Ctrl-C once asks it to end when the
  # call returns, a second one gives the terminal back at once, exit 130
  "${T[@]}" new-session -d -s hung -x 120 -y 30 \
    "stty -g >'$tmp/hung.before'; '$ctl' --url '$url' top 2>'$tmp/hung.err'; echo \$? >'$tmp/hung.rc'; stty -g >'$tmp/hung.after'; exec sleep 600"
  wait_for eval 'pane hung | grep -q "^$id "' || fail "pane hung: no frame: $(pane hung)"
  tpid=$(pgrep -P "$("${T[@]}" display -p -t hung '#{pane_pid}')" wavectl)
  wchan=$(cat "/proc/$tpid/wchan" 2>/dev/null)
  if [ -z "$tpid" ] || [ -z "$wchan" ] || [ "$wchan" = 0 ]; then
    echo "ctl_top_test: /proc does not say where top waits: the second Ctrl-C is not tested"
    "${T[@]}" send-keys -t hung q
  else
    kill -STOP "$pid"
    wait_for eval 'grep -q futex "/proc/$tpid/wchan"' ||
      fail "top does not wait in a call on a stopped daemon: $(cat "/proc/$tpid/wchan")"
    "${T[@]}" send-keys -t hung C-c
    "${T[@]}" send-keys -t hung C-c
    wait_for test -s "$tmp/hung.after" || fail "pane hung: top does not end on two Ctrl-C"
    kill -CONT "$pid"
    [ "$(cat "$tmp/hung.rc")" = 130 ] || fail "pane hung: exit $(cat "$tmp/hung.rc"), not 130"
    cmp -s "$tmp/hung.before" "$tmp/hung.after" || fail "pane hung: terminal settings not restored"
    [ "$(alt hung)" = 0 ] || fail "pane hung: still on the alternate screen"
  fi
fi

"$ctl" cancel "$id" >/dev/null || fail "cancel $id"
if [ "$mode" = once ]; then  # a job over cpu0 and cpu1: each row's rate
  "$ctl" submit hash --pack small --nonce 0 --count 1000000000 \
    --devices cpu0,cpu1 --detach >"$tmp/sub2" || fail "submit over two: $(cat "$tmp/sub2")"
  id2=$(grep -o '^job [0-9]*' "$tmp/sub2" | cut -d' ' -f2)
  [ -n "$id2" ] || fail "no job id: $(cat "$tmp/sub2")"
  started2() { "$ctl" jobs --json | grep -Eq "\"job\": $id2, \"state\": \"running\", \"done\": [1-9]"; }
  wait_for started2 || fail "job $id2 does not start: $("$ctl" jobs --json)"
  "$ctl" top --once >"$tmp/frame3" 2>"$tmp/err" || fail "top --once: exit $?: $(cat "$tmp/err")"
  f=$(cat "$tmp/frame3")
  # cpu1 runs only the job over both: its pieces there make cpu1's rate
  # (a daemon before device_hashes left it "-", the rate on the job's row)
  for d in cpu0 cpu1; do
    grep -Eq "^$d +cpu +running +[0-9]+/64 +[0-9]+% +[0-9.]+ [kMG]?H/s +- +-\$" <<<"$f" ||
      fail "no rate on $d's row for the job over two devices: $f"
  done
  grep -Eq "^$id2 .* cpu0\+1\$" <<<"$f" || fail "job $id2's row: $f"
  grep -q '^(NAME+N: a job over N more devices)$' <<<"$f" || fail "the note: $f"
  j=$("$ctl" status --json) || fail "status --json: exit $?"
  for d in cpu0 cpu1; do
    grep -Eq "\"name\": \"$d\", .*\"hashes\": [1-9][0-9]*, \"hash_rate\": [0-9.e+]+," <<<"$j" ||
      fail "status --json: no hashes on $d: $j"
  done
  "$ctl" cancel "$id2" >/dev/null || fail "cancel $id2"
fi
if [ "$mode" = once ]; then  # wavectl bench (ctl_bench.c)
  small=(--nonces 20000 --rows 5000)
  export WAVE_PACKS_DIR=$src/config/packs  # the C reference's pack
  "$ctl" bench "${small[@]}" >"$tmp/bench" 2>"$tmp/err" ||
    fail "bench: exit $?: $(cat "$tmp/bench" "$tmp/err")"
  b=$(cat "$tmp/bench")
  ! grep -q $'\033' "$tmp/bench" || fail "bench wrote escape bytes: $b"
  ref=$(grep -Eo "^pack small, nonces \\[0, 20000\\), C reference \\($src/config/packs\\): [0-9a-f]{16}\$" <<<"$b" |
    grep -o '[0-9a-f]*$') || fail "bench header: $b"
  for d in "cpu0 +cpu" "cpu1 +cpu" "fk0 +fake"; do
    grep -Eq "^$d +ok +[0-9.]+ [kMG]?H/s +[0-9.]+ +$ref ok\$" <<<"$b" || fail "bench row $d: $b"
  done
  grep -q '^  fk0: 6 of 12 reductions not served (skipped)$' <<<"$b" || fail "bench fk0 skips: $b"
  "$ctl" bench --json "${small[@]}" --device fk0 >"$tmp/bench.json" || fail "bench --json: exit $?"
  python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
assert j["ok"] and j["packs_dir"].endswith("/config/packs"), j
assert len(j["devices"]) == 1, j
d = j["devices"][0]
assert d["device"] == "fk0" and d["hash"]["ok"] and d["reduce"]["ok"], d
assert d["hash"]["fingerprint"] == j["reference_fingerprint"], d
assert [r["result"] for r in d["reduce"]["runs"]] == ["ok"] * 6 + ["skipped"] * 6, d' \
    "$tmp/bench.json" || fail "bench --json: $(cat "$tmp/bench.json")"
  touch "$tmp/wrong"
  "$ctl" bench "${small[@]}" >"$tmp/bench" 2>"$tmp/err"
  rc=$? b=$(cat "$tmp/bench")
  rm -f "$tmp/wrong"
  [ $rc -eq 1 ] || fail "bench with wrong bits: exit $rc, not 1: $b $(cat "$tmp/err")"
  grep -Eq "^fk0 +fake +ok +[0-9.]+ [kMG]?H/s +[0-9.]+ +[0-9a-f]{16} FAILED\$" <<<"$b" || fail "bench fk0 FAILED: $b"
  grep -q '^  fk0: hash fingerprint differs from the reference$' <<<"$b" || fail "bench fk0 hash: $b"
  grep -q '^  fk0: sum float32 differs from the reference$' <<<"$b" || fail "bench fk0 sum: $b"
  grep -Eq "^cpu1 +cpu +ok .* $ref ok\$" <<<"$b" || fail "bench cpu1 with fk0 wrong: $b"
  "$ctl" bench --nonce 3 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bench --nonce: not exit 2"
  "$ctl" bench --device nosuch >/dev/null 2>"$tmp/err"
  [ $? -eq 1 ] && grep -q '^wavectl: NODEV: bench: no device' "$tmp/err" || fail "bench --device nosuch: $(cat "$tmp/err")"
fi
kill -TERM "$pid"
wait "$pid" || fail "wavedd exited $? on SIGTERM"
pid=
echo "ctl_top_test: $mode: ok"
