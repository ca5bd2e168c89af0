#!/usr/bin/env bash
# tests/container/kube.sh [BUILD_DIR] - contrib/kubernetes/wavedd.yaml played
# with podman 4.3 (`podman kube play`) and contrib/compose/compose.yaml with
# podman-compose (ctest kube_test, label root).
#
# The image is the Dockerfile's runtime image, built with the arguments the
# container test uses, so that after container_test (ctest runs it first)
# every layer is cached and the build takes seconds.  The YAML is played
# as written, with two substitutions: the image's tag, and the Secret's
# placeholder token replaced by a fresh one.  The pod runs as uid 12345 in
# group 0 with a read-only root.  Two cases:
#  1. as written: podman 4.3 mounts the Secret 0644 root:root (it ignores
#     defaultMode; and it does not decode the base64), and the daemon must
#     refuse a token others can read;
#  2. the Secret's volume replaced by a hostPath of the same token, root's,
#     0440, group 0 (as the kubelet mounts a Secret with defaultMode 0440
#     and fsGroup; the file's header says why): ready, /livez and /readyz
#     200 from the host, the uid and the read-only root as asked, a job
#     over tcp with the token (AUTH without), the metrics page counts it,
#     and a stop exits 0;
#  3. contrib/compose/compose.yaml with podman-compose (uid 12345:0,
#     read-only, the same token file, ports picked free here): ready, a job
#     over tcp, its HEALTHCHECK (over tcp), a stop exits 0;
#  4. `podman run --read-only --user 12345:0` with the image's own config
#     (ipc in a tmpfs /run/wavedd of its user's, tcp with the mounted 0440 token): the
#     image's HEALTHCHECK passes, ready over ipc, a stop exits 0.
# Bounded waits on states, never a sleep standing in for one.  Exit 77
# (skipped) without podman or root.
set -euo pipefail
trap 'echo "kube_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bindir=$(cd "${1:-$src/build}" && pwd)
command -v podman >/dev/null || { echo "kube_test: no podman: skipped"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "kube_test: needs root: skipped"; exit 77; }
command -v curl >/dev/null || { echo "kube_test: no curl" >&2; exit 1; }
[ -x "$bindir/wavectl" ] || { echo "kube_test: no $bindir/wavectl" >&2; exit 1; }
. "$here/podman.sh"   # CONTAINERS_CONF, pm
. "$src/tests/proc.sh" # wv_free_port
t0=$(date +%s)
step() { echo "kube_test: [$(( $(date +%s) - t0 )) s] $*"; }
img=localhost/wavedd:kube-$$
work=$(mktemp -d /var/tmp/wavedd-kube.XXXXXX)
yaml=$src/contrib/kubernetes/wavedd.yaml
pod=wavedd-pod-0            # podman's name for the Deployment's one pod
ctr=$pod-wavedd
down() {
  pm kube down "$1" >/dev/null 2>&1 || true
  pm pod rm -f -t 0 "$pod" >/dev/null 2>&1 || true
  pm secret rm wavedd-token >/dev/null 2>&1 || true
}
composed=
cleanup() {
  for f in "$work"/play*.yaml; do [ ! -f "$f" ] || down "$f"; done
  pm rm -f -t 0 "wavedd-kube-ro-$$" >/dev/null 2>&1 || true
  [ -z "$composed" ] || podman-compose -p "$proj" -f "$src/contrib/compose/compose.yaml" down >/dev/null 2>&1 || true
  pm rmi -f "$img" >/dev/null 2>&1 || true
  rm -rf "$work" "$podman_conf"
}
trap cleanup EXIT
fail() {
  echo "kube_test: FAIL: $*" >&2
  pm logs "$ctr" 2>&1 | tail -30 | sed 's/^/wavedd: /' >&2 || true
  exit 1
}
# until CMD... succeeds, for at most S seconds, 0.25 s apart
until_ok() {
  local end=$(( $(date +%s) + $1 )); shift
  while [ "$(date +%s)" -le "$end" ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  return 1
}
pm pod exists "$pod" && fail "a pod named $pod exists"

step "image (cached after container_test)"
bash "$here/base.sh"
base=${WAVE_BASE_IMAGE:-localhost/wavedd-base:bookworm}
pm build --format docker --build-arg BASE="$base" -t "$img" -f "$src/Dockerfile" "$src" \
  >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; fail "podman build"; }

# the token: root's, group 0, 0440 (a Secret with fsGroup); the client's copy 0600
mkdir "$work/secret"   # the Secret's folder, as the kubelet makes it
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret/token"
chmod 0440 "$work/secret/token"
install -m 0600 "$work/secret/token" "$work/client.token"
grep -q '^  token: Y2hhbmdlbWU=$' "$yaml" || fail "$yaml: no placeholder token"
sed -e "s|^          image: localhost/wavedd:latest$|          image: $img|" \
    -e "s|^  token: Y2hhbmdlbWU=$|  token: $(base64 -w0 <"$work/secret/token")|" "$yaml" >"$work/play1.yaml"
[ "$(diff "$yaml" "$work/play1.yaml" | grep -c '^>')" = 2 ] || fail "the two substitutions"

# ---- 1. as written: the Secret is mounted 0644, and refused ---------------------
step "1. the Secret as podman 4.3 mounts it"
pm kube play "$work/play1.yaml" >"$work/play.log" 2>&1 || { cat "$work/play.log" >&2; fail "kube play"; }
refused() { pm logs "$ctr" 2>&1 | grep -q 'token: mode 0644: a token file must not be open to others'; }
until_ok 120 refused || fail "a 0644 token was not refused"
down "$work/play1.yaml"

# ---- 2. the token root's, 0440, group 0 -----------------------------------------
step "2. the token 0440 in group 0, uid 12345, read-only root"
vol='          secret: {secretName: wavedd-token, defaultMode: 0440, optional: false}'
grep -qxF -- "$vol" "$yaml" || fail "$yaml: no secret volume line"
awk -v vol="$vol" -v dir="$work/secret" \
  '$0 == vol { print "          hostPath: {path: " dir ", type: Directory}"; next } { print }' \
  "$work/play1.yaml" >"$work/play2.yaml"
pm kube play "$work/play2.yaml" >"$work/play.log" 2>&1 || { cat "$work/play.log" >&2; fail "kube play"; }
ip=$(pm inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(pm pod inspect -f '{{.InfraContainerID}}' "$pod")")
[ -n "$ip" ] || fail "no pod address"
probe() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$ip:9464$1")" = "$2" ]; }
until_ok 120 probe /readyz 200 || fail "/readyz never 200: $(curl -s "http://$ip:9464/readyz")"
probe /livez 200 || fail "/livez: $(curl -s "http://$ip:9464/livez")"
[ "$(pm exec "$ctr" id -u):$(pm exec "$ctr" id -g)" = 12345:0 ] || fail "not uid 12345 gid 0: $(pm exec "$ctr" id)"
ro=$(pm exec "$ctr" sh -c 'touch /etc/wavedd/x 2>&1' || true)
grep -q 'Read-only file system' <<<"$ro" || fail "the root is writable: $ro"
url=tcp://$ip:5555
out=$(printf '3 1 4 1 5 9 2 6\n' | "$bindir/wavectl" --url "$url" --token-file "$work/client.token" \
        submit reduce --op sum --dtype u32 --format text --input -) || fail "reduce over tcp"
grep -q '^sum uint32 = 31 ' <<<"$out" || fail "reduce over tcp: $out"
na=$("$bindir/wavectl" --url "$url" status 2>&1) && fail "status without a token was served: $na"
grep -q AUTH <<<"$na" || fail "no AUTH without a token: $na"
counted() { curl -fsS "http://$ip:9464/metrics" | grep -q '^wavedd_jobs_total{device="cpu0",kind="reduce",outcome="ok"} 1$'; }
until_ok 10 counted || fail "the metrics page does not count the job"
step "2. stop"
pm pod stop -t 60 "$pod" >/dev/null
[ "$(pm inspect -f '{{.State.ExitCode}}' "$ctr")" = 0 ] || fail "exit $(pm inspect -f '{{.State.ExitCode}}' "$ctr") on stop"
pm logs "$ctr" 2>&1 | grep -q 'info: exit$' || fail "no clean exit in the log"
down "$work/play2.yaml"

# ---- 3. compose ------------------------------------------------------------------
step "3. contrib/compose/compose.yaml with podman-compose"
command -v podman-compose >/dev/null || fail "no podman-compose (.ci/deps.sh installs it)"
proj=wavedd-kube-$$
export WAVE_IMAGE=$img WAVE_TOKEN_FILE=$work/secret/token
WAVE_PORT=$(wv_free_port) && WAVE_METRICS_PORT=$(wv_free_port) || fail "no free ports"
export WAVE_PORT WAVE_METRICS_PORT
pc() { podman-compose -p "$proj" -f "$src/contrib/compose/compose.yaml" "$@" >>"$work/compose.log" 2>&1; }
composed=1
pc up -d || { cat "$work/compose.log" >&2; fail "podman-compose up"; }
ctr=${proj}_wavedd_1
mprobe() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WAVE_METRICS_PORT$1")" = "$2" ]; }
until_ok 120 mprobe /readyz 200 || fail "compose: /readyz never 200"
out=$(printf '1 2 3\n' | "$bindir/wavectl" --url "tcp://127.0.0.1:$WAVE_PORT" --token-file "$work/client.token" \
        submit reduce --op sum --dtype u32 --format text --input -) || fail "compose: reduce over tcp"
grep -q '^sum uint32 = 6 ' <<<"$out" || fail "compose: reduce: $out"
[ "$(pm exec "$ctr" id -u):$(pm exec "$ctr" id -g)" = 12345:0 ] || fail "compose: not uid 12345 gid 0"
pm healthcheck run "$ctr" >/dev/null || fail "compose: its HEALTHCHECK (status --probe over tcp)"
pm stop -t 60 "$ctr" >/dev/null
[ "$(pm inspect -f '{{.State.ExitCode}}' "$ctr")" = 0 ] || fail "compose: exit $(pm inspect -f '{{.State.ExitCode}}' "$ctr") on stop"
pc down || true
composed=

# ---- 4. podman run: read-only, uid 12345:0, the image's own config --------------
# podman 4.3 gives the image's /run/wavedd to its tmpfs /run (and to a
# tmpfs of its own) without the group's write bit, so the socket folder is
# a tmpfs chowned to the container's user (:U; docs/service.md, "Container")
step "4. podman run --read-only --user 12345:0, ipc in a tmpfs /run/wavedd"
ctr=wavedd-kube-ro-$$
pm run -d --name "$ctr" --health-interval disable --read-only --user 12345:0 \
  --tmpfs /run/wavedd:U \
  -v "$work/secret/token:/var/lib/wavedd/token:ro" "$img" >/dev/null
until_ok 120 pm healthcheck run "$ctr" || fail "read-only: the HEALTHCHECK never passed"
pm exec "$ctr" wavectl status --json | grep -q '"ready": true' || fail "read-only: not ready over ipc"
pm logs "$ctr" 2>&1 | grep -q 'generated token' && fail "read-only: a mounted token was replaced"
pm stop -t 60 "$ctr" >/dev/null
[ "$(pm inspect -f '{{.State.ExitCode}}' "$ctr")" = 0 ] || fail "read-only: exit on stop"
pm rm -f "$ctr" >/dev/null
step "ok"
