#!/usr/bin/env bash
# bench/device-daemon.sh - wavedd itself on the GPU machine: one daemon with
# a CPU, a CUDA and a Vulkan device, driven by wavectl over ipc, the way a
# user runs it.  bench/device-run.sh calls it as its "daemon" step; it can
# also run alone:
#
#   bench/device-daemon.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR holds wavedd and wavectl (and libwaveclient next to wavectl or
# in LD_LIBRARY_PATH).  Checks, each a line "ok ..." or "FAIL ...":
#   - every device opens and passes its start-up self-check per pack
#     (wavectl status / packs);
#   - the same reductions (u32 sum and max over 2^24 random rows, f32 sum
#     and extent over 2^20 floats of mixed sign and scale; u64 sum, s64
#     max, u64 argmax of the same bytes, f64 sum and argmin and f32 argmax
#     of the same text) on every device give the same bits (and index);
#   - every pack's known answer (2^13 nonces from 0: one segment, whose
#     fingerprint is the pack's batch_fnv) on every device;
#   - one larger hash job (2^26 nonces, a target) gives the same
#     job fingerprint, winners and best nonce on the CUDA and Vulkan devices;
#   - end to end (issue 9): `wavectl submit hash --pack main` over 2^30
#     nonces (WAVE_DAEMON_E2E_COUNT) on cuda0, on vk0 and on
#     cpu0+cuda0+vk0, each timed by the wall clock around wavectl, beside
#     the same build's kernel benches (the hash and vulkan steps' logs of
#     device-run.sh, found in KERNEL_LOGS, default OUT_DIR/..; run here when
#     absent): ratios end-to-end / kernel, and multi / fastest single; the
#     multi-device job must give the same bits as cuda0 alone;
#   - SIGTERM stops the daemon with exit status 0.
# Every wavectl call runs under `timeout` (WAVE_DAEMON_CALL_LIMIT_S, 240 s);
# logs and JSON results go to OUT_DIR.  Exit status 0 when every check
# passed.
set -uo pipefail
B=${1:?build folder}
OUT=${2:?output folder}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
sockdir=$(mktemp -d /tmp/wavedd-gpu.XXXXXX)  # private: wavedd refuses world-writable /tmp
trap 'rm -rf "$sockdir"' EXIT
sock=$sockdir/w.sock
url=ipc://$sock
cfg=$OUT/daemon.yaml
cat >"$cfg" <<EOF
listen:
  - $url
log_level: info
limits:
  max_request_bytes: 134217728
  max_job_rows: 16777216
packs:
  dir: $root/config/packs
devices:
  - name: cpu0
    backend: cpu
  - name: cuda0
    backend: cuda
    index: 0
  - name: vk0
    backend: vulkan
    index: 0
EOF

fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
lim=${WAVE_DAEMON_CALL_LIMIT_S:-240}
ctl() { timeout "$lim" "$B/wavectl" --url "$url" --timeout 120000 "$@"; }

"$B/wavedd" --config "$cfg" --foreground 2>"$OUT/wavedd.log" &
pid=$!
for _ in $(seq 1 600); do
  ctl status >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
if ! ctl status >"$OUT/status.txt" 2>&1; then
  bad "wavedd did not come up (wavedd.log below)"
  tail -n 20 "$OUT/wavedd.log"
  kill $pid 2>/dev/null
  exit 1
fi
# Start-up preparation and self-checks run on each device's thread; wait
# until the daemon says it is ready.
for _ in $(seq 1 1800); do
  ctl status --json >"$OUT/status.json" 2>&1 || break
  grep -q '"ready": true' "$OUT/status.json" && break
  sleep 0.1
done
ctl status >"$OUT/status.txt" 2>&1
cat "$OUT/status.txt"
for d in cpu0 cuda0 vk0; do
  st=$(awk -v d="$d" '$1 == d { on = 1; next } /^[^ ]/ { on = 0 }
                      on && $1 == "state" { $1 = ""; print; exit }' "$OUT/status.txt")
  case "$st" in *running* | *idle*) ok "device $d is up:$st" ;; *) bad "device $d:$st" ;; esac
  n_ok=$(awk -v d="$d" '$1 == d { on = 1; next } /^[^ ]/ { on = 0 }
                        on && $1 == "pack" && $3 == "ok" { n++ } END { print n + 0 }' \
         "$OUT/status.txt")
  [ "$n_ok" = 3 ] && ok "device $d: 3 packs pass their self-checks" ||
    bad "device $d: $n_ok of 3 packs pass their self-checks"
done

# Inputs: random u32 rows (raw), floats of mixed sign over 40 binades (text).
u32=$OUT/u32.raw
f32=$OUT/f32.txt
head -c $((4 << 24)) /dev/urandom >"$u32"
awk 'BEGIN { srand(7); for (i = 0; i < 1048576; i++)
       printf "%.9g\n", (rand() - 0.5) * 2 ^ (int(rand() * 40) - 20) }' >"$f32"

# reduce LABEL ARGS...: run on every device, compare the JSON results.
reduce() {
  local label=$1 first="" r n=0
  shift
  for d in cpu0 cuda0 vk0; do
    if ! r=$(ctl submit reduce "$@" --device "$d" --json 2>&1); then
      bad "reduce $label on $d: $r"
      continue
    fi
    r=$(printf '%s' "$r" | grep -o '"bits": *\[[^]]*\]\|"index": *-*[0-9]*' | tr '\n' ' ')
    echo "     $label on $d: $r"
    if [ -z "$first" ]; then first=$r
    elif [ "$r" != "$first" ]; then bad "reduce $label: $d differs"; return
    fi
    n=$((n + 1))
  done
  [ $n = 3 ] && ok "reduce $label: same bits on cpu0, cuda0, vk0"
}
reduce "u32 sum 2^24" --op sum --dtype uint32 --format raw --input "$u32"
reduce "u32 max 2^24" --op max --dtype uint32 --format raw --input "$u32"
reduce "f32 sum 2^20" --op sum --dtype float32 --format text --input "$f32"
reduce "f32 extent 2^20" --op extent --dtype float32 --format text --input "$f32"
# the 64-bit dtypes and argmin/argmax (issue 23): the same bytes as 2^23
# 8-byte rows, the same text as float64
reduce "u64 sum 2^23" --op sum --dtype uint64 --format raw --input "$u32"
reduce "s64 max 2^23" --op max --dtype sint64 --format raw --input "$u32"
reduce "u64 argmax 2^23" --op argmax --dtype uint64 --format raw --input "$u32"
reduce "f64 sum 2^20" --op sum --dtype float64 --format text --input "$f32"
reduce "f64 argmin 2^20" --op argmin --dtype float64 --format text --input "$f32"
reduce "f32 argmax 2^20" --op argmax --dtype float32 --format text --input "$f32"

# Known answers: docs/hash.md (each pack's batch_fnv).
for pk in main:81df88bbe8eb581d small:316e6eea0f3d12db closed:57a520b5d26aa046; do
  p=${pk%%:*} want=${pk#*:}
  for d in cpu0 cuda0 vk0; do
    r=$(ctl submit hash --pack "$p" --nonce 0 --count 8192 --device "$d" \
          --segments --json 2>&1)
    if printf '%s' "$r" | grep -q "\"segments\": *\[\"$want\"\]"; then
      ok "hash $p known answer on $d"
    else
      bad "hash $p on $d: $r"
    fi
  done
done

# One larger job on both GPUs: fingerprint, winners, best nonce must agree.
count=${WAVE_DAEMON_HASH_COUNT:-67108864}
big=()
for d in cuda0 vk0; do
  t0=$(date +%s.%N)
  r=$(ctl submit hash --pack main --nonce 0x100000000 --count "$count" \
        --target 0000100000000000 --max-winners 8 --device "$d" --json 2>&1)
  t1=$(date +%s.%N)
  echo "     hash main $count on $d ($(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s): $r"
  big+=("$(printf '%s' "$r" | grep -o '"job_fingerprint".*"winner_count": *[0-9]*')")
done
if [ "${big[0]}" = "${big[1]}" ] && printf '%s' "${big[0]}" | grep -q fingerprint; then
  ok "hash main $count: cuda0 and vk0 agree"
else
  bad "hash main $count: cuda0 and vk0 differ"
fi

# ---- end to end against the kernels (issue 9) ----------------------------
KL=${KERNEL_LOGS:-$(dirname "$OUT")}
hlog=$KL/hash.log vlog=$KL/vulkan.log
if [ ! -s "$hlog" ] && [ -x "$B/bench/wvbench-gpu-hash" ]; then
  hlog=$OUT/kernel-hash.log
  timeout 300 "$B/bench/wvbench-gpu-hash" "$root/config/packs" >"$hlog" 2>&1
fi
if [ ! -s "$vlog" ]; then
  vk=$(find "$B/bench" -maxdepth 1 -name "wvbench-vulkan*" -type f 2>/dev/null | head -n 1)
  if [ -n "$vk" ]; then
    vlog=$OUT/kernel-vulkan.log
    timeout 300 "$vk" >"$vlog" 2>&1
  fi
fi
# The baselines: CUDA's default kernel (the per-pack NVRTC one when the
# bench has it, else the interpreter), kernel alone; Vulkan's best figure,
# the larger of hash() and hash_batch at any size (hash_batch is kernel +
# device fold, so the kernel alone is at least that fast).
kc=$(awk -F'|' '$2 ~ /shuffle \(auto\), nvrtc, kernel/ { gsub(/ /, "", $3); print $3; exit }' \
       "$hlog" 2>/dev/null)
[ -n "$kc" ] || kc=$(awk -F'|' '$2 ~ /shuffle .*kernel/ { gsub(/ /, "", $3); print $3; exit }' \
       "$hlog" 2>/dev/null)
kv=$(awk '/(exchange|hash_batch) .*Mhash/ { for (i = 1; i <= NF; i++)
            if ($i == "Mhash/s" && $(i - 1) + 0 > m) m = $(i - 1) + 0 }
          END { if (m > 0) print m }' "$vlog" 2>/dev/null)
echo "     kernels (same build): cuda ${kc:-?} M/s (default kernel), vulkan ${kv:-?} M/s (best of hash / hash_batch)"
e2e=${WAVE_DAEMON_E2E_COUNT:-1073741824}
declare -A rate fp
for set in cuda0 vk0 cpu0,cuda0,vk0; do
  t0=$(date +%s.%N)
  r=$(ctl submit hash --pack main --nonce 0x200000000 --count "$e2e" \
        --target 0000010000000000 --max-winners 8 --device "$set" --json \
        2>"$OUT/e2e-$set.err")
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\n' "$r" >"$OUT/e2e-$set.json"
  if [ $rc != 0 ]; then
    bad "end to end $e2e on $set: rc $rc: $(tail -n 2 "$OUT/e2e-$set.err")"
    continue
  fi
  rate[$set]=$(awk -v n="$e2e" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) / 1e6 }')
  fp[$set]=$(printf '%s' "$r" | grep -o '"job_fingerprint".*"winner_count": *[0-9]*')
  shares=$(printf '%s' "$r" | grep -o '"shares": *\[.*\]')
  echo "     e2e main $e2e on $set: ${rate[$set]} M hashes/s wall ($(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s) $shares"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "?" }'; }
echo "| e2e 2^$(awk -v n="$e2e" 'BEGIN { printf "%d", log(n) / log(2) + 0.5 }') main | M hashes/s | kernel M/s | e2e / kernel |"
echo "|---|---:|---:|---:|"
echo "| cuda0 | ${rate[cuda0]:-?} | ${kc:-?} | $(ratio "${rate[cuda0]:-0}" "${kc:-0}") |"
echo "| vk0 | ${rate[vk0]:-?} | ${kv:-?} | $(ratio "${rate[vk0]:-0}" "${kv:-0}") |"
best=$(awk -v a="${rate[cuda0]:-0}" -v b="${rate[vk0]:-0}" 'BEGIN { print (a > b ? a : b) }')
echo "| cpu0+cuda0+vk0 | ${rate[cpu0,cuda0,vk0]:-?} | fastest single ${best} | $(ratio "${rate[cpu0,cuda0,vk0]:-0}" "$best") |"
if [ -n "${fp[cuda0]:-}" ] && [ "${fp[cuda0]}" = "${fp[cpu0,cuda0,vk0]:-}" ]; then
  ok "e2e $e2e: cpu0+cuda0+vk0 gives the same bits as cuda0 alone"
else
  bad "e2e $e2e: cpu0+cuda0+vk0 and cuda0 differ (or one failed)"
fi
[ -n "${fp[vk0]:-}" ] && [ "${fp[vk0]}" = "${fp[cuda0]:-}" ] &&
  ok "e2e $e2e: vk0 gives the same bits as cuda0" ||
  bad "e2e $e2e: vk0 and cuda0 differ (or one failed)"

kill -TERM $pid
wait $pid
rc=$?
[ $rc = 0 ] && ok "SIGTERM: wavedd exited 0" || bad "SIGTERM: wavedd exited $rc"
rm -f "$u32"
echo "daemon: $fails failed checks"
exit $((fails > 0))
