#!/usr/bin/env bash
# tests/slurm/fleet_test.sh BUILD_DIR - the fleet on the Slurm test cluster.
#
# Brings up tests/slurm/cluster.sh (one slurmctld, three slurmd on
# loopback), and submits contrib/slurm/wavedd.sbatch twice, with CPU
# devices standing in for GPUs:
#   1. all three daemons healthy: fleet reductions (every float op, masked,
#      chunks empty and not, pieces of 256 rows) give the bits and counts
#      of the same jobs on one standalone daemon; every daemon exits 0;
#   2. n2's device faults after 3 steps (wavedd-test's fake backend, the
#      daemons of this run are wavedd-test) and n3's wavedd is
#      killed with SIGKILL once ready: the same jobs still give the exact
#      bits, wavectl names both daemons as failed, n1 and n2 exit 0 and
#      n3 shows it was killed;
#   3. n3's port is taken before the batch: its wavedd exits 1 at start,
#      and the batch job fails at once (long before its readiness wait
#      ends), naming n3's log and why.
# Exit 0 pass, 1 fail, 77 skipped (not root: slurmd must run as root).
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: fleet_test.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/../skip.sh"
[ "$(id -u)" -eq 0 ] || wv_skip "the Slurm test cluster needs root"
WAVEDD=$build/wavedd
WAVEDD_TEST=$build/wavedd-test  # wavedd plus the fake backend (workers/fake/)
WAVECTL=$build/wavectl
# the fleet re-hashes winners with the daemons' packs (docs/fleet.md)
export WAVE_PACKS_DIR=$src/config/packs
dir=$(mktemp -d /tmp/wslurm.XXXXXX)
# slurmctld, n1..n3's slurmd, then n1..n3's wavedd: seven ports in a row,
# free and below the ephemeral range, where srun's and slurmstepd's own
# listeners and every client's port come from (a daemon beaten to its port
# there exits 1 at start, and the batch job then waits out its readiness)
. "$src/tests/proc.sh"  # wv_free_port
export WAVE_SLURM_PORT=${WAVE_SLURM_PORT:-$(wv_free_port 7)}
[ -n "$WAVE_SLURM_PORT" ] || { echo "FAIL: no seven free ports in a row"; exit 1; }
daemon_port=$((WAVE_SLURM_PORT + 4))
fail=0
single_pid=
squat_pid=

cleanup() {
  [ -n "$single_pid" ] && kill -TERM "$single_pid" 2>/dev/null && wait "$single_pid" 2>/dev/null
  [ -n "$squat_pid" ] && kill "$squat_pid" 2>/dev/null && wait "$squat_pid" 2>/dev/null
  bash "$src/tests/slurm/cluster.sh" stop "$dir/cluster"
  if [ "$fail" -eq 0 ]; then rm -rf "$dir"; else echo "fleet_test: kept $dir for a look"; fi
}
trap cleanup EXIT
die() { echo "FAIL: $*"; fail=1; exit 1; }
# the last lines of a batch's daemon logs: why a daemon did not come up
daemon_logs() {
  local f
  for f in "$dir/logs-$1"/wavedd-*.log; do
    [ -e "$f" ] && printf '\n%s:\n%s' "${f##*/}" "$(tail -4 "$f")"
  done
}

bash "$src/tests/slurm/cluster.sh" start "$dir/cluster" || die "cluster did not start"
. "$dir/cluster/env"

# ---- data: random rows (NaN, inf, subnormals and all), empty and all-masked chunks
cd "$dir"
head -c $((4 * 300001)) /dev/urandom > a.bin
head -c $((4 * 70000)) /dev/urandom > b.bin
: > c.bin
head -c $((4 * 1000)) /dev/urandom > d.bin
head -c $((4 * 200000)) /dev/urandom > m1.bin      # mostly nonzero: selected
head -c $((4 * 100001)) /dev/zero > m2.bin         # rows 200000..300000: masked
head -c $((4 * 71000)) /dev/urandom > m3.bin
head -c $((4 * 101001)) /dev/urandom > m4.bin
# small integers as float bits too: sums whose bits depend on the tree
for i in $(seq 1 5000); do printf '%s ' "$((RANDOM % 7)).$RANDOM"; done > e.txt
jobs_file=$dir/jobs.txt
: > "$jobs_file"
for op in sum min max extent; do
  echo "--op $op --dtype f32 --format raw --input a.bin --input b.bin --input c.bin --input d.bin --mask m1.bin --mask m2.bin --mask m3.bin" >> "$jobs_file"
  echo "--op $op --dtype f32 --format raw --input a.bin --input c.bin --input b.bin" >> "$jobs_file"
done
echo "--op sum --dtype f32 --format text --input e.txt --input e.txt" >> "$jobs_file"
for op in sum min max and or xor; do
  echo "--op $op --dtype s32 --format raw --input a.bin --input d.bin --mask m1.bin --mask m4.bin" >> "$jobs_file"
done
echo "--op sum --dtype f32 --format raw --input c.bin" >> "$jobs_file"   # empty job
# hash jobs (protocol 2: segments): unaligned starts, winners past max_winners
hash_file=$dir/hash.txt
cat > "$hash_file" <<H
--pack small --nonce 12345 --count 200000 --target 0010000000000000 --max-winners 20
--pack closed --nonce 1000000007 --count 150001 --target 0004000000000000 --max-winners 3 --segment-log2 10
--pack small --nonce 0 --count 65536 --target 0 --max-winners 0
H

# The answer's bits and count, from wavectl's JSON.
key() { sed -n 's/.*"bits": \(\[[^]]*\]\), "count": \([0-9]*\).*/\1 \2/p' "$1"; }
# A hash result's job fingerprint, segments, best, winners and their count.
hkey() {
  for k in job_fingerprint segment_log2 segment_count winner_count hashes; do
    grep -o "\"$k\": [^,}]*" "$1" | head -1
  done
  grep -o '"best": {[^}]*}' "$1" | head -1
  grep -o '"winners": \[[^]]*\]' "$1" | head -1
}

# ---- the baseline: one standalone daemon
cat > single.yaml <<YAML
listen: [ipc://$dir/single.sock]
log_level: warn
packs: {dir: $src/config/packs, load: [small, closed]}
devices: [{name: cpu0, backend: cpu, threads: 1}]
YAML
"$WAVEDD" --config single.yaml --foreground 2> single.log &
single_pid=$!
for i in $(seq 1 100); do "$WAVECTL" --url "ipc://$dir/single.sock" --timeout 1000 status --probe && break; sleep 0.1; done
n=0
while read -r args; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$WAVECTL" --url "ipc://$dir/single.sock" submit reduce $args --json > "base-$n.json" || die "baseline job $n: $args"
done < "$jobs_file"
njobs=$n
n=0
while read -r args; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$WAVECTL" --url "ipc://$dir/single.sock" submit hash $args --json > "hbase-$n.json" || die "baseline hash job $n: $args"
done < "$hash_file"
nhash=$n

# ---- the job script the batch step runs (with WAVE_FLEET set)
cat > job.sh <<JOB
#!/usr/bin/env bash
set -u
cd "$dir"
tag=\$1
if [ "\$tag" = faults ]; then
  kill -KILL "\$(cat "$dir/logs-\$tag/wavedd-n3.pid")"   # n3 dies, once ready
fi
n=0
while read -r args; do
  n=\$((n + 1))
  "$WAVECTL" --timeout 3000 submit reduce \$args --piece 256 --fleet "\$WAVE_FLEET" --json \
    > "\$tag-\$n.json" 2> "\$tag-\$n.err" || exit 1
done < "$jobs_file"
n=0
while read -r args; do
  n=\$((n + 1))
  "$WAVECTL" --timeout 3000 submit hash \$args --piece 16384 --fleet "\$WAVE_FLEET" --json \
    > "\$tag-h\$n.json" 2> "\$tag-h\$n.err" || exit 1
done < "$hash_file"
JOB
chmod +x job.sh

run_batch() {  # tag, per-node config template, the daemon binary
  local tag=$1 cfg=$2 bin=${3:-$WAVEDD}
  mkdir -p "$dir/logs-$tag"
  WAVEDD=$bin WAVECTL=$WAVECTL WAVE_CONFIG=$cfg WAVE_FLEET_PORT="$daemon_port+" \
  WAVE_LOGDIR=$dir/logs-$tag WAVE_READY_TIMEOUT=60 WAVE_CONTRIB_DIR=$src/contrib/slurm \
    timeout 300 sbatch --wait -N 3 --gres=gpu:2 --output="$dir/batch-$tag.out" \
      --chdir="$dir" "$src/contrib/slurm/wavedd.sbatch" --run "$dir/job.sh" "$tag"
}

compare() {  # tag
  local tag=$1
  for n in $(seq 1 "$njobs"); do
    local want got
    want=$(key "base-$n.json"); got=$(key "$tag-$n.json")
    [ -n "$want" ] || die "baseline job $n printed no bits"
    [ "$want" = "$got" ] || die "$tag job $n ($(sed -n "${n}p" "$jobs_file")): fleet '$got', one daemon '$want'"
  done
  echo "ok: $tag: $njobs fleet reductions equal one daemon's bits and counts"
  for n in $(seq 1 "$nhash"); do
    local want got
    want=$(hkey "hbase-$n.json"); got=$(hkey "$tag-h$n.json")
    [ -n "$want" ] && grep -q job_fingerprint "hbase-$n.json" || die "baseline hash job $n printed no job fingerprint"
    [ "$want" = "$got" ] || die "$tag hash job $n: fleet
$got
one daemon
$want"
  done
  echo "ok: $tag: $nhash fleet hash jobs equal one daemon's job fingerprint, segments, winners and best"
}

# Per-node configs: %n is the node name (wavedd.sbatch).
for node in n1 n2 n3; do
  dev="backend: cpu"; [ "$node" = n2 ] && dev='backend: fake, device: "fault_after=3"'
  cat > "node-$node.yaml" <<YAML
listen: ["tcp://127.0.0.1:\${WAVE_PORT}"]
auth: {tokens: [{name: job, file: "\${WAVE_TOKEN_FILE}"}]}
log_level: info
packs: {dir: $src/config/packs, load: [small, closed]}
devices: [{name: cpu0, $dev, threads: 1}]
YAML
done
# the healthy run: devices: auto (no GPU backend here: one CPU device each)
cat > node-auto.yaml <<YAML
listen: ["tcp://127.0.0.1:\${WAVE_PORT}"]
auth: {tokens: [{name: job, file: "\${WAVE_TOKEN_FILE}"}]}
log_level: info
packs: {dir: $src/config/packs, load: [small, closed]}
devices: auto
YAML

# ---- 1. healthy fleet
run_batch healthy "$dir/node-auto.yaml"; rc=$?
cat "$dir/batch-healthy.out"
[ $rc -eq 0 ] || die "healthy batch job exit $rc$(daemon_logs healthy)"
compare healthy
for node in n1 n2 n3; do
  grep -q "exited 0" "$dir/logs-healthy/wavedd-$node.log" || die "healthy: wavedd on $node did not exit 0: $(tail -3 "$dir/logs-healthy/wavedd-$node.log")"
done
echo "ok: healthy: the three daemons stopped with exit 0"

# ---- 2. one node killed, one whose device faults
run_batch faults "$dir/node-%n.yaml" "$WAVEDD_TEST"; rc=$?
cat "$dir/batch-faults.out"
[ -s faults-1.json ] || die "faults: the batch job ran no job (exit $rc)$(daemon_logs faults)"
compare faults
grep -q "DROPPED (" faults-1.err || die "faults: wavectl did not report failed daemons: $(cat faults-1.err)"
grep -q "127.0.0.1:$((daemon_port + 2)).*DROPPED (" faults-1.err || die "faults: n3 (killed) not reported failed"
grep -q "127.0.0.1:$((daemon_port + 1)).*DROPPED (" faults-1.err || die "faults: n2 (faulted) not reported failed"
grep -q '"failed": true' faults-h1.json || die "faults: the fleet hash result names no failed daemon"
for node in n1 n2; do
  grep -q "exited 0" "$dir/logs-faults/wavedd-$node.log" || die "faults: wavedd on $node did not exit 0"
done
grep -q "exited 137" "$dir/logs-faults/wavedd-n3.log" || die "faults: n3's wavedd was not the one killed"
[ $rc -eq 1 ] || die "faults: the batch job should report the killed daemon (exit 1), got $rc"
echo "ok: faults: exact with n3 killed and n2 faulted; n1 and n2 exit 0"

# ---- 3. n3's port taken: the batch fails at once, naming n3
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(600)' \
  "$((daemon_port + 2))" &
squat_pid=$!
for _ in $(seq 1 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$((daemon_port + 2))") 2>/dev/null && break
  sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$((daemon_port + 2))") 2>/dev/null || die "squatted: n3's port not taken"
run_batch squatted "$dir/node-auto.yaml"; rc=$?
kill "$squat_pid" 2>/dev/null; wait "$squat_pid" 2>/dev/null; squat_pid=
[ $rc -eq 1 ] || die "squatted: the batch job should fail (exit 1), got $rc"
grep -q "a daemon exited before every daemon was ready (.*wavedd-n3.log)" "$dir/batch-squatted.out" ||
  die "squatted: the batch did not name n3's log: $(cat "$dir/batch-squatted.out")"
grep -q "listen tcp://127.0.0.1:$((daemon_port + 2)): Address in use" "$dir/batch-squatted.out" ||
  die "squatted: the batch did not say why: $(cat "$dir/batch-squatted.out")"
grep -q "not ready after" "$dir/batch-squatted.out" &&
  die "squatted: the batch waited out its readiness: $(cat "$dir/batch-squatted.out")"
[ -e squatted-1.json ] && die "squatted: the job ran without n3"
echo "ok: squatted: n3's wavedd could not listen, the batch failed at once naming it"
echo "PASS"
