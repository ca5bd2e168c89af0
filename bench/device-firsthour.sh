#!/usr/bin/env bash
# bench/device-firsthour.sh - issue 19 on the GPU machine: the real
# deployment's arrangement (daemon and client as different users) and the
# shipped first-use pack preparation, with CUDA and Vulkan devices.
#   * a 1 GiB file in the page cache through `wavectl submit reduce
#     --input` on cuda0 and cpu0, wavectl run as the daemon's uid and as
#     another uid (nobody, through setpriv), each beside `cat` of the same
#     file in the same run; the bits of every run must agree, and the
#     daemon's log must say each went as a file region (descriptor passing);
#   * hash jobs under `packs.prepare: first-use`: the first `small` and
#     `main` jobs on cuda0 and vk0 wait in PREPARING and then give the
#     same fingerprint as cpu0.
# bench/device-run.sh calls it as its "firsthour" step; alone:
#   bench/device-firsthour.sh BUILD_DIR OUT_DIR
# Exit status 0 when every check passed.
set -uo pipefail
B=${1:?build folder}
OUT=${2:?output folder}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
other=nobody
sockdir=$(mktemp -d /tmp/wavedd-fh.XXXXXX)
chmod 0711 "$sockdir"    # other users may reach the socket, not list the folder
url=ipc://$sockdir/w.sock
cfg=$OUT/firsthour.yaml
cat >"$cfg" <<CFG
listen:
  - $url
ipc_mode: 0666
log_level: info
packs:
  dir: $root/config/packs
  prepare: first-use
devices:
  - name: cpu0
    backend: cpu
  - name: cuda0
    backend: cuda
    index: 0
  - name: vk0
    backend: vulkan
    index: 0
CFG
"$B/wavedd" --config "$cfg" --foreground 2>"$OUT/wavedd-firsthour.log" &
pid=$!
for _ in $(seq 1 600); do
  "$B/wavectl" --url "$url" status --probe 2>/dev/null && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
as_other() { setpriv --reuid "$other" --regid nogroup --clear-groups -- "$@"; }
f=$sockdir/fh-1g.raw
head -c $((1 << 30)) /dev/urandom >"$f"
chmod 0644 "$f"
cat "$f" >/dev/null
ref=""
for dev in cuda0 cpu0; do
  for who in same other; do
    for i in 1 2 3; do
      t0=$(date +%s.%N); cat "$f" >/dev/null; t1=$(date +%s.%N)
      if [ $who = same ]; then
        out=$("$B/wavectl" --url "$url" --timeout 120000 submit reduce --dtype u32 --op sum --device $dev --input "$f")
      else
        out=$(as_other env WAVE_DAEMON_UID=0 "$B/wavectl" --url "$url" --timeout 120000 submit reduce --dtype u32 --op sum --device $dev --input "$f")
      fi
      rc=$?
      t2=$(date +%s.%N)
      out=$(echo "$out" | head -n 1)   # the value and its bits, not the time
      [ -z "$ref" ] && ref=$out
      [ $rc = 0 ] && [ "$out" = "$ref" ] || bad "$dev $who run $i: rc $rc, '$out' vs '$ref'"
      awk -v d=$dev -v w=$who -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "| 1 GiB file, %s, wavectl as %s uid | cat %.3f s | wavectl %.3f s | %.2fx cat |\n", d, w, b - a, c - b, (c - b) / (b - a) }'
    done
  done
done
echo "answer: $ref"
nfile=$(grep -c "kept open, read by its jobs" "$OUT/wavedd-firsthour.log")
[ "$nfile" -ge 12 ] && ok "all 12 wavectl runs went as file regions ($nfile in the log)" ||
  bad "only $nfile of 12 wavectl runs went as file regions"
# first-use packs: the first job on each GPU device waits, then matches cpu0
for pack in small main; do
  want=$("$B/wavectl" --url "$url" --timeout 600000 submit hash --pack $pack --nonce 0 --count 1048576 --target 0000100000000000 --device cpu0 --json | grep -o '"job_fingerprint": *"[0-9a-f]*"')
  for dev in cuda0 vk0; do
    t0=$(date +%s.%N)
    got=$("$B/wavectl" --url "$url" --timeout 600000 submit hash --pack $pack --nonce 0 --count 1048576 --target 0000100000000000 --device $dev --json | grep -o '"job_fingerprint": *"[0-9a-f]*"')
    t1=$(date +%s.%N)
    [ -n "$want" ] && [ "$got" = "$want" ] && ok "first $pack job on $dev (prepared on first use, $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s): $got as cpu0" ||
      bad "first $pack job on $dev: '$got' vs cpu0 '$want'"
  done
done
grep -E "PREPARING|prepar" "$OUT/wavedd-firsthour.log" | head -5
kill -TERM $pid; wait $pid; rc=$?
[ $rc = 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"
rm -rf "$sockdir"
echo "firsthour: $fails failed"
[ $fails = 0 ]
