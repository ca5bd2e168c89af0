#!/usr/bin/env bash
# tests/container/run.sh - the container tests (ctest: container_test).
#
#  1. image: the Dockerfile's runtime and systemd targets, built with podman
#     from a Debian 12 base made here (base.sh: debootstrap + podman import;
#     cached, as are podman's layers, for the rest of the run);
#  2. network: wavedd in one container, wavectl in others over tcp on a
#     podman network; the HEALTHCHECK; every shipped pack; a detached job
#     waited for from another container; the metrics page; stop = exit 0;
#     a stopped daemon is refused at once;
#  3. systemd: the installed unit under systemd as PID 1 (--systemd=always):
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
command -v podman >/dev/null || { echo "container_test: no podman: skipped"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "container_test: needs root: skipped"; exit 77; }

# podman 4.3 here: runc (crun is not installed), explicit ulimits
pm() { podman --runtime runc "$@"; }
ul=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
# containers run here: the HEALTHCHECK is run by hand (podman healthcheck
# run), not by podman's systemd timers (the host may have no systemd)
ro=("${ul[@]}" --health-interval disable)
tag=$$
img=localhost/wavedd:test-$tag
simg=localhost/wavedd-systemd:test-$tag
net=wavedd-test-$tag
wd=wavedd-$tag
wds=wavedd-systemd-$tag
t0=$(date +%s)
step() { echo "container_test: [$(( $(date +%s) - t0 )) s] $*"; }
tok=
cleanup() {
  pm rm -f -t 0 "$wd" "$wds" >/dev/null 2>&1 || true
  [ -z "$tok" ] || rm -rf "$tok"
  pm network rm -f "$net" >/dev/null 2>&1 || true
  pm rmi -f "$img" "$simg" >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() {
  echo "container_test: FAIL: $*" >&2
  pm logs "$wd" 2>/dev/null | tail -30 >&2 || true
  pm exec "$wds" journalctl -u wavedd --no-pager 2>/dev/null | tail -40 >&2 || true
  exit 1
}
# until CMD... succeeds, at most N tries 0.25 s apart
until_ok() {
  local n=$1; shift
  for _ in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  return 1
}

# ---- 1. the images -----------------------------------------------------------
step "base image"
bash "$here/base.sh"
base=${WAVE_BASE_IMAGE:-localhost/wavedd-base:bookworm}
build() {
  # --format docker: the OCI format has no HEALTHCHECK
  pm build --format docker "${ul[@]}" --build-arg BASE="$base" --target "$1" -t "$2" \
    -f "$src/Dockerfile" "$src" >"/tmp/wavedd-build-$tag.log" 2>&1 ||
    { tail -40 "/tmp/wavedd-build-$tag.log" >&2; fail "podman build --target $1"; }
  rm -f "/tmp/wavedd-build-$tag.log"
}
step "build the runtime image"
build runtime "$img"
step "build the systemd image"
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
# tcp with a token (the image's own config says auth: none): the daemon's
# config and token are mounted, owned by the image's user, mode 0600
tok=$(mktemp -d /var/tmp/wavedd-token.XXXXXX)
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tok/client.token"
sed 's|^auth: none$|auth: {tokens: [{name: client, file: /etc/wavedd/client.token}]}|' \
  "$src/config/container.yaml" > "$tok/container.yaml"
grep -q '^auth: {tokens' "$tok/container.yaml" || fail "container.yaml has no 'auth: none' line"
wuid=$(pm run --rm "${ro[@]}" "$img" id -u) || fail "the image's user"
chown "$wuid" "$tok/client.token" "$tok/container.yaml"
chmod 0600 "$tok/client.token"; chmod 0644 "$tok/container.yaml"
mnt=(-v "$tok/container.yaml:/etc/wavedd/container.yaml:ro"
     -v "$tok/client.token:/etc/wavedd/client.token:ro")
pm run -d --name "$wd" --network "$net" "${ro[@]}" "${mnt[@]}" "$img" >/dev/null
until_ok 240 pm healthcheck run "$wd" || fail "the HEALTHCHECK never passed"
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

# ---- 3. the unit under systemd ------------------------------------------------
step "systemd: boot $wds"
# SYS_ADMIN: systemd sets up the unit's namespaces (ProtectSystem=, ...)
pm run -d --name "$wds" --systemd=always --cap-add SYS_ADMIN "${ul[@]}" "$simg" >/dev/null
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
