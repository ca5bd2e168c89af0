# tests/proc.sh - sourced by the shell tests: the end of a process that is
# not this shell's child (a detached wavedd), from /proc, never kill -0.
#   wv_running PID   true while PID has not exited: /proc/PID/stat's
#                    state, the field after the last ')', is not Z or X (a
#                    zombie has exited; where PID 1 does not reap, the
#                    detached daemon stays one)
#   wv_stop PID      SIGTERM, then wait up to 10 s for its end, so that
#                    nothing it still writes races a cleanup's rm -rf
#   wv_free_port [N] a loopback TCP port nothing listens on, below the
#                    kernel's ephemeral range (32768 and up by default), so
#                    that no outgoing connection's own port takes it between
#                    this pick and the listener's bind; with N, the first of
#                    N such ports in a row (all below that range)
#   wv_prometheus CONFIG DIR
#                    starts Debian's prometheus on such a port, its data and
#                    log (prom.log) in DIR; sets wv_prom_pid and
#                    wv_prom_port once /-/ready answers.  A port taken
#                    between the pick and the bind ("address already in
#                    use") is picked again, up to 5 times; any other exit
#                    fails (returns 1, the log kept)
wv_running() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  case ${s%% *} in Z|X) return 1 ;; esac
}

wv_stop() {
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 1 100); do wv_running "$1" || return 0; sleep 0.1; done
  return 1
}

wv_free_port() {
  local n=${1:-1} p i
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % (12000 - n)))
    for ((i = 0; i < n; i++)); do
      (exec 3<>"/dev/tcp/127.0.0.1/$((p + i))") 2>/dev/null && break
    done
    [ "$i" -eq "$n" ] && { echo "$p"; return; }
  done
  return 1
}

wv_prometheus() {
  local config=$1 dir=$2 try
  wv_prom_pid="" wv_prom_port=""
  for try in 1 2 3 4 5; do
    wv_prom_port=$(wv_free_port) || return 1
    prometheus --config.file="$config" --storage.tsdb.path="$dir/tsdb" \
      --web.listen-address="127.0.0.1:$wv_prom_port" >"$dir/prom.log" 2>&1 &
    wv_prom_pid=$!
    for _ in $(seq 1 300); do
      wv_running "$wv_prom_pid" || break
      curl -fsS "http://127.0.0.1:$wv_prom_port/-/ready" >/dev/null 2>&1 &&
        wv_running "$wv_prom_pid" && return 0
      sleep 0.2
    done
    if wv_running "$wv_prom_pid"; then return 1; fi  # up, never ready
    wait "$wv_prom_pid" 2>/dev/null || true
    wv_prom_pid=""
    grep -q 'address already in use' "$dir/prom.log" || return 1
    echo "wv_prometheus: port $wv_prom_port taken before its bind (try $try)" >&2
  done
  return 1
}
