#!/usr/bin/env bash
# bench/soak.sh [BUILD_DIR] [SECONDS] [CLIENTS] - the soak benchmark.
#
# Starts BUILD_DIR/wavedd (default build/) in a temporary folder with two
# single-thread CPU devices and the closed pack, runs bench_soak with
# CLIENTS clients (default 16) for SECONDS (default 120): mixed
# reductions of every dtype/op, hash jobs, status and bad requests, every
# answer checked against the CPU reference (bench/bench_soak.c).  The
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
cat > "$dir/wavedd.yaml" <<YAML
listen: ["ipc://$dir/w.sock"]
log_level: warn
limits: {contexts: 64, max_parked: 256}
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
"$build/bench/bench_soak" "ipc://$dir/w.sock" "$secs" "$clients" \
  "$src/config/packs" 2>"$dir/soak.err" || rc=1
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
head -5 "$dir/soak.err" >&2 || true
awk -v n="$(wc -l < "$dir/rss")" '
  NR == 1 { first = $1 } NR == int(n / 10) + 1 { warm = $1 }
  { if ($1 > peak) peak = $1; last = $1 }
  END { printf "daemon RSS (KiB): first %d, after 10%% %d, peak %d, last %d (%d samples)\n",
               first, warm, peak, last, n }' "$dir/rss"
kill -TERM "$pid"
if wait "$pid"; then echo "wavedd stopped: exit 0"; else echo "wavedd exit $?"; rc=1; fi
pid=
exit $rc
