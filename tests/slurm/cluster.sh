#!/usr/bin/env bash
# tests/slurm/cluster.sh - a Slurm test cluster on loopback, for CI and hands.
#
#   tests/slurm/cluster.sh start DIR   # munged, slurmctld, slurmd -N n1..n3
#   . DIR/env                          # SLURM_CONF for sinfo, srun, sbatch
#   tests/slurm/cluster.sh stop DIR    # cancel jobs, stop daemons, wait
#
# Everything lives under DIR (created if missing): munge key and socket,
# slurm.conf/gres.conf, state, spool, logs, pid files and fake GPU device
# nodes (mknod, character devices, never opened by anyone).  One slurmctld
# and three slurmd (Debian's slurmd is built with multiple-slurmd support:
# -N picks the node) listen on 127.0.0.1 only (CommunicationParameters=
# NoInAddrAny,NoCtldInAddrAny), on ports WAVE_SLURM_PORT (default 26810) ..
# +3.  Each node has 4 CPUs and 2 "gpu" GRES (gres.conf AutoDetect=off,
# File=DIR/dev/...); proctrack/linuxproc, task/none, no accounting: nothing
# needs cgroups, systemd or a database.  Must run as root (slurmd starts
# job steps as the submitting user).  Nodes: WAVE_SLURM_NODES (default 3).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
port=${WAVE_SLURM_PORT:-26810}
nodes=${WAVE_SLURM_NODES:-3}

die() { echo "cluster.sh: $*" >&2; exit 1; }

# Wait (up to $2 tenths of a second) for the process in pid file $1 to end.
wait_gone() {
  local pidf=$1 n=${2:-100} pid
  [ -f "$pidf" ] || return 0
  pid=$(cat "$pidf" 2>/dev/null || true)
  [ -n "$pid" ] || return 0
  while [ "$n" -gt 0 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
  kill -0 "$pid" 2>/dev/null && return 1
  return 0
}

stop_pid() {   # pid file, name
  local pidf=$1 pid
  [ -f "$pidf" ] || return 0
  pid=$(cat "$pidf" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait_gone "$pidf" 100 || { echo "cluster.sh: $2 ($pid) ignores SIGTERM, killing" >&2; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$pidf"
}

do_stop() {
  [ -d "$dir" ] || return 0
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ]; then
    SLURM_CONF=$dir/slurm.conf scancel --quiet --full --signal=TERM --user=root 2>/dev/null || true
    SLURM_CONF=$dir/slurm.conf scancel --quiet --user=root 2>/dev/null || true
  fi
  for i in $(seq 1 "$nodes"); do stop_pid "$dir/slurmd-n$i.pid" "slurmd n$i"; done
  stop_pid "$dir/slurmctld.pid" slurmctld
  stop_pid "$dir/munge/munged.pid" munged
}

do_start() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (slurmd runs job steps as their user)"
  for b in munged slurmctld slurmd sinfo srun; do
    command -v $b >/dev/null || die "$b not found (apt-get install slurm-wlm munge)"
  done
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ${#dir} -lt 80 ] || die "$dir: too long a path for the munge socket"
  mkdir -p "$dir/munge" "$dir/state" "$dir/log" "$dir/dev"
  chmod 0700 "$dir/munge"
  for i in $(seq 1 "$nodes"); do mkdir -p "$dir/spool/n$i"; done

  # munge: its own key, socket and files.
  if [ ! -f "$dir/munge/munge.key" ]; then
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$dir/munge/munge.key"
  fi
  munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
         --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
         --seed-file="$dir/munge/munged.seed" || die "munged did not start: $(tail -3 "$dir/log/munged.log" 2>/dev/null)"

  # Fake GPUs: character device nodes (NVIDIA's major 195), two per node.
  local gres="AutoDetect=off"$'\n'
  for i in $(seq 1 "$nodes"); do
    for g in 0 1; do
      local m=$(( (i - 1) * 2 + g ))
      [ -e "$dir/dev/nvidia$m" ] || mknod "$dir/dev/nvidia$m" c 195 "$m"
    done
    gres+="NodeName=n$i Name=gpu File=$dir/dev/nvidia[$(( (i - 1) * 2 ))-$(( (i - 1) * 2 + 1 ))]"$'\n'
  done
  printf '%s' "$gres" > "$dir/gres.conf"

  local host; host=$(hostname -s)
  cat > "$dir/slurm.conf" <<CONF
# Written by tests/slurm/cluster.sh: a loopback test cluster.
ClusterName=wavetest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
KillWait=5
InactiveLimit=0
MinJobAge=30
CONF
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + i)) CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1024 Gres=gpu:2 State=UNKNOWN" >> "$dir/slurm.conf"
  done
  echo "PartitionName=main Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$dir/slurm.conf"
  printf 'export SLURM_CONF=%s/slurm.conf\n' "$dir" > "$dir/env"

  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$dir/slurm.conf" -i || die "slurmctld did not start: $(tail -5 "$dir/log/slurmctld.log" 2>/dev/null)"
  for i in $(seq 1 "$nodes"); do
    slurmd -f "$dir/slurm.conf" -N "n$i" || die "slurmd n$i did not start: $(tail -5 "$dir/log/slurmd-n$i.log" 2>/dev/null)"
  done
  # Up when every node is idle (200 x 0.1 s at most).
  local t=0
  while [ $t -lt 200 ]; do
    local idle
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | wc -l)
    [ "$idle" -eq "$nodes" ] && { echo "cluster.sh: $nodes nodes idle after $((t / 10)).$((t % 10)) s (SLURM_CONF=$SLURM_CONF)"; return 0; }
    sleep 0.1; t=$((t + 1))
  done
  sinfo -N >&2 || true
  tail -5 "$dir"/log/*.log >&2 || true
  die "nodes not idle after 20 s"
}

case $cmd in
  start) do_start ;;
  stop) do_stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
