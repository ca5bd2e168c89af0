#!/usr/bin/env bash
# bench/soak.sh [BUILD_DIR] [SECONDS] [CLIENTS] - the soak benchmark.
#
# Starts BUILD_DIR/wavedd (default build/) in a temporary folder with two
# single-thread CPU devices and the closed pack, runs bench_soak with
# CLIENTS clients (default 16) for SECONDS (default 120): mixed
# reductions of every dtype/op, hash jobs, status and bad requests,
# memfd regions (by descriptor), file regions and streams, every answer
# checked against the CPU reference (bench/bench_soak.c).  Two principals:
# CLIENTS clients over ipc (our uid) and CLIENTS/4 (at least 1) over tcp
# with a generated 128-bit token, at the same time.  The
# daemon's resident memory (VmRSS) is sampled every 2 s and summarised
# (first sample, after 10% of the run, peak, last), then the daemon is
# stopped with SIGTERM and must exit 0.  Exit 1 on a wrong or lost answer
# or an unclean stop.  Figures: docs/performance.md (issue 12).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
secs=${2:-120}
clients=${3:-16}
dir=$(mktemp -d /tmp/wave-soak.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/soak.token")
cat > "$dir/wavedd.yaml" <<YAML
listen: ["ipc://$dir/w.sock", "tcp://127.0.0.1:$port"]
log_level: warn
limits: {contexts: 64, max_parked: 256}
auth: {tokens: [{name: soak, file: $dir/soak.token}]}
packs: {dir: $src/config/packs, load: [closed]}
devices:
  - {name: cpu0, backend: cpu, threads: 1}
  - {name: cpu1, backend: cpu, threads: 1}
YAML
"$build/wavedd" --config "$dir/wavedd.yaml" --foreground 2>"$dir/wavedd.log" &
pid=$!
for _ in $(seq 100); do [ -S "$dir/w.sock" ] && break; sleep 0.1; done
[ -S "$dir/w.sock" ] || { cat "$dir/wavedd.log"; exit 1; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
: > "$dir/rss"
( while kill -0 "$pid" 2>/dev/null; do rss >> "$dir/rss" || true; sleep 2; done ) &
sampler=$!
rc=0
tcp_clients=$(( clients / 4 > 0 ? clients / 4 : 1 ))
WAVE_TOKEN_FILE="$dir/soak.token" "$build/bench/bench_soak" \
  "tcp://127.0.0.1:$port" "$secs" "$tcp_clients" "$src/config/packs" \
  >"$dir/soak-tcp.out" 2>"$dir/soak-tcp.err" &
tcp=$!
echo "ipc (uid $(id -u)), $clients clients:"
"$build/bench/bench_soak" "ipc://$dir/w.sock" "$secs" "$clients" \
  "$src/config/packs" 2>"$dir/soak.err" || rc=1
wait "$tcp" || rc=1
echo "tcp with a token, $tcp_clients clients:"
cat "$dir/soak-tcp.out"
head -5 "$dir/soak-tcp.err" >&2 || true
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
head -5 "$dir/soak.err" >&2 || true
awk -v n="$(wc -l < "$dir/rss")" '
  NR == 1 { first = $1 } NR == int(n / 10) + 1 { warm = $1 }
  NR == int(n / 2) + 1 { mid = $1 }
  { if ($1 > peak) peak = $1; last = $1 }
  END { printf "daemon RSS (KiB): first %d, after 10%% %d, middle %d, peak %d, last %d (%d samples)\n",
               first, warm, mid, peak, last, n }' "$dir/rss"
echo "daemon log: $(grep -c ' warn: ' "$dir/wavedd.log" || true) warn lines, $(grep -c ' error: ' "$dir/wavedd.log" || true) error lines"
grep -m3 -E ' (warn|error): ' "$dir/wavedd.log" >&2 || true
kill -TERM "$pid"
if wait "$pid"; then echo "wavedd stopped: exit 0"; else echo "wavedd exit $?"; rc=1; fi
pid=
exit $rc
