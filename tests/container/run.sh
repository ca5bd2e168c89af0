#!/usr/bin/env bash
# tests/container/run.sh [BUILD_DIR] - the container tests (ctest: container_test).
#
#  1. the README's container block, run as written (extracted from README.md
#     at run time: the block after `<!-- test: container -->`), from the
#     source folder with BUILD_DIR's wavectl on PATH; the one substitution:
#     `podman build` gets `--build-arg BASE=` the Debian 12 base made here
#     (base.sh: debootstrap + podman import; cached, as are podman's layers;
#     no registry is reachable).  Then the image it built: non-root, the
#     HEALTHCHECK on readiness, the token generated once and kept across a
#     restart; and the Dockerfile's named `systemd` target;
#  2. network: wavedd in one container (a mounted token), wavectl in others
#     over tcp on a podman network; the HEALTHCHECK; every shipped pack; a
#     detached job waited for from another container; the metrics page;
#     stop = exit 0; a stopped daemon is refused at once;
#  3. two uids: the daemon as user wavedd, clients as wavedd and as another
#     uid in group wavedd, reducing a 1 GiB file through `wavectl submit
#     reduce --input FILE` on cpu0: the same bits, each as a file region
#     (the daemon's log says "kept open, read by its jobs"; for the other
#     uid only with WAVE_TEST_FDPASS=1, which needs descriptor passing), and
#     the times against `cat` of the same file, printed (no threshold);
#  4. systemd: the installed unit under systemd as PID 1 (--systemd=always):
#     start (Type=notify), status, reload of a good and of a bad file, the
#     watchdog (pings, and a stopped daemon killed and restarted), stop
#     (exit 0), and a bad config failing the start.
# Waits are bounded loops on a state (health, a log line, a property), never
# a sleep standing in for one.  Exit 77 (skipped) only without podman or
# root (.ci/deps.sh installs podman; CI runs as root).
set -euo pipefail
# a command that fails under set -e says where, not just the exit status
trap 'echo "container_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bindir=$(cd "${1:-$src/build}" && pwd)
. "$(dirname "$0")/../skip.sh"
command -v podman >/dev/null || wv_skip "no podman"
[ "$(id -u)" -eq 0 ] || wv_skip "needs root"
[ -x "$bindir/wavectl" ] || { echo "container_test: no $bindir/wavectl" >&2; exit 1; }

. "$here/podman.sh"   # CONTAINERS_CONF, pm
# containers run here: the HEALTHCHECK is run by hand (podman healthcheck
# run), not by podman's systemd timers (the host may have no systemd)
ro=(--health-interval disable)
tag=$$
img=localhost/wavedd:test-$tag
simg=localhost/wavedd-systemd:test-$tag
net=wavedd-test-$tag
wd=wavedd-$tag
wds=wavedd-systemd-$tag
wd2=wavedd-2uid-$tag
t0=$(date +%s)
step() { echo "container_test: [$(( $(date +%s) - t0 )) s] $*"; }
tok=
data=
readme=
cleanup() {
  # one at a time: podman rm stops at a name that does not exist
  for c in "$wd" "$wds" "$wd2"; do pm rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
  if [ -n "$readme" ]; then
    pm rm -f -t 0 wavedd >/dev/null 2>&1 || true
    rm -rf "$readme" "$src/wavedd.token"
  fi
  [ -z "$tok" ] || rm -rf "$tok"
  [ -z "$data" ] || rm -rf "$data"
  pm network rm -f "$net" >/dev/null 2>&1 || true
  for i in "$img" "$simg"; do pm rmi -f "$i" >/dev/null 2>&1 || true; done
  rm -rf "$podman_conf"
}
trap cleanup EXIT
fail() {
  echo "container_test: FAIL: $*" >&2
  for c in wavedd "$wd" "$wd2"; do
    pm logs "$c" 2>/dev/null | tail -30 | sed "s/^/$c: /" >&2 || true
  done
  pm exec "$wds" journalctl -u wavedd --no-pager 2>/dev/null | tail -40 >&2 || true
  exit 1
}
# until CMD... succeeds, at most N tries 0.25 s apart
until_ok() {
  local n=$1; shift
  for _ in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  return 1
}

# ---- 1. the README's container block, and the images ------------------------
step "base image"
bash "$here/base.sh"
base=${WAVE_BASE_IMAGE:-localhost/wavedd-base:bookworm}
step "the README's container block"
# it names the container wavedd and publishes 5555 and 9464 on the host
pm container exists wavedd && fail "a container named wavedd exists: the README block needs the name"
for port in 5555 9464; do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
    fail "127.0.0.1:$port is in use: the README block publishes it"
done
readme=$(mktemp -d /var/tmp/wavedd-readme.XXXXXX)
bash "$src/tests/readme/blocks.sh" "$src/README.md" "$readme"
blk=$(grep -l ' container ' "$readme"/*.meta || true)
[ "$(echo "$blk" | grep -c .)" = 1 ] || fail "README.md: not one block marked <!-- test: container -->: $blk"
blk=${blk%.meta}.sh
# the one substitution: the base image (no registry here)
sed "s|^podman build |podman build --build-arg BASE=$base |" "$blk" >"$readme/block.sh"
[ "$(diff "$blk" "$readme/block.sh" | grep -c '^>')" = 1 ] ||
  fail "README.md's container block has not one 'podman build ' line"
echo "container_test: README.md line $(cut -d' ' -f1 "${blk%.sh}.meta"):"
sed 's/^/  | /' "$readme/block.sh"
(cd "$src" && PATH="$bindir:$PATH" timeout 1200 bash -euo pipefail "$readme/block.sh") \
  >"$readme/out" 2>&1 || { tail -40 "$readme/out" >&2; fail "the README's container block"; }
grep -v 'unable to get systemd connection' "$readme/out" | tail -20 | sed 's/^/  > /'
# what it ran: the runtime image (not the systemd stage), ready when healthy
[ "$(pm inspect -f '{{.State.Health.Status}}' wavedd)" = healthy ] ||
  fail "health after the README block: $(pm inspect -f '{{.State.Health.Status}}' wavedd)"
[ "$(pm inspect -f '{{.State.ExitCode}}' wavedd)" = 0 ] || fail "podman stop: not exit 0"
grep -q '^wavedd_info{version=' "$readme/out" || fail "no metrics page in the README block"
grep -q 'ready, instance' "$readme/out" || fail "status over tcp in the README block"
[ "$(pm image inspect -f '{{.Config.User}}' localhost/wavedd)" = wavedd ] ||
  fail "the default image runs as $(pm image inspect -f '{{.Config.User}}' localhost/wavedd)"
pm image inspect -f '{{.Config.Healthcheck.Test}}' localhost/wavedd | grep -q 'status --probe' ||
  fail "HEALTHCHECK: $(pm image inspect -f '{{.Config.Healthcheck.Test}}' localhost/wavedd)"
# the token: generated at the first start (printed once), kept by a restart
[ "$(pm logs wavedd 2>&1 | grep -c 'generated token')" = 1 ] || fail "the token was not generated once"
grep -q "$(cat "$src/wavedd.token")" <(pm logs wavedd 2>&1) || fail "the log does not show the token"
pm start wavedd >/dev/null
until_ok 480 pm healthcheck run wavedd || fail "not healthy after a restart"
[ "$(pm logs wavedd 2>&1 | grep -c 'generated token')" = 1 ] || fail "a restart generated another token"
PATH="$bindir:$PATH" WAVE_URL=tcp://127.0.0.1:5555 wavectl --token-file "$src/wavedd.token" status >/dev/null ||
  fail "the token after a restart"
pm rm -f -t 30 wavedd >/dev/null
rm -rf "$readme" "$src/wavedd.token"
readme=
pm tag localhost/wavedd "$img"
build() {
  # --format docker: the OCI format has no HEALTHCHECK
  pm build --format docker --build-arg BASE="$base" --target "$1" -t "$2" \
    -f "$src/Dockerfile" "$src" >"/tmp/wavedd-build-$tag.log" 2>&1 ||
    { tail -40 "/tmp/wavedd-build-$tag.log" >&2; fail "podman build --target $1"; }
  rm -f "/tmp/wavedd-build-$tag.log"
}
step "build the systemd image (a named target)"
build systemd "$simg"
size=$(pm image inspect -f '{{.Size}}' "$img")
step "runtime image: $((size / 1048576)) MiB"
# the runtime image has no compiler and no -dev package
pm run --rm "${ro[@]}" "$img" sh -c \
  '! command -v cc && ! command -v cmake && ! dpkg -l | grep -q -- "-dev " &&
   [ "$(id -un)" = wavedd ]' || fail "the runtime image has build tools or runs as root"

# ---- 2. two containers on a network --------------------------------------------
step "network: wavedd in $wd"
pm network create "$net" >/dev/null
# tcp with a mounted token: the image's config reads /var/lib/wavedd/token
# (and generates it only when absent); owned by the image's user, mode 0600
tok=$(mktemp -d /var/tmp/wavedd-token.XXXXXX)
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tok/client.token"
wuid=$(pm run --rm "${ro[@]}" "$img" id -u) || fail "the image's user"
wgid=$(pm run --rm "${ro[@]}" "$img" id -g) || fail "the image's group"
chown "$wuid" "$tok/client.token"
chmod 0600 "$tok/client.token"
mnt=(-v "$tok/client.token:/var/lib/wavedd/token:ro")
pm run -d --name "$wd" --network "$net" "${ro[@]}" "${mnt[@]}" "$img" >/dev/null
until_ok 240 pm healthcheck run "$wd" || fail "the HEALTHCHECK never passed"
# healthy means ready (status --probe), not merely answering
pm exec "$wd" wavectl status --json | grep -q '"ready": true' || fail "healthy before ready"
pm logs "$wd" 2>&1 | grep -q 'generated token' && fail "a mounted token was replaced"
ip=$(pm inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$wd")
[ -n "$ip" ] || fail "no address on $net"
url=tcp://$ip:5555
ctl() { pm run --rm -i --network "$net" "${ro[@]}" -v "$tok/client.token:/tmp/client.token:ro" \
          "$img" wavectl --url "$url" --token-file /tmp/client.token "$@"; }
# without the token, tcp is refused (AUTH)
na=$(pm run --rm --network "$net" "${ro[@]}" "$img" wavectl --url "$url" status 2>&1) &&
  fail "status over tcp without a token was served: $na"
grep -q AUTH <<<"$na" || fail "no AUTH error without a token: $na"
st=$(ctl status --json) || fail "wavectl status over $url"
echo "$st" | grep -q '"tcp://0.0.0.0:5555"' || fail "status does not list the tcp listener: $st"
out=$(printf '3 1 4 1 5 9 2 6\n' | ctl submit reduce --op sum --dtype u32 --format text --input -)
echo "$out" | grep -q '^sum uint32 = 31 ' || fail "reduce over tcp: $out"
# every shipped pack: the same fingerprint over tcp from another container
# as over ipc inside the daemon's (container.yaml prepares a pack on first
# use: the first job waits for it), and then every self-check has run
checks_done() { local o; o=$(pm exec "$wd" wavectl packs --json) && ! grep -q pending <<<"$o"; }
packs=$(pm exec "$wd" ls /usr/share/wavedd/packs | sed 's/\.yaml$//')
[ "$(echo "$packs" | wc -l)" -eq "$(ls "$src/config/packs" | wc -l)" ] || fail "packs: $packs"
for p in $packs; do
  a=$(ctl submit hash --pack "$p" --nonce 1000 --count 4096 --json | grep -o '"job_fingerprint": "[0-9a-f]*"') ||
    fail "hash on pack $p over tcp"
  b=$(pm exec "$wd" wavectl submit hash --pack "$p" --nonce 1000 --count 4096 --json |
      grep -o '"job_fingerprint": "[0-9a-f]*"') || fail "hash on pack $p over ipc"
  [ "$a" = "$b" ] || fail "pack $p: $a over tcp, $b over ipc"
done
until_ok 600 checks_done || fail "self-checks never finished"
pm exec "$wd" wavectl packs --json | grep -q '"state": "failed"' && fail "a pack failed its self-check"
# a detached job, waited for by another container
id=$(ctl submit hash --pack small --nonce 0 --count 8192 --detach --json | grep -o '[0-9]\+')
ctl jobs | grep -q "^$id " || fail "job $id not listed"
ctl wait "$id" | grep -q '^job fingerprint ' || fail "wait $id"
# the metrics page, from the host, is valid and counts the jobs
if command -v curl >/dev/null && command -v promtool >/dev/null; then
  curl -fsS "http://$ip:9464/metrics" > "/tmp/wavedd-page-$tag.txt" || fail "metrics page"
  promtool check metrics < "/tmp/wavedd-page-$tag.txt" || fail "promtool check metrics"
  grep -q '^wavedd_jobs_total{device="cpu0",kind="reduce",outcome="ok"} 1$' \
    "/tmp/wavedd-page-$tag.txt" || fail "metrics do not count the reduction"
  rm -f "/tmp/wavedd-page-$tag.txt"
fi
step "network: stop"
pm stop -t 60 "$wd" >/dev/null
code=$(pm inspect -f '{{.State.ExitCode}}' "$wd")
[ "$code" = 0 ] || fail "wavedd exited $code on podman stop"
pm logs "$wd" 2>&1 | grep -q 'info: exit$' || fail "no clean exit in the log"
pm start "$wd" >/dev/null && pm stop -t 60 "$wd" >/dev/null   # no stale socket
[ "$(pm inspect -f '{{.State.ExitCode}}' "$wd")" = 0 ] || fail "restart after stop"
pm rm -f "$wd" >/dev/null
# a host on the network where no daemon listens: refused at once
pm run -d --name "$wd" --network "$net" "${ro[@]}" "$img" sleep 600 >/dev/null
ip=$(pm inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$wd")
url=tcp://$ip:5555
out=$(ctl --timeout 30000 status 2>&1) && rc=0 || rc=$?
[ $rc -eq 3 ] && echo "$out" | grep -q 'connection refused' ||
  fail "no daemon: exit $rc, $out"
pm rm -f -t 0 "$wd" >/dev/null

# ---- 3. two uids: the daemon as wavedd, clients as wavedd and as another ------
step "two uids: a 1 GiB file"
data=$(mktemp -d /var/tmp/wavedd-2uid.XXXXXX)
chmod 0755 "$data"
head -c 1073741824 /dev/urandom >"$data/1g.raw"
chmod 0644 "$data/1g.raw"
# file regions need client shared memory (allow_client_shm) on ipc
sed '/^allow_client_shm:/d' "$src/config/container.yaml" >"$data/container.yaml"
echo 'allow_client_shm: true' >>"$data/container.yaml"
chmod 0644 "$data/container.yaml"
pm run -d --name "$wd2" "${ro[@]}" -v "$tok/client.token:/var/lib/wavedd/token:ro" \
  -v "$data/container.yaml:/etc/wavedd/container.yaml:ro" -v "$data:/data:ro" "$img" >/dev/null
until_ok 480 pm healthcheck run "$wd2" || fail "two uids: the HEALTHCHECK never passed"
ouid=4242   # not in the image's passwd: a uid of its own, in group wavedd
# one timed run inside the daemon's container as USER, its stdout to OUT
# (/dev/null, or a file in the container's /tmp, printed after): prints the
# milliseconds on its first line
timed() {
  local user=$1 out=$2; shift 2
  pm exec --user "$user" "$wd2" sh -c \
    'o=$1; shift; s=$(date +%s%N); "$@" >"$o" || exit $?; e=$(date +%s%N)
     echo $(( (e - s) / 1000000 )); [ "$o" = /dev/null ] || { cat "$o"; rm -f "$o"; }' \
    sh "$out" "$@"
}
red=(wavectl submit reduce --op sum --dtype uint32 --device cpu0 --input /data/1g.raw --json)
timed "$wuid:$wgid" /dev/null cat /data/1g.raw >/dev/null   # the page cache, for every run
c1=$(timed "$wuid:$wgid" /dev/null cat /data/1g.raw)
# each run's file is its client's own, as a user's file would be (chown
# between the runs: one copy in the page cache)
chown "$wuid" "$data/1g.raw"
same=$(timed "$wuid:$wgid" /tmp/same.json "${red[@]}") || fail "two uids: the reduction as wavedd"
chown "$ouid" "$data/1g.raw"
other=$(timed "$ouid:$wgid" /tmp/other.json "${red[@]}") ||
  fail "two uids: the reduction as uid $ouid (group wavedd)"
c2=$(timed "$ouid:$wgid" /dev/null cat /data/1g.raw)
bits() { grep -o '"bits": \[[^]]*\]' <<<"$1"; }
[ -n "$(bits "$same")" ] || fail "two uids: no bits: $same"
[ "$(bits "$same")" = "$(bits "$other")" ] ||
  fail "two uids: $(bits "$same") as wavedd, $(bits "$other") as uid $ouid"
grep -q '"rows": 268435456' <<<"$other" || fail "two uids: not every row: $other"
ms_same=$(head -1 <<<"$same") ms_other=$(head -1 <<<"$other")
cat_ms=$(( c1 < c2 ? c1 : c2 ))  # the faster cat of the two: the baseline
ratio() { awk -v a="$1" -v b="$cat_ms" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }'; }
step "two uids: 1 GiB on cpu0: cat $c1 ms, $c2 ms; wavectl as wavedd $ms_same ms" \
     "($(ratio "$ms_same")x cat), as uid $ouid $ms_other ms ($(ratio "$ms_other")x cat)"
# the fast path: a file region ("kept open, read by its jobs"), not a copy
how() { pm logs "$wd2" 2>&1 | grep "(wavectl): 1073741824 bytes of pid [0-9]* uid $1 " | tail -1 |
        grep . || echo "no region of uid $1 in the daemon's log"; }
how "$wuid" | grep -q 'kept open, read by its jobs' ||
  fail "two uids: as wavedd the file was not a file region: $(how "$wuid")"
if [ "${WAVE_TEST_FDPASS:-1}" = 1 ]; then
  how "$ouid" | grep -q 'kept open, read by its jobs' ||
    fail "two uids: as uid $ouid the file was not a file region: $(how "$ouid")"
else
  echo "container_test: two uids: fast path for uid $ouid not checked" \
       "(WAVE_TEST_FDPASS=1 checks it; needs descriptor passing):" \
       "$(how "$ouid")"
fi
pm rm -f -t 30 "$wd2" >/dev/null
rm -rf "$data"
data=

# ---- 4. the unit under systemd ------------------------------------------------
step "systemd: boot $wds"
# SYS_ADMIN: systemd sets up the unit's namespaces (ProtectSystem=, ...)
pm run -d --name "$wds" --systemd=always --cap-add SYS_ADMIN "$simg" >/dev/null
sx() { pm exec "$wds" "$@"; }
prop() { sx systemctl show -P "$1" wavedd.service; }
active() { [ "$(sx systemctl is-active wavedd.service)" = active ]; }
journal_has() { sx journalctl -u wavedd --no-pager | grep -q -- "$1"; }
changed() { [ "$(prop "$1")" != "$2" ]; }
restarted() { [ "$(prop NRestarts)" -gt "$1" ] && active; }
until_ok 480 active || {
  sx systemctl status wavedd.service --no-pager >&2 || true; fail "the unit did not start"; }
[ "$(prop Type)" = notify ] || fail "Type=$(prop Type)"
[ "$(prop Result)" = success ] || fail "Result=$(prop Result)"
prop StatusText | grep -q '^serving' || fail "STATUS=$(prop StatusText)"
[ "$(prop WatchdogUSec)" = 30s ] || fail "WatchdogUSec=$(prop WatchdogUSec)"
until_ok 240 journal_has 'ready: ' || fail "no ready line"
step "systemd: status"
sx wavectl status | grep -q 'cpu0' || fail "wavectl status in the systemd container"
[ "$(sx stat -c '%U %a' /run/wavedd/wavedd.sock)" = "wavedd 660" ] ||
  fail "socket: $(sx stat -c '%U %a' /run/wavedd/wavedd.sock)"
[ "$(sx stat -c %U "/proc/$(prop MainPID)")" = wavedd ] || fail "not running as wavedd"

step "systemd: reload, a good file"
cfg=/etc/wavedd/devices.yaml
sx cp "$cfg" /root/good.yaml
sx sed -i 's/^log_level: info/log_level: debug/' "$cfg"
pid=$(prop MainPID)
sx systemctl reload wavedd.service || fail "systemctl reload (good file)"
until_ok 240 journal_has "reloaded $cfg: log_level debug" ||
  fail "no reload in the journal"
[ "$(prop MainPID)" = "$pid" ] || fail "reload restarted the daemon"
prop StatusText | grep -q "reloaded $cfg" || fail "STATUS=$(prop StatusText)"

step "systemd: reload, a bad file"
sx sh -c "printf 'limits: [\n' >> $cfg"
if sx systemctl reload wavedd.service 2>/dev/null; then fail "reload of a bad file succeeded"; fi
until_ok 240 journal_has "$cfg:[0-9]*:[0-9]*: " ||
  fail "the bad file's line:column is not in the journal"
# the daemon's own all-or-nothing: SIGHUP straight to it
sx systemctl kill -s HUP --kill-who=main wavedd.service
until_ok 240 journal_has "reload failed, the old configuration keeps serving: $cfg:[0-9]*:[0-9]*: " ||
  fail "SIGHUP with a bad file: no file:line:column"
[ "$(prop ActiveState)" = active ] && [ "$(prop MainPID)" = "$pid" ] ||
  fail "a bad reload stopped the daemon"
sx wavectl status >/dev/null || fail "not serving after a bad reload"
sx cp /root/good.yaml "$cfg"

step "systemd: watchdog"
w1=$(prop WatchdogTimestampMonotonic)
until_ok 240 changed WatchdogTimestampMonotonic "$w1" ||
  fail "no WATCHDOG=1 reached systemd"
sx mkdir -p /run/systemd/system/wavedd.service.d
sx sh -c 'printf "[Service]\nWatchdogSec=3s\nTimeoutAbortSec=10s\n" > /run/systemd/system/wavedd.service.d/watchdog.conf'
sx systemctl daemon-reload
sx systemctl restart wavedd.service
pid=$(prop MainPID)
n0=$(prop NRestarts)
sx systemctl kill -s STOP --kill-who=main wavedd.service  # a wedged loop: no pings
until_ok 480 restarted "$n0" ||
  fail "the watchdog did not restart a stopped daemon"
[ "$(prop MainPID)" != "$pid" ] || fail "same pid after the watchdog"
until_ok 240 journal_has "[Ww]atchdog timeout" || fail "no watchdog timeout logged"
sx rm /run/systemd/system/wavedd.service.d/watchdog.conf
sx systemctl daemon-reload
sx systemctl restart wavedd.service

step "systemd: stop"
sx systemctl stop wavedd.service
[ "$(prop Result)" = success ] && [ "$(prop ExecMainStatus)" = 0 ] ||
  fail "stop: Result=$(prop Result) status=$(prop ExecMainStatus)"
sx test ! -e /run/wavedd/wavedd.sock || fail "socket left after stop"

step "systemd: a bad config fails the start"
sx sh -c "printf 'devices: []\n' >> $cfg"
if sx systemctl start wavedd.service 2>/dev/null; then fail "started with a bad config"; fi
# Restart=on-failure retries it (auto-restart) until the start limit: failed
state="$(prop ActiveState)/$(prop SubState)"
case $state in failed/failed|activating/auto-restart) ;; *) fail "after a bad start: $state" ;; esac
[ "$(prop Result)" = exit-code ] || fail "Result=$(prop Result)"
until_ok 240 journal_has "Failed to start wavedd.service" ||
  fail "no failed start in the journal"
until_ok 240 journal_has "$cfg:[0-9]*:[0-9]*: devices: duplicate key" ||
  fail "the bad config's line:column is not in the journal"
sx systemctl stop wavedd.service
sx cp /root/good.yaml "$cfg"
sx systemctl reset-failed wavedd.service
sx systemctl start wavedd.service || fail "start after fixing the config"
sx wavectl status >/dev/null || fail "not serving after the fix"
pm stop -t 60 "$wds" >/dev/null
step "ok"
