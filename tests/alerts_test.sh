#!/usr/bin/env bash
# tests/alerts_test.sh BUILD_DIR - contrib/'s alert rules and dashboard
# (ctest alerts_test, about 15 s):
#  1. `promtool check rules` and `promtool test rules` on
#     contrib/prometheus/wavedd-alerts.yml, and every alert of the rules has
#     a case in the test file;
#  2. a real wavedd-test (two fake devices that fault on their second step)
#     scraped by a real Prometheus (Debian's prometheus) that loads the
#     rules: every metric the rules and contrib/grafana/wavedd-dashboard.json
#     name is on the live page; every rule evaluates without error; with
#     both devices faulted WavedDeviceFaulted fires for each and
#     WavedNotReady is pending (its `for:` is 5 minutes); with fk0's health
#     feed hot and thermally throttled, WavedDeviceHot and
#     WavedDeviceThrottled are pending for fk0 alone; every query of the
#     dashboard runs on that Prometheus and returns series.
# Exit 77 (skipped) only where prometheus/promtool/curl/python3 are missing
# (.ci/deps.sh installs them).
set -euo pipefail
trap 'echo "alerts_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/tests/proc.sh"
for t in prometheus promtool curl python3; do
  command -v $t >/dev/null || { echo "alerts_test: no $t: skipped"; exit 77; }
done
rules=$src/contrib/prometheus/wavedd-alerts.yml
cases=$src/contrib/prometheus/wavedd-alerts.test.yml
dash=$src/contrib/grafana/wavedd-dashboard.json
tmp=$(mktemp -d /tmp/wave-alerts.XXXXXX)
dpid="" ppid=""
cleanup() {
  # Prometheus is a child (wait); wavedd detached itself (wv_stop): both
  # gone before their folder goes
  if [ -n "$ppid" ]; then kill "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null || true; fi
  if [ -n "$dpid" ]; then wv_stop "$dpid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "alerts_test: FAIL: $*" >&2
  [ ! -f "$tmp/prom.log" ] || tail -20 "$tmp/prom.log" >&2
  [ ! -f "$tmp/wavedd.log" ] || tail -20 "$tmp/wavedd.log" >&2
  exit 1
}

# ---- 1. promtool ---------------------------------------------------------
promtool check rules "$rules" || fail "promtool check rules"
promtool test rules "$cases" || fail "promtool test rules"
alerts=$(sed -n 's/^ *- alert: *//p' "$rules" | sort -u)
tested=$(sed -n 's/^ *alertname: *//p' "$cases" | sort -u)
[ -n "$alerts" ] || fail "no alert in $rules"
untested=$(comm -23 <(echo "$alerts") <(echo "$tested"))
[ -z "$untested" ] || fail "alerts without a promtool case: $untested"

# ---- 2. a real wavedd and a real Prometheus ----------------------------------
# fk0's health feed (docs/config.md, the fake backend): hot, and throttled
# for a thermal reason and for idle (idle alone never fires)
cat >"$tmp/fk0.health" <<FEED
temp_c 95
power_w 250
power_limit_w 300
sm_mhz 1410
mem_mhz 1593
throttle hw_thermal,idle
mem_used 1073741824
mem_total 85899345920
util_pct 97
FEED
cat >"$tmp/wavedd.yaml" <<CFG
listen: [ipc://$tmp/w.sock]
metrics: http://127.0.0.1:0
packs: {dir: $src/config/packs, load: [closed]}
devices:
  - {name: fk0, backend: fake, threads: 1, device: "fault_after=1,telemetry=$tmp/fk0.health"}
  - {name: fk1, backend: fake, threads: 1, device: "fault_after=1"}
CFG
"$build/wavedd-test" --config "$tmp/wavedd.yaml" 2>"$tmp/wavedd.log"
dpid=$(sed -n 's/^wavedd: running as pid \([0-9]*\)$/\1/p' "$tmp/wavedd.log")
murl=$(grep -o 'metrics on http://[^ ]*' "$tmp/wavedd.log" | cut -d' ' -f3)
[ -n "$dpid" ] && [ -n "$murl" ] || fail "wavedd-test did not start"
target=${murl#http://}; target=${target%/metrics}
export WAVE_URL=ipc://$tmp/w.sock
# a job of each kind first, and a refused one, so that every family has
# its series
red() { printf '1 2 3\n' | "$build/wavectl" submit reduce --op sum --dtype u32 \
          --format text --device "$1" --input - >/dev/null 2>&1; }
red fk0 || fail "the first reduction on fk0"
"$build/wavectl" submit hash --pack closed --nonce 0 --count 4096 --device fk1 >/dev/null ||
  fail "the hash job on fk1"
red nodev && fail "a reduction on a device that does not exist was served"

# every metric the rules and the dashboard name is on the page
curl -fsS "$murl" >"$tmp/page.txt"
python3 - "$rules" "$dash" "$tmp/page.txt" <<'PY' || fail "a name the rules or the dashboard use is not on the page"
import json, re, sys
rules, dash, page = (open(p).read() for p in sys.argv[1:])
exprs = re.findall(r'^\s*expr:\s*(.*?)(?=^\s*(?:for|labels):)', rules, re.M | re.S)
exprs += [t["expr"] for p in json.loads(dash)["panels"] for t in p["targets"]]
names = {n for e in exprs for n in re.findall(r'\b((?:wavedd|process)_[a-z0-9_]+)', e)}
typed = set(re.findall(r'^# TYPE (\S+)', page, re.M))
base = lambda n: re.sub(r'_(bucket|sum|count)$', '', n)
missing = sorted(n for n in names if n not in typed and base(n) not in typed)
print("alerts_test: %d wavedd_ and process_ names in the rules and the dashboard" % len(names), flush=True)
if missing:
    print("alerts_test: not on the page: " + " ".join(missing), file=sys.stderr)
    sys.exit(1)
PY

cp "$rules" "$tmp/"
cat >"$tmp/prometheus.yml" <<CFG
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [wavedd-alerts.yml]
scrape_configs:
  - job_name: wavedd
    static_configs: [{targets: ["$target"]}]
CFG
promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool check config"
wv_prometheus "$tmp/prometheus.yml" "$tmp" || { ppid=$wv_prom_pid; fail "prometheus did not start"; }
ppid=$wv_prom_pid pport=$wv_prom_port
api=http://127.0.0.1:$pport/api/v1
q() { curl -fsS --get "$api/query" --data-urlencode "query=$1"; }
# until the query's result holds the text, at most 60 s
wait_for() {
  local out=""
  for _ in $(seq 1 300); do
    kill -0 "$ppid" 2>/dev/null || fail "prometheus exited"
    out=$(q "$1" 2>/dev/null || true)
    grep -q -- "$2" <<<"$out" && return 0
    sleep 0.2
  done
  fail "query $1: no $2 in $out"
}
wait_for 'wavedd_ready{job="wavedd"}' '"value":\[[0-9.]*,"1"\]'

# both devices fault on their second step: the daemon is not ready
red fk0 && fail "fk0 did not fault"
red fk1 && fail "fk1 did not fault"
wait_for 'wavedd_ready{job="wavedd"}' '"value":\[[0-9.]*,"0"\]'
wait_for 'ALERTS{alertname="WavedDeviceFaulted",alertstate="firing",device="fk0"}' '"value"'
wait_for 'ALERTS{alertname="WavedDeviceFaulted",alertstate="firing",device="fk1"}' '"value"'
wait_for 'ALERTS{alertname="WavedNotReady",alertstate="pending"}' '"value"'
# fk0's feed: hot and thermally throttled (pending: 5 and 10 minutes)
wait_for 'ALERTS{alertname="WavedDeviceHot",alertstate="pending",device="fk0"}' '"value"'
wait_for 'ALERTS{alertname="WavedDeviceThrottled",alertstate="pending",device="fk0"}' '"value"'
n=$(q 'count(ALERTS{alertname=~"WavedDeviceHot|WavedDeviceThrottled"})' | grep -o '"value":\[[0-9.]*,"[0-9]*"\]' || true)
grep -q ',"2"\]' <<<"$n" || fail "health alerts beyond fk0's two: $n"
# nothing else fires: the daemon is up, its queues empty, no job failed
# beyond the two faults... which are 2 of 4 jobs: the error rate rule's
# floor (a job a minute over 5 minutes) keeps it quiet
firing=$(q 'ALERTS{alertstate="firing"}' | python3 -c '
import json, sys
print(" ".join(sorted({r["metric"]["alertname"] for r in json.load(sys.stdin)["data"]["result"]})))')
[ "$firing" = WavedDeviceFaulted ] || fail "firing: $firing"
# every rule evaluated without error
curl -fsS "$api/rules" | python3 -c '
import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
bad = [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
print("alerts_test: %d rules loaded, all healthy" % len(rules) if not bad else bad)
sys.exit(1 if bad or not rules else 0)' || fail "a rule does not evaluate"

# the dashboard's queries, with Grafana's variables as Grafana fills them
python3 - "$dash" "$api" <<'PY' || fail "a dashboard query"
import json, sys, time, urllib.parse, urllib.request
dash, api = json.load(open(sys.argv[1])), sys.argv[2]
n = 0
for p in dash["panels"]:
    for t in p["targets"]:
        e = t["expr"].replace("$__rate_interval", "1m").replace("$instance", ".*")
        url = api + "/query?" + urllib.parse.urlencode({"query": e})
        # a rate() has series once two scrapes hold its counter, which the
        # faults above created a scrape ago at the least: ask again (30 s)
        for _ in range(150):
            r = json.load(urllib.request.urlopen(url))
            if r["status"] != "success" or r["data"]["result"]:
                break
            time.sleep(0.2)
        if r["status"] != "success" or not r["data"]["result"]:
            print("alerts_test: panel '%s': %s: %s" % (p["title"], e, r), file=sys.stderr)
            sys.exit(1)
        n += 1
print("alerts_test: %d dashboard queries answered with series" % n)
PY
echo "alerts_test: ok"
