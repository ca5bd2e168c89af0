#!/usr/bin/env bash
# tests/readme/run.sh - the README test (ctest: readme_test): every shell
# block of README.md, and the examples of docs/cli.md, run as written, in a
# fresh container, as a non-root user, on 2 CPUs (podman run --cpus 2), so
# that a page that drifts from the code fails CI.
#
#  * The image: Debian 12 (tests/container/base.sh) with what the demo
#    installs (.ci/deps.sh demo) and a user (Containerfile), built once per
#    machine and reused while deps.sh and the Containerfile are unchanged.
#  * Inside: the checkout's files (git ls-files: tracked and untracked, not
#    ignored) copied to ~/src; then README.md's blocks, in order, each run
#    by bash -e -o pipefail from ~/src (the first is `bash .ci/demo`, which
#    builds and writes the tour's sample files); at the end of each block
#    its background jobs (the tour's wavedd) are stopped.
#  * Then docs/cli.md's examples (below), then README.md's blocks a second
#    time with XDG_RUNTIME_DIR unset, as a user without a login session
#    (su, podman exec, a CI runner) meets them: the same image, the demo's
#    build already there (so the second pass costs the tour's time, not a
#    build's), and the daemon must take /tmp/wavedd-UID.
#  * A block after `<!-- test: skip REASON -->` is not run and the reason
#    is printed; `<!-- test: container -->` is tests/container/run.sh's.
#  * docs/cli.md's "Examples" run from ~ with ~/src/build on PATH, against
#    a daemon the test starts as their "gpu-box" (--add-host gpu-box:
#    127.0.0.1): tcp 5555 and tls+tcp 5556 with the token in
#    ~/.wave/gpu-box.token, site-ca.crt (made here with openssl), and the
#    files they name (part1.bin, part2.bin, x.npy, keep.npy).
#  * docs/fleet.md's shell blocks, marked as README.md's are, run the same
#    way against the same gpu-box daemon (the others need hosts or a Slurm
#    cluster, and say so in their skip markers).
# Exit 77 (skipped) without podman or root, as the container tests.
set -euo pipefail
trap 'echo "readme_test: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
. "$(dirname "$0")/../skip.sh"
command -v podman >/dev/null || wv_skip "no podman"
[ "$(id -u)" -eq 0 ] || wv_skip "needs root"
. "$src/tests/container/podman.sh"   # CONTAINERS_CONF, pm
t0=$(date +%s)
step() { echo "readme_test: [$(( $(date +%s) - t0 )) s] $*"; }
work=$(mktemp -d /var/tmp/wavedd-readme.XXXXXX)
name=wavedd-readme-$$
cleanup() {
  pm rm -f -t 0 "$name" >/dev/null 2>&1 || true
  rm -rf "$work" "$podman_conf"
}
trap cleanup EXIT

step "base image"
bash "$src/tests/container/base.sh"
base=${WAVE_BASE_IMAGE:-localhost/wavedd-base:bookworm}
sum=$(cat "$src/.ci/deps.sh" "$here/Containerfile" | sha256sum | cut -c1-12)
img=localhost/wavedd-readme:deps-$sum
if ! pm image exists "$img"; then
  step "build $img (the build dependencies; once per machine)"
  mkdir "$work/ctx"
  cp "$src/.ci/deps.sh" "$work/ctx/"
  pm build --build-arg BASE="$base" -f "$here/Containerfile" -t "$img" "$work/ctx" \
    >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
fi

# the blocks, and what is skipped
mkdir "$work/readme" "$work/cli" "$work/fleet"
bash "$here/blocks.sh" "$src/README.md" "$work/readme"
bash "$here/blocks.sh" "$src/docs/cli.md" "$work/cli"
bash "$here/blocks.sh" "$src/docs/fleet.md" "$work/fleet"
for page in README.md:readme docs/fleet.md:fleet; do
  n_run=0
  for m in "$work/${page#*:}"/*.meta; do
    [ -f "$m" ] || continue
    read -r line mark reason <"$m"
    case $mark in
      run) n_run=$((n_run + 1)); echo "readme_test: ${page%:*}:$line: run" ;;
      skip) echo "readme_test: ${page%:*}:$line: skipped: $reason"; rm "${m%.meta}.sh" ;;
      container) echo "readme_test: ${page%:*}:$line: skipped: the container test runs it (tests/container/run.sh)"
                 rm "${m%.meta}.sh" ;;
      *) echo "readme_test: ${page%:*}:$line: unknown marker '$mark'" >&2; exit 1 ;;
    esac
  done
  [ "$n_run" -gt 0 ] || { echo "readme_test: no block of ${page%:*} to run" >&2; exit 1; }
done
[ -n "$(ls "$work"/cli/*.sh 2>/dev/null)" ] || { echo "readme_test: no examples in docs/cli.md" >&2; exit 1; }
echo "readme_test: docs/cli.md:$(cut -d' ' -f1 "$work"/cli/001.meta): the Examples: run"

# the sources, as the checkout has them
git -C "$src" ls-files -z --cached --others --exclude-standard |
  tar -C "$src" --null -T - -cf "$work/src.tar"
# the examples' gpu-box: a CA and the daemon's certificate for that name
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$work/site-ca.key" -out "$work/site-ca.crt" -days 2 -subj /CN=site-ca >/dev/null 2>&1
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$work/gpu-box.key" -out "$work/gpu-box.csr" -subj /CN=gpu-box >/dev/null 2>&1
printf 'subjectAltName=DNS:gpu-box\n' >"$work/san.ext"
openssl x509 -req -in "$work/gpu-box.csr" -CA "$work/site-ca.crt" -CAkey "$work/site-ca.key" \
  -CAcreateserial -days 2 -extfile "$work/san.ext" -out "$work/gpu-box.crt" >/dev/null 2>&1
rm -f "$work/site-ca.key" "$work/gpu-box.csr"
cp "$here/inside.sh" "$work/"
chmod -R a+rX "$work"

step "run the blocks in $img (--cpus 2, as user)"
pm run --name "$name" --rm --cpus 2 --add-host gpu-box:127.0.0.1 \
  -v "$work:/fixture:ro" "$img" bash /fixture/inside.sh
step "ok"
