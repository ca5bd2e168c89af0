# tests/proc.sh - sourced by the shell tests: the end of a process that is
# not this shell's child (a detached wavedd), from /proc, never kill -0.
#   wv_running PID   true while PID has not exited: /proc/PID/stat's
#                    state, the field after the last ')', is not Z or X (a
#                    zombie has exited; where PID 1 does not reap, the
#                    detached daemon stays one)
#   wv_stop PID      SIGTERM, then wait up to 10 s for its end, so that
#                    nothing it still writes races a cleanup's rm -rf
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
