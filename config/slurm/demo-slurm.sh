#!/usr/bin/env bash
# A one-machine Slurm 22.05 cluster with Phalanx's SPANK plugin: munged, slurmctld and 4 slurmd
# (Debian's multiple-slurmd build: n1..n4 on 127.0.0.1, distinct ports), 8 fake GPUs per node
# (mknod character devices, never opened), a two-leaf topology.conf (leaf1 = n[1-2], leaf2 =
# n[3-4]), phalanx_spank.so loaded through the lab's plugstack.conf and config/slurm/job_submit.lua
# through JobSubmitPlugins=lua. It submits a few demo jobs with sbatch, shows where they went and
# what their steps saw, and leaves the cluster running.
#
#   config/slurm/demo-slurm.sh [BUILD_DIR]   start (or restart) it; BUILD_DIR default: ./build
#   config/slurm/demo-slurm.sh stop          stop it (jobs, slurmd, slurmctld, munged)
#
# Run as root on Debian 12: installs slurm-wlm, slurmctld, slurmd, slurm-client, munge and
# libslurm-dev if missing (never the slurm-wlm-emulator packages: a front-end build). Needs
# phalanx_spank.so built in BUILD_DIR (cmake --build build --target phalanx_spank).
# Everything (config, state, logs, pid files, munge key and socket, fake devices, job output)
# lives in $PHALANX_SLURM_DEMO_DIR (default /tmp/phalanx-slurm-demo); nothing in /etc is read or
# written. Clients: `source $PHALANX_SLURM_DEMO_DIR/env.sh` (sets SLURM_CONF).
# Knobs: PHALANX_SLURM_PORT_BASE (slurmctld's port, slurmd's are the next 4, phalanxd's report
# port with PHALANX_SLURM_REPORT=tcp the 9th after it; default 16817),
# PHALANX_SLURM_PLUGIN_ARGS (extra plugstack.conf arguments, e.g. "timeout_ms=100"),
# PHALANX_SLURM_DEMO_JOBS=0 (start the cluster only: the tests), PHALANX_SLURM_CRED_EXPIRE
# (seconds before a requeued job may run again; default 10, Slurm's is 120), PHALANX_SLURM_HOLD=1
# (job_submit.lua's HOLD on: managed jobs wait fallback_delay_s, then Slurm runs them),
# PHALANX_SLURM_PHALANXD=1 (start BUILD_DIR's phalanxd in Slurm mode, with HOLD on; the default
# when demo jobs are submitted: it places the managed ones; config $PHALANX_SLURM_DEMO_DIR/etc/
# phalanxd.yaml, log log/phalanxd.log, store state/phalanxd/), PHALANX_SLURM_MIN_RUNTIME (its
# scheduler.min_runtime_before_preemption; default the core's 600 s), PHALANX_SLURM_ORDER (its
# scheduler.order: priority or fifo), PHALANX_SLURM_SCHED_PARAMS
# (slurm.conf SchedulerParameters; default "bf_interval=1,sched_interval=2", the lab's fast cycles;
# empty: Slurm's defaults), PHALANX_SLURM_DEBUG_FLAGS (DebugFlags, e.g. Backfill; default none),
# PHALANX_SLURM_CTLD_DEBUG (SlurmctldDebug, default info), PHALANX_SLURM_MIN_JOB_AGE (seconds a
# finished job stays in scontrol show job, default 600).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
demo=${PHALANX_SLURM_DEMO_DIR:-/tmp/phalanx-slurm-demo}
port=${PHALANX_SLURM_PORT_BASE:-16817}
nodes=4
gpus=8
host=$(hostname -s)

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() {
  echo "demo-slurm: $*" >&2
  exit 1
}

# until_ok SECONDS COMMAND...: retries COMMAND every 0.1 s; fails after SECONDS.
until_ok() {
  local secs=$1 end
  shift
  end=$((SECONDS + secs))
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}

# A pid is alive when it exists and is not a zombie (PID 1 of containers and CI machines often
# reaps late, and kill -0 succeeds on a zombie).
alive() { [[ -n "${1:-}" && -r "/proc/$1/status" ]] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }

# stop_pidfiles NAME FILE...: TERM the processes named in the pid files whose command is NAME
# (a recycled pid is never hit), in parallel; KILL what is left after 10 s.
stop_pidfiles() {
  local want=$1 f pid pids=()
  shift
  for f in "$@"; do
    [[ -s "$f" ]] || {
      rm -f "$f"
      continue
    }
    pid=$(cat "$f")
    if alive "$pid" && [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$want"* ]]; then
      kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    fi
    rm -f "$f"
  done
  for pid in "${pids[@]}"; do
    until_ok 10 bash -c '! { [[ -r /proc/$1/status ]] && ! grep -q "^State:[[:space:]]*Z" /proc/$1/status; }' _ "$pid" ||
      kill -KILL "$pid" 2>/dev/null || true
  done
}

stop_demo() {
  [[ -d "$demo/run" ]] || {
    echo "demo-slurm: no lab in $demo"
    return 0
  }
  shopt -s nullglob
  export SLURM_CONF=$demo/etc/slurm.conf
  # Cancel the lab's jobs while slurmctld runs, so no slurmstepd is left behind.
  if alive "$(cat "$demo/run/slurmctld.pid" 2>/dev/null)"; then
    local jobs
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [[ -n "$jobs" ]]; then
      # shellcheck disable=SC2086
      timeout 10 scancel $jobs 2>/dev/null || true
      until_ok 10 bash -c '[[ -z "$(timeout 5 squeue -h -o %i -t R,CG 2>/dev/null)" ]]' || true
    fi
  fi
  stop_pidfiles phalanxd "$demo/run/phalanxd.pid"
  stop_pidfiles slurmd "$demo"/run/slurmd-*.pid
  stop_pidfiles slurmctld "$demo/run/slurmctld.pid"
  # slurmstepd processes of this lab that outlived their slurmd carry PHALANX_SLURM_LAB=$demo.
  local p
  for p in /proc/[0-9]*; do
    [[ "$(cat "$p/comm" 2>/dev/null)" == slurmstepd ]] || continue
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "PHALANX_SLURM_LAB=$demo"; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  stop_pidfiles munged "$demo/run/munged.pid"
  echo "demo-slurm: stopped (logs kept in $demo/log)"
}

case "${1:-}" in
  stop)
    stop_demo
    exit 0
    ;;
  -h | --help)
    sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac

[[ $(id -u) -eq 0 ]] || die "run as root (slurmd and munged run as root in the lab)"
build=$(cd "${1:-$repo/build}" 2>/dev/null && pwd) || die "no build directory '${1:-$repo/build}'"
plugin=$build/plugins/spank/phalanx_spank.so
[[ -f "$plugin" ]] || die "$plugin is missing; build it first: cmake --build $build --target phalanx_spank (needs libslurm-dev)"
with_phalanxd=${PHALANX_SLURM_PHALANXD:-${PHALANX_SLURM_DEMO_JOBS:-1}}
phalanxd=$build/scheduler/service/phalanxd
if [[ "$with_phalanxd" == 1 ]]; then
  [[ -x "$phalanxd" ]] || die "$phalanxd is missing; build it first: cmake --build $build --target phalanxd (or PHALANX_SLURM_PHALANXD=0)"
  export PHALANX_SLURM_HOLD=1
fi

# 1. packages (Debian 12: Slurm 22.05.8, munge 0.5.15)
packages=(slurm-wlm slurmctld slurmd slurm-client munge libslurm-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# slurm-wlm-emulator, if installed, takes over the slurmd alternative with a front-end build.
case "$(readlink -f "$(command -v slurmd)")" in
  */slurmd-wlm) ;;
  *) die "slurmd is not Debian's slurmd-wlm (slurm-wlm-emulator installed? update-alternatives --set slurmd /usr/sbin/slurmd-wlm)" ;;
esac

# 2. a clean state directory (a running lab there is stopped first)
stop_demo >/dev/null
rm -rf "$demo"/{etc,state,log,run,out,lib}
mkdir -p "$demo"/{etc,state/ctld,log,run,munge,dev,out,lib,ckpt}
# munged refuses a key or socket below a group/world-writable directory without the sticky bit,
# and wants the socket directory to be searchable by all.
chmod 755 "$demo" "$demo/munge"
chmod 1777 "$demo/out" "$demo/ckpt"
for i in $(seq 1 $nodes); do mkdir -p "$demo/state/d/n$i"; done
for g in $(seq 0 $((gpus - 1))); do
  # slurmd accepts only character or block devices as GPU files; major 195 is nvidia's.
  [[ -c "$demo/dev/nvidia$g" ]] || {
    rm -f "$demo/dev/nvidia$g"
    mknod "$demo/dev/nvidia$g" c 195 "$g" || die "cannot make the fake GPU device $demo/dev/nvidia$g (mknod needs CAP_MKNOD)"
  }
done
# A copy: rebuilding the plugin does not change what the running daemons loaded.
cp "$plugin" "$demo/lib/phalanx_spank.so"
# A job's "checkpoint done" to phalanxd (docs/slurm.md, "Step reports"), when built.
[[ -x "$build/plugins/spank/phalanx-ckpt-done" ]] && cp "$build/plugins/spank/phalanx-ckpt-done" "$demo/lib/"

# 3. munge with a private key and socket
[[ -s "$demo/munge/munge.key" ]] || mungekey -c -k "$demo/munge/munge.key"
chmod 600 "$demo/munge/munge.key"
munged -S "$demo/munge/munge.sock" --key-file="$demo/munge/munge.key" --log-file="$demo/log/munged.log" \
  --pid-file="$demo/run/munged.pid" --seed-file="$demo/munge/munged.seed" --num-threads=2
munge -S "$demo/munge/munge.sock" -n | unmunge -S "$demo/munge/munge.sock" >/dev/null || die "munge self-test failed"

# 4. Slurm's configuration
node_lines=""
for i in $(seq 1 $nodes); do
  node_lines+="NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + i)) CPUs=16 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=64000 Gres=gpu:$gpus State=UNKNOWN"$'\n'
done
cat >"$demo/etc/slurm.conf" <<EOF
# Written by config/slurm/demo-slurm.sh: the Phalanx Slurm lab (docs/slurm.md).
ClusterName=phalanx-lab
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$demo/munge/munge.sock,cred_expire=${PHALANX_SLURM_CRED_EXPIRE:-10}
StateSaveLocation=$demo/state/ctld
SlurmdSpoolDir=$demo/state/d/%n
SlurmctldPidFile=$demo/run/slurmctld.pid
SlurmdPidFile=$demo/run/slurmd-%n.pid
SlurmctldLogFile=$demo/log/slurmctld.log
SlurmdLogFile=$demo/log/slurmd-%n.log
SlurmctldDebug=${PHALANX_SLURM_CTLD_DEBUG:-info}
SlurmdDebug=info
PlugStackConfig=$demo/etc/plugstack.conf
JobSubmitPlugins=lua
# No cgroups: works in containers and VMs without a delegated cgroup tree.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MailProg=/bin/true
TopologyPlugin=topology/tree
SchedulerType=sched/backfill
$(sp=${PHALANX_SLURM_SCHED_PARAMS-bf_interval=1,sched_interval=2}; [[ -n "$sp" ]] && echo "SchedulerParameters=$sp")
$([[ -n "${PHALANX_SLURM_DEBUG_FLAGS:-}" ]] && echo "DebugFlags=$PHALANX_SLURM_DEBUG_FLAGS")
ReturnToService=2
# The nodes declare more CPUs than this machine has.
SlurmdParameters=config_overrides
SlurmdTimeout=30
SlurmctldTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=${PHALANX_SLURM_MIN_JOB_AGE:-600}
MessageTimeout=10
$node_lines
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$demo/etc/gres.conf" <<EOF
AutoDetect=off
NodeName=n[1-$nodes] Name=gpu File=$demo/dev/nvidia[0-$((gpus - 1))]
EOF
cat >"$demo/etc/topology.conf" <<EOF
SwitchName=leaf1 Nodes=n[1-2]
SwitchName=leaf2 Nodes=n[3-4]
SwitchName=spine Switches=leaf[1-2]
EOF
# phalanxd is not running in the lab (its Slurm mode is not written yet): every managed step
# logs one line about it and runs.
# The fake GPUs' links as `nvidia-smi topo -m` would show them (the plugin's gpu_topology=: a
# managed step's CUDA_VISIBLE_DEVICES follows the best ring): 0-3 on CPU 0, 4-7 on CPU 1, NVLink
# bridges pairing 0-2, 1-3, 4-6, 5-7, PCIe switches within a CPU.
{
  printf '\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tCPU Affinity\n'
  for r in 0 1 2 3 4 5 6 7; do
    printf 'GPU%s' "$r"
    for c in 0 1 2 3 4 5 6 7; do
      if ((r == c)); then l=' X '; elif ((r / 4 != c / 4)); then l=SYS; elif (((r ^ c) == 2)); then l=NV4; else l=PIX; fi
      printf '\t%s' "$l"
    done
    printf '\t%s\n' "$((r / 4 * 16))-$((r / 4 * 16 + 15))"
  done
} >"$demo/etc/gpu-topology.txt"
# Step reports go to phalanxd's Unix socket, or with PHALANX_SLURM_REPORT=tcp to its TCP port
# (PHALANX_SLURM_PORT_BASE + 9), as compute nodes on other hosts would send them.
report_target=$demo/run/phalanxd-report.sock
[[ "${PHALANX_SLURM_REPORT:-unix}" == tcp ]] && report_target=127.0.0.1:$((port + 9))
cat >"$demo/etc/plugstack.conf" <<EOF
required $demo/lib/phalanx_spank.so socket=$report_target munge_socket=$demo/munge/munge.sock timeout_ms=200 checkpoint_dir=$demo/ckpt gpu_topology=$demo/etc/gpu-topology.txt ${PHALANX_SLURM_PLUGIN_ARGS:-}
EOF
hold=false
[[ "${PHALANX_SLURM_HOLD:-0}" == 1 ]] && hold=true
sed "s/^local HOLD = false$/local HOLD = $hold/" "$repo/config/slurm/job_submit.lua" >"$demo/etc/job_submit.lua"
cat >"$demo/env.sh" <<EOF
# source me: the Phalanx Slurm lab's clients (sbatch, srun, squeue, scontrol, ...)
export SLURM_CONF=$demo/etc/slurm.conf
export PHALANX_SLURM_DEMO_DIR=$demo
EOF
export SLURM_CONF=$demo/etc/slurm.conf
# phalanxd in Slurm mode (docs/slurm.md): the lab's topology.conf and gres.conf, a fast poll, the
# lease as long as the plugin's fallback_delay_s (30 s by default).
cat >"$demo/etc/phalanxd.yaml" <<EOF
# Written by config/slurm/demo-slurm.sh (config/slurm/phalanxd-slurm.yaml explains each key).
mode: slurm
socket: $demo/run/phalanxd.sock
store:
  path: $demo/state/phalanxd/phalanxd.db
slurm:
  conf: $demo/etc/slurm.conf
  topology: $demo/etc/topology.conf
  gres: $demo/etc/gres.conf
  poll_interval: ${PHALANX_SLURM_POLL:-1}
  fallback_delay: 30
  start_timeout: 20
  report_socket: $demo/run/phalanxd-report.sock
  munge_socket: $demo/munge/munge.sock
EOF
if [[ "$report_target" != /* ]]; then
  printf '  report_listen: "%s"\n' "$report_target" >>"$demo/etc/phalanxd.yaml"
fi
# PHALANX_SLURM_HTTP=HOST:PORT: phalanxd's HTTP (dashboard at /, /metrics, /api/v1/...).
if [[ -n "${PHALANX_SLURM_HTTP:-}" ]]; then
  printf 'http:\n  listen: "%s"\n' "$PHALANX_SLURM_HTTP" >>"$demo/etc/phalanxd.yaml"
fi
# PHALANX_SLURM_MIN_RUNTIME: the seconds a job runs before a higher class may preempt it (the
# core's default is 600; the tests use 0).
# PHALANX_SLURM_ORDER: the core's queue order (scheduler.order: priority, the default, or fifo,
# as Slurm's priority/basic; the bench compares both).
if [[ -n "${PHALANX_SLURM_MIN_RUNTIME:-}${PHALANX_SLURM_ORDER:-}" ]]; then
  echo 'scheduler:' >>"$demo/etc/phalanxd.yaml"
  [[ -z "${PHALANX_SLURM_MIN_RUNTIME:-}" ]] ||
    printf '  min_runtime_before_preemption: %s\n' "$PHALANX_SLURM_MIN_RUNTIME" >>"$demo/etc/phalanxd.yaml"
  [[ -z "${PHALANX_SLURM_ORDER:-}" ]] || printf '  order: %s\n' "$PHALANX_SLURM_ORDER" >>"$demo/etc/phalanxd.yaml"
fi

# 5. daemons (they inherit PHALANX_SLURM_LAB, so stop_demo can tell this lab's slurmstepd)
PHALANX_SLURM_LAB=$demo slurmctld -f "$demo/etc/slurm.conf" -i # -i: no saved state (wiped above)
until_ok 10 bash -c 'timeout 5 scontrol ping 2>/dev/null | grep -q "is UP"' || die "slurmctld did not start (see $demo/log/slurmctld.log)"
for i in $(seq 1 $nodes); do
  PHALANX_SLURM_LAB=$demo slurmd -f "$demo/etc/slurm.conf" -N "n$i" || die "slurmd n$i did not start (see $demo/log/slurmd-n$i.log)"
done
idle() { [[ $(timeout 5 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l) -ge $nodes ]]; }
until_ok 30 idle || {
  timeout 5 sinfo -N >&2 || true
  die "the nodes did not become idle (see $demo/log/)"
}
say "Slurm lab up in $demo: $nodes nodes x $gpus fake GPUs, leaf1=n[1-2] leaf2=n[3-4]"
sinfo -N -o '%N %T %G'
if [[ "$with_phalanxd" == 1 ]]; then
  # Its own session: a Ctrl-C of a script that started it does not reach it; stop_demo stops it.
  setsid "$phalanxd" --config "$demo/etc/phalanxd.yaml" >>"$demo/log/phalanxd.log" 2>&1 </dev/null &
  echo $! >"$demo/run/phalanxd.pid"
  until_ok 20 test -S "$demo/run/phalanxd.sock" || die "phalanxd did not start (see $demo/log/phalanxd.log)"
  say "phalanxd in Slurm mode (pid $(cat "$demo/run/phalanxd.pid")): managed jobs wait for it (job_submit.lua HOLD)"
fi

if [[ "${PHALANX_SLURM_DEMO_JOBS:-1}" == 0 ]]; then exit 0; fi

say "submitting demo jobs"
cd "$demo/out"
show() {
  echo "\$ $*"
  "$@"
}
if [[ "$with_phalanxd" == 1 ]]; then
  # Occupancy where Slurm alone would split a 16-GPU job across the leaves: n2 and n4 busy.
  show sbatch --parsable -J busy-n2 -w n2 -N1 --gres=gpu:8 -t 2 -o %x-%j.out --wrap 'sleep 20'
  show sbatch --parsable -J busy-n4 -w n4 -N1 --gres=gpu:8 -t 1 -o %x-%j.out --wrap 'sleep 6'
  sleep 2
  echo "# Slurm's own choice for -N2 --gres=gpu:8 now (sbatch --test-only):"
  sbatch --test-only -N2 --gres=gpu:8 --wrap true 2>&1 | sed 's/^/#   /' || true
fi
show sbatch --parsable -J plain -N1 --gres=gpu:2 -o %x-%j.out --wrap 'echo "plain job on $(hostname) CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; env | grep ^PHALANX_ | sort'
show sbatch --parsable -J leaf16 -N2 --gres=gpu:8 --phx-topology=leaf --phx-checkpoint=USR1@120 --phx-class=high \
  -o %x-%j.out --wrap 'env | grep ^PHALANX_ | sort; srun -l sh -c "echo \$SLURMD_NODENAME CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES"'
echo "\$ sbatch --phx-topology=rack --wrap true   # refused at submit"
sbatch --phx-topology=rack --wrap true || true

say "waiting for the jobs (at most 60 s)"
until_ok 60 bash -c '[[ -z "$(timeout 5 squeue -h -o %i)" ]]' || squeue
show squeue -t all -o '%.4i %.8j %.10T %.6D %N'
echo
scontrol -o show job | sed -n 's/^JobId=\([0-9]*\) JobName=\([^ ]*\).* NodeList=\([^ ]*\) .*/job \1 (\2) ran on \3/p'
scontrol -o show job | sed -n 's/^JobId=\([0-9]*\) .*AdminComment=\(phalanx:[^ ]*\).*/job \1 AdminComment=\2/p'
for f in "$demo"/out/*.out; do
  echo "# $f"
  cat "$f"
done
if [[ "$with_phalanxd" == 1 ]]; then
  say "phalanxd: what it saw and decided ($demo/log/phalanxd.log)"
  grep -E "slurm mode|start job|node n" "$demo/log/phalanxd.log" | tail -n 12
else
  say "phalanxd is not running: one line per managed step in the slurmd logs"
  grep -h "phalanx:" "$demo"/log/slurmd-n*.log | tail -n 4
fi

say "the lab keeps running"
cat <<EOF
  source $demo/env.sh
  sbatch --help | grep phx                    # the plugin's options
  srun -N2 --gres=gpu:4 --phx-topology=leaf env | grep -E '^(PHALANX|CUDA)'
  squeue; sinfo -N; scontrol show job N
Logs: $demo/log/   Stop it: $repo/config/slurm/demo-slurm.sh stop
EOF
