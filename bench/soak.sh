#!/usr/bin/env bash
# bench/soak.sh [BUILD_DIR] [SECONDS] [CLIENTS] - the soak benchmark.
#
# Starts BUILD_DIR/wavedd (default build/) in a temporary folder with two
# single-thread CPU devices and the closed pack, runs bench_soak with
# CLIENTS clients (default 16) for SECONDS (default 120): mixed
# reductions of every dtype/op, hash jobs, status and bad requests,
# memfd regions (by descriptor), file regions and streams, every answer
# checked against the CPU reference (bench/bench_soak.c).  The principals,
# at the same time: CLIENTS clients over ipc (our uid); CLIENTS/4 (at
# least 1) over tcp with a generated 128-bit token (no regions over tcp:
# messages, streams, hash jobs); and, when run as root, CLIENTS/4 over ipc
# as the user nobody (a second uid with regions, file regions, streams and
# hash jobs of its own; SOAK_OTHER_UID=0 turns it off).  SOAK_WAVEDD names
# another wavedd binary (an ASan build's: build-asan/ has no benches).
#
# The daemon's memory is sampled every SOAK_SAMPLE_S (2) seconds from
# /proc/PID/status: VmRSS, and its parts RssAnon (heap: where a leak
# grows) and RssShmem (the memfd regions' pages it maps now).  Printed: a
# row every tenth of the run, then the verdict, on the second half of the
# run (the first half is warm-up: pools, caches, nng's and the allocator's
# arenas filling): the mean of its last quarter of samples minus the mean
# of its first quarter, for VmRSS and RssAnon; "flat" when RssAnon grew by
# at most 1 MiB or 1%, else "GROWS" and the exit status is 1.  Then the
# daemon is stopped with SIGTERM and must exit 0.  Exit 1 on a wrong or
# lost answer, RSS that grows, or an unclean stop.  Figures:
# docs/performance.md (issue 12).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
secs=${2:-120}
clients=${3:-16}
dir=$(mktemp -d /tmp/wave-soak.XXXXXX)
pid=
other=
[ "$(id -u)" = 0 ] && [ "${SOAK_OTHER_UID:-1}" != 0 ] &&
  getent passwd nobody >/dev/null && other=nobody
[ -n "$other" ] && chmod 0755 "$dir"  # nobody reaches the socket
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/soak.token")
cat > "$dir/wavedd.yaml" <<YAML
listen: ["ipc://$dir/w.sock", "tcp://127.0.0.1:$port"]
ipc_mode: 0666
allow_client_shm: true
log_level: warn
limits: {contexts: 64, max_parked: 256}
auth: {tokens: [{name: soak, file: $dir/soak.token}]}
packs: {dir: $src/config/packs, load: [closed]}
devices:
  - {name: cpu0, backend: cpu, threads: 1}
  - {name: cpu1, backend: cpu, threads: 1}
YAML
"${SOAK_WAVEDD:-$build/wavedd}" --config "$dir/wavedd.yaml" --foreground \
  2>"$dir/wavedd.log" &
pid=$!
for _ in $(seq 100); do [ -S "$dir/w.sock" ] && break; sleep 0.1; done
[ -S "$dir/w.sock" ] || { cat "$dir/wavedd.log"; exit 1; }
mem() {  # seconds since start, VmRSS, RssAnon, RssShmem (KiB)
  awk -v t="$SECONDS" '/^VmRSS:/ {r = $2} /^RssAnon:/ {a = $2}
    /^RssShmem:/ {h = $2} END {if (r != "") print t, r, a, h}' \
    "/proc/$pid/status"
}
SECONDS=0
: > "$dir/mem"
( while kill -0 "$pid" 2>/dev/null; do mem >> "$dir/mem" 2>/dev/null || true
    sleep "${SOAK_SAMPLE_S:-2}"; done ) &
sampler=$!
rc=0
tcp_clients=$(( clients / 4 > 0 ? clients / 4 : 1 ))
WAVE_TOKEN_FILE="$dir/soak.token" "$build/bench/bench_soak" \
  "tcp://127.0.0.1:$port" "$secs" "$tcp_clients" "$src/config/packs" \
  >"$dir/soak-tcp.out" 2>"$dir/soak-tcp.err" &
tcp=$!
ouid=
if [ -n "$other" ]; then
  ouid=$(id -u "$other")
  setpriv --reuid="$other" --regid="$(id -g "$other")" --clear-groups \
    "$build/bench/bench_soak" "ipc://$dir/w.sock" "$secs" "$tcp_clients" \
    "$src/config/packs" >"$dir/soak-other.out" 2>"$dir/soak-other.err" &
  oth=$!
fi
echo "ipc (uid $(id -u)), $clients clients:"
"$build/bench/bench_soak" "ipc://$dir/w.sock" "$secs" "$clients" \
  "$src/config/packs" 2>"$dir/soak.err" || rc=1
wait "$tcp" || rc=1
echo "tcp with a token, $tcp_clients clients:"
cat "$dir/soak-tcp.out"
head -5 "$dir/soak-tcp.err" >&2 || true
if [ -n "$other" ]; then
  wait "$oth" || rc=1
  echo "ipc as $other (uid $ouid), $tcp_clients clients:"
  cat "$dir/soak-other.out"
  head -5 "$dir/soak-other.err" >&2 || true
fi
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
head -5 "$dir/soak.err" >&2 || true
awk -v n="$(wc -l < "$dir/mem")" '
  { t[NR] = $1; r[NR] = $2; a[NR] = $3; h[NR] = $4 }
  END {
    if (n < 8) { print "daemon memory: too few samples (" n ")"; exit 0 }
    printf "daemon memory (KiB)   %6s %9s %9s %9s\n", "s", "VmRSS", "RssAnon", "RssShmem"
    for (k = 0; k <= 10; k++) {
      i = int(1 + (n - 1) * k / 10)
      printf "  %3d%% of the run     %6d %9d %9d %9d\n", k * 10, t[i], r[i], a[i], h[i]
    }
    # the second half: its first quarter of samples against its last
    lo = int(n / 2) + 1; q = int((n - lo + 1) / 4); if (q < 1) q = 1
    for (i = lo; i < lo + q; i++) { r1 += r[i]; a1 += a[i] }
    for (i = n - q + 1; i <= n; i++) { r2 += r[i]; a2 += a[i] }
    r1 /= q; r2 /= q; a1 /= q; a2 /= q
    lim = a1 / 100; if (lim < 1024) lim = 1024
    printf "second half (%d s to %d s, %d samples a quarter): VmRSS %+d KiB, RssAnon %+d KiB: %s\n",
           t[lo], t[n], q, r2 - r1, a2 - a1, (a2 - a1 <= lim) ? "flat" : "GROWS"
    exit (a2 - a1 <= lim) ? 0 : 1
  }' "$dir/mem" || rc=1
echo "daemon log: $(grep -c ' warn: ' "$dir/wavedd.log" || true) warn lines, $(grep -c ' error: ' "$dir/wavedd.log" || true) error lines"
grep -m3 -E ' (warn|error): ' "$dir/wavedd.log" >&2 || true
kill -TERM "$pid"
if wait "$pid"; then echo "wavedd stopped: exit 0"; else echo "wavedd exit $?"; rc=1; fi
pid=
exit $rc
