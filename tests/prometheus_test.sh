#!/usr/bin/env bash
# tests/prometheus_test.sh BUILD_DIR - a real Prometheus server (Debian's
# prometheus) scrapes a running wavedd's /metrics; its query API must return
# the series the daemon counted (jobs, the duration histogram through
# histogram_quantile, a device's health), and `promtool check metrics` must
# accept the page, the health families included: the daemon is wavedd-test
# (wavedd plus the fake backend), whose fake device reads a telemetry feed
# (workers/fake/fake.c).  /livez and /readyz answer 200 beside /metrics.
# About 10 s.  Exit 77 (skipped) only where prometheus/promtool/curl are not
# installed (.ci/deps.sh installs them).
set -euo pipefail
# a command that fails under set -e says where, not just the exit status
trap 'echo "prometheus_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build=$(cd "$1" && pwd)
. "$(dirname "$0")/skip.sh"
. "$(dirname "$0")/proc.sh"
for t in prometheus promtool curl; do
  command -v $t >/dev/null || wv_skip "no $t"
done
tmp=$(mktemp -d /tmp/wave-prom.XXXXXX)
dpid="" ppid=""
cleanup() {
  # Prometheus is a child (wait); wavedd detached itself (wv_stop): both
  # gone before their folder goes
  if [ -n "$ppid" ]; then kill "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null || true; fi
  if [ -n "$dpid" ]; then wv_stop "$dpid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "prometheus_test: $*" >&2; [ -f "$tmp/prom.log" ] && tail -20 "$tmp/prom.log" >&2; exit 1; }

cat > "$tmp/wavedd.yaml" <<CFG
listen: [ipc://$tmp/w.sock]
metrics: http://127.0.0.1:0
packs: {dir: $WAVE_SOURCE_DIR/config/packs, load: [closed]}
devices:
  - {name: cpu0, backend: cpu, threads: 1}
  - {name: fk0, backend: fake, threads: 1, device: "telemetry=$tmp/feed"}
CFG
printf 'temp_c 66\npower_w 123.5\npower_limit_w 300\nthrottle sw_thermal\n' >"$tmp/feed"
"$build/wavedd-test" --config "$tmp/wavedd.yaml" 2>"$tmp/wavedd.log"
dpid=$(sed -n 's/^wavedd: running as pid \([0-9]*\)$/\1/p' "$tmp/wavedd.log")
murl=$(grep -o 'metrics on http://[^ ]*' "$tmp/wavedd.log" | cut -d' ' -f3)
[ -n "$dpid" ] && [ -n "$murl" ] || fail "wavedd did not start: $(cat "$tmp/wavedd.log")"
target=${murl#http://}; target=${target%/metrics}

export WAVE_URL=ipc://$tmp/w.sock
printf '1 2 3 4 5\n' | "$build/wavectl" submit reduce --op sum --dtype u32 \
  --format text --input - >/dev/null
"$build/wavectl" submit hash --pack closed --nonce 0 --count 50000 >/dev/null

# the page (rendered once a second) counts both jobs and is valid
# exposition format
for _ in $(seq 1 300); do
  curl -fsS "$murl" > "$tmp/page.txt"
  grep -q '^wavedd_hashes_total{device="cpu0"} 50000$' "$tmp/page.txt" && break
  sleep 0.1
done
promtool check metrics < "$tmp/page.txt" || fail "promtool check metrics"
grep -q '^wavedd_jobs_total{device="cpu0",kind="reduce",outcome="ok"} 1$' "$tmp/page.txt" ||
  fail "the page does not count the reduction: $(grep jobs_total "$tmp/page.txt")"
grep -q '^wavedd_device_temperature_celsius{device="fk0"} 66$' "$tmp/page.txt" ||
  fail "no health of fk0: $(grep fk0 "$tmp/page.txt" | head)"
base=${murl%/metrics}
[ "$(curl -fsS "$base/livez")" = ok ] || fail "/livez"
[ "$(curl -fsS "$base/readyz")" = ready ] || fail "/readyz"

# a Prometheus server scrapes it
cat > "$tmp/prometheus.yml" <<CFG
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: wavedd
    static_configs: [{targets: ["$target"]}]
CFG
promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool check config"
wv_prometheus "$tmp/prometheus.yml" "$tmp" || { ppid=$wv_prom_pid; fail "prometheus did not start"; }
ppid=$wv_prom_pid pport=$wv_prom_port
api="http://127.0.0.1:$pport/api/v1/query"
q='wavedd_jobs_total{job="wavedd",device="cpu0",kind="reduce",outcome="ok"}'
got=""
for _ in $(seq 1 600); do
  kill -0 "$ppid" 2>/dev/null || fail "prometheus exited"
  got=$(curl -fsS --get "$api" --data-urlencode "query=$q" 2>/dev/null || true)
  echo "$got" | grep -q '"value":\[[0-9.]*,"1"\]' && break
  sleep 0.2
done
echo "$got" | grep -q '"value":\[[0-9.]*,"1"\]' || fail "no scraped series $q: $got"
h=$(curl -fsS --get "$api" --data-urlencode 'query=wavedd_hashes_total{device="cpu0"}')
echo "$h" | grep -q '"value":\[[0-9.]*,"50000"\]' || fail "hashes not scraped: $h"
t=$(curl -fsS --get "$api" --data-urlencode 'query=wavedd_device_throttled{device="fk0",reason="sw_thermal"}')
echo "$t" | grep -q '"value":\[[0-9.]*,"1"\]' || fail "throttling not scraped: $t"
q='histogram_quantile(0.5, wavedd_job_duration_seconds_bucket{device="cpu0",kind="reduce",phase="total"})'
hq=$(curl -fsS --get "$api" --data-urlencode "query=$q")
echo "$hq" | grep -q '"value":\[[0-9.]*,"[0-9.e-]*"\]' || fail "no quantile of the histogram: $hq"
up=$(curl -fsS --get "$api" --data-urlencode 'query=up{job="wavedd"}')
echo "$up" | grep -q '"value":\[[0-9.]*,"1"\]' || fail "target not up: $up"
echo "prometheus_test: ok (Prometheus scraped $murl)"
