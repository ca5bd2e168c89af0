#!/usr/bin/env bash
# bench/device-service.sh - what an operator sees of wavedd on the GPU
# machine: the probes, the metrics page, device health read through NVML
# beside nvidia-smi of the same moments, `wavectl top --once`, and the
# shuffle hash exchange's test entries (CI's lavapipe and PoCL skip them).
# bench/device-run.sh calls it as its "service" step; alone:
#
#   bench/device-service.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR holds wavedd, wavectl and tests/test_vulkan, tests/test_opencl
# (bench/device-bundle.sh copies them).  Checks, each a line "ok ..." or
# "FAIL ...":
#   - /livez and /readyz answer 200 once `wavectl status --probe` does;
#   - every GPU device (cuda0, vk0, ocl0 on NVIDIA's OpenCL) names NVML as
#     its health source, and has every field (temperature, power and limit,
#     clocks, throttle, memory used and total, utilisation);
#   - temperature and power, idle and under a hash job, within 5% of
#     nvidia-smi: five samples of each, two seconds apart (the daemon reads
#     health every 2 s), compared by their medians;
#   - the metrics page carries the health series of every GPU device;
#   - test_vulkan_shuffle and test_opencl_shuffle run (not skip) and pass.
# Exit status 0 when every check passed; the last lines are a short table.
set -uo pipefail
B=${1:?build folder}
OUT=${2:?output folder}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
sockdir=$(mktemp -d /tmp/wavedd-svc.XXXXXX)
trap 'rm -rf "$sockdir"' EXIT
url=ipc://$sockdir/w.sock
port=${WAVE_SERVICE_METRICS_PORT:-19464}
icd=/etc/OpenCL/vendors/nvidia.icd
cfg=$OUT/service.yaml
cat >"$cfg" <<EOF
listen:
  - $url
metrics: http://127.0.0.1:$port
log_level: info
packs:
  dir: $root/config/packs
devices:
  - name: cuda0
    backend: cuda
    index: 0
  - name: vk0
    backend: vulkan
    index: 0
EOF
if [ -f "$icd" ]; then
  printf '  - name: ocl0\n    backend: opencl\n    index: 0\n' >>"$cfg"
  export OCL_ICD_VENDORS=$icd   # NVIDIA's platform alone, not PoCL's
fi

fails=0
table=()
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
ctl() { timeout 120 "$B/wavectl" --url "$url" "$@"; }
http() { python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=5)
    print(r.status); sys.stdout.write(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code); sys.stdout.write(e.read().decode())
except Exception as e:
    print(0); print(e)
PY
}

"$B/wavedd" --config "$cfg" --foreground 2>"$OUT/service-wavedd.log" &
pid=$!
for _ in $(seq 1 600); do
  ctl status --probe && break
  [ -d /proc/$pid ] || break
  sleep 0.1
done
if ! ctl status >"$OUT/service-status.txt" 2>&1; then
  bad "wavedd did not come up"; tail -n 20 "$OUT/service-wavedd.log"
  kill $pid 2>/dev/null; exit 1
fi
for p in livez readyz; do
  code=$(http "http://127.0.0.1:$port/$p" | sed -n 1p)
  [ "$code" = 200 ] && ok "/$p 200 after the probe" || bad "/$p answered $code"
  table+=("/$p|$code")
done
cat "$OUT/service-status.txt"

# samples: nvidia-smi and the daemon's status, five of each, 2 s apart
sample() {
  local tag=$1
  for i in 1 2 3 4 5; do
    nvidia-smi --query-gpu=temperature.gpu,power.draw,power.limit \
      --format=csv,noheader,nounits -i 0 >>"$OUT/smi-$tag.csv"
    ctl status --json >"$OUT/status-$tag-$i.json"
    sleep 2
  done
}
sample idle
job=$(ctl submit hash --pack small --nonce 0 --count 17592186044416 \
      --device cuda0 --detach | cut -d' ' -f2)
sleep 4
sample busy
[ -n "$job" ] && ctl cancel "$job" >/dev/null
ctl top --once >"$OUT/top.txt" 2>&1 && ok "wavectl top --once" ||
  bad "wavectl top --once"
cat "$OUT/top.txt"
http "http://127.0.0.1:$port/metrics" >"$OUT/metrics.txt"

cmp=$(python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
out = sys.argv[1]
fields = ["temperature_c", "power_w", "power_limit_w", "sm_clock_mhz",
          "mem_clock_mhz", "throttle", "memory_used", "memory_total",
          "utilization_pct"]
for tag in ("idle", "busy"):
    smi = [l.split(",") for l in open(f"{out}/smi-{tag}.csv") if l.strip()]
    st, sp = (statistics.median(float(r[k]) for r in smi) for k in (0, 1))
    per = {}
    for f in sorted(glob.glob(f"{out}/status-{tag}-*.json")):
        for d in json.load(open(f))["devices"]:
            per.setdefault(d["name"], []).append(d.get("health", {}))
    for name, hs in per.items():
        src = hs[-1].get("source")
        missing = [k for k in fields if k not in hs[-1]]
        t = [h["temperature_c"] for h in hs if "temperature_c" in h]
        p = [h["power_w"] for h in hs if "power_w" in h]
        if not t or not p:
            print(f"FAIL {tag} {name}: source {src}, no temperature/power "
                  f"({hs[-1].get('note')})"); continue
        dt = statistics.median(t) / st - 1 if st else 0
        dp = statistics.median(p) / sp - 1 if sp else 0
        verdict = "ok  " if abs(dt) <= .05 and abs(dp) <= .05 and \
            src == "nvml" and not missing else "FAIL"
        print(f"{verdict} {tag} {name}: source {src}, temp "
              f"{statistics.median(t):.0f} vs smi {st:.0f} C ({dt:+.1%}), "
              f"power {statistics.median(p):.1f} vs smi {sp:.1f} W ({dp:+.1%})"
              + (f", missing {missing}" if missing else ""))
PY
)
echo "$cmp"
fails=$((fails + $(grep -c '^FAIL' <<<"$cmp")))
while read -r line; do table+=("${line#* }|${line%% *}"); done <<<"$cmp"
for d in cuda0 vk0; do
  grep -q "wavedd_device_temperature_celsius{device=\"$d\"" "$OUT/metrics.txt" &&
    ok "metrics: $d temperature" || bad "metrics: no temperature of $d"
done
kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"

# the shuffle exchange's entries, as ctest runs them, on the GPU
for s in vulkan opencl; do
  bin=$B/tests/test_$s
  [ -x "$bin" ] || { bad "test_${s}_shuffle: $bin not built"; continue; }
  env WAVE_SOURCE_DIR="$root" CK_RUN_CASE=shuffle \
      WAVE_TEST_NAME="test_${s}_shuffle" \
      "$bin" >"$OUT/test_${s}_shuffle.log" 2>&1
  rc=$?
  # 77 is the suite's skip: the device lacks the shuffle (NVIDIA's OpenCL
  # lists no sub-group shuffle extension), which is a finding, not a fault
  case $rc in
    0) ok "test_${s}_shuffle ran and passed" ;;
    77) echo "skip $(grep -m1 '^SKIP' "$OUT/test_${s}_shuffle.log")" ;;
    *) bad "test_${s}_shuffle rc=$rc: $(tail -n 2 "$OUT/test_${s}_shuffle.log")" ;;
  esac
  table+=("test_${s}_shuffle|rc=$rc")
done

echo "---- service: $fails failed"
printf '%s\n' "${table[@]}" | tr '|' '\t'
[ $fails -eq 0 ]
