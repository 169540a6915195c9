#!/usr/bin/env bash
# A local Phalanx cluster to play with: phalanxd on the embedded demo cluster (gen:demo: 4 DGX
# H100 nodes node0..node3, 8 GPUs each, two leaves) and four phalanx-agent processes on this
# machine declaring fake GPUs (no GPU or driver needed). It submits a few demo gang jobs with gsub,
# shows gq and ginfo while they run, prints a job's output, then leaves the cluster running and
# tells you how to use it.
#
#   config/demo-cluster.sh [BUILD_DIR]    start (or restart) the demo; BUILD_DIR default: ./build
#   config/demo-cluster.sh stop           stop it (jobs, agents, daemon)
#
# Needs phalanxd, phalanx-agent, gsub, gq, gcancel and ginfo built in BUILD_DIR:
#   cmake --build build --target phalanxd phalanx-agent gsub gq gcancel ginfo
# State (socket, SQLite store, token, logs, job outputs) lives in $PHALANX_DEMO_DIR
# (default /tmp/phalanx-demo); a second start stops the old demo and starts afresh.
# $PHALANX_DEMO_HTTP sets the HTTP address (default 127.0.0.1:0: a free port, printed at the end).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
demo=${PHALANX_DEMO_DIR:-/tmp/phalanx-demo}
http_listen=${PHALANX_DEMO_HTTP:-127.0.0.1:0}
sock=$demo/run/phalanxd.sock
nodes=4

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() {
  echo "demo-cluster: $*" >&2
  exit 1
}

# until SECONDS COMMAND...: retries COMMAND every 0.1 s; fails after SECONDS.
until_ok() {
  local secs=$1 end
  shift
  end=$((SECONDS + secs))
  until "$@"; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}

alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

stop_demo() {
  if [[ ! -d "$demo/pids" ]]; then
    echo "demo-cluster: no demo running in $demo"
    return 0
  fi
  local gcancel pid f
  gcancel=$(cat "$demo/bin/gcancel" 2>/dev/null || true)
  # Cancel every job first, so that the agents stop the parts (agents leave jobs running when
  # they are stopped themselves).
  if [[ -S "$sock" && -x "$gcancel" ]] && alive "$(cat "$demo/pids/phalanxd" 2>/dev/null)"; then
    PHALANX_SOCKET=$sock "$gcancel" --me >/dev/null 2>&1 || true
    until_ok 10 bash -c '! ls "$1"/agent-node*/parts/*.part >/dev/null 2>&1' _ "$demo" || true
  fi
  # Agents first (in parallel), then the daemon. Only our processes: the pid must still run
  # the program we started (its command line names the demo directory).
  local group pids files
  for group in agent-node phalanxd; do
    pids=()
    files=("$demo/pids/$group"*)
    for f in "${files[@]}"; do
      [[ -f "$f" ]] || continue
      pid=$(cat "$f")
      if alive "$pid" && grep -q "$demo" "/proc/$pid/cmdline" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
      fi
      rm -f "$f"
    done
    for pid in "${pids[@]}"; do
      until_ok 15 bash -c '! kill -0 "$1" 2>/dev/null' _ "$pid" || kill -KILL "$pid" 2>/dev/null || true
    done
  done
  # Job processes that outlived their agent (they carry PHALANX_CHECKPOINT_FILE=$demo/...).
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^PHALANX_CHECKPOINT_FILE=$demo/"; then
      kill -KILL "${p#/proc/}" 2>/dev/null || true
    fi
  done
  rmdir "$demo/pids" 2>/dev/null || true
  echo "demo-cluster: stopped (logs kept in $demo/logs)"
}

if [[ "${1:-}" == "stop" ]]; then
  stop_demo
  exit 0
fi
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi

build=$(cd "${1:-$repo/build}" 2>/dev/null && pwd) || die "no build directory '${1:-$repo/build}'"
phalanxd=$build/scheduler/service/phalanxd
agent=$build/scheduler/agent/phalanx-agent
gsub=$build/cli/user/gsub
gq=$build/cli/user/gq
gcancel=$build/cli/user/gcancel
ginfo=$build/cli/user/ginfo
for b in "$phalanxd" "$agent" "$gsub" "$gq" "$gcancel" "$ginfo"; do
  [[ -x "$b" ]] || die "$b is missing; build it first: cmake --build $build --target phalanxd phalanx-agent gsub gq gcancel ginfo"
done

# Idempotent: stop a running demo, start from an empty state.
stop_demo >/dev/null
rm -rf "$demo"
mkdir -p "$demo"/{run,state,logs,pids,bin,jobs}
chmod 755 "$demo" "$demo/jobs"
echo "$gcancel" >"$demo/bin/gcancel"
(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$demo/agent.token")
cat >"$demo/phalanxd.yaml" <<EOF
# The demo's phalanxd configuration (see config/phalanxd.example.yaml).
socket: $sock
store:
  path: $demo/state/phalanxd.db
topology:
  source: gen:demo
agents:
  listen: 127.0.0.1:0
  token_file: $demo/agent.token
  heartbeat_interval: 2
  grace: 5
  kill_grace: 3
scheduler:
  pass_interval: 0.2
http:
  listen: $http_listen
EOF

say "starting phalanxd (gen:demo: 4 nodes x 8 H100, 2 leaves) in $demo"
# setsid: the daemon and the agents outlive this script and its terminal.
setsid "$phalanxd" --config "$demo/phalanxd.yaml" >"$demo/logs/phalanxd.log" 2>&1 </dev/null &
echo $! >"$demo/pids/phalanxd"
until_ok 10 grep -q "phalanxd ready" "$demo/logs/phalanxd.log" || {
  cat "$demo/logs/phalanxd.log" >&2
  die "phalanxd did not start"
}
agent_port=$(sed -n 's/.*agents: listening on .* (port \([0-9]*\),.*/\1/p' "$demo/logs/phalanxd.log")
http_addr=$(sed -n 's/.*http: listening on \([0-9.]*:[0-9]*\).*/\1/p' "$demo/logs/phalanxd.log")
echo "users' socket $sock, agents on 127.0.0.1:$agent_port, HTTP on $http_addr"
echo "$http_addr" >"$demo/run/http-address"  # for: xdg-open "http://$(cat .../run/http-address)/"

root_jobs=()
[[ $(id -u) -eq 0 ]] && root_jobs=(--allow-root-jobs)
say "starting $nodes agents with 8 fake GPUs each"
for ((i = 0; i < nodes; i++)); do
  setsid "$agent" --daemon "127.0.0.1:$agent_port" --node "node$i" --gpus 8 --token-file "$demo/agent.token" \
    --state-dir "$demo/agent-node$i" --nvml-library none --heartbeat 2 --kill-grace 3 "${root_jobs[@]}" \
    >"$demo/logs/agent-node$i.log" 2>&1 </dev/null &
  echo $! >"$demo/pids/agent-node$i"
done
export PHALANX_SOCKET=$sock
nodes_up() { [[ $("$ginfo" -N --json 2>/dev/null | grep -o '"state":"NODE_STATE_UP"' | wc -l) -eq $nodes ]]; }
until_ok 10 nodes_up || {
  tail -n 5 "$demo"/logs/*.log >&2
  die "the nodes did not come up"
}
"$ginfo"

say "submitting demo jobs"
cd "$demo/jobs"
cat >train.sh <<'EOF'
#!/bin/sh
#PHX -G 16 --topology leaf -t 1
#PHX -J pretrain -o %x-%j-rank%n.out
# What torchrun would be given on each node:
echo "rank $NODE_RANK of $NNODES on $PHALANX_NODE: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
echo "  WORLD_SIZE=$WORLD_SIZE NPROC_PER_NODE=$NPROC_PER_NODE MASTER=$MASTER_ADDR:$MASTER_PORT NODELIST=$PHALANX_NODELIST"
echo "  torchrun --nnodes=$NNODES --nproc-per-node=$NPROC_PER_NODE --node-rank=$NODE_RANK --master-addr=$MASTER_ADDR --master-port=$MASTER_PORT train.py"
sleep 6
echo "rank $NODE_RANK: done"
EOF
# show CMD ARGS...: prints "$ cmd args" (the program's base name, arguments quoted where they
# need it), then runs it.
quote() {
  if [[ $1 =~ ^[A-Za-z0-9_./:%=@+,-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}
show() {
  local line="\$ ${1##*/}" a
  for a in "${@:2}"; do line+=" $(quote "$a")"; done
  echo "$line"
  "$@"
}
show "$gsub" train.sh
show "$gsub" -N 1 --gpus-per-node 8 -t 1 -J finetune -o %x-%j.out --wrap 'echo "finetune on $PHALANX_NODE GPUs $CUDA_VISIBLE_DEVICES"; sleep 4'
big=$("$gsub" --parsable -G 32 -t 1 -J full-cluster -o %x-%j.out --wrap 'echo "32 GPUs on $PHALANX_NODELIST (rank $NODE_RANK)"; sleep 2')
echo "\$ gsub --parsable -G 32 -t 1 -J full-cluster -o %x-%j.out --wrap '...'   # must wait for the whole cluster"
echo "Submitted job $big"
show "$gsub" -G 2 -t 00:00:20 -J eval -o %x-%j.out --wrap 'echo "eval on $PHALANX_NODE GPUs $CUDA_VISIBLE_DEVICES"; sleep 3'
sleep 0.5

say "the queue while they run"
show "$gq"
echo
show "$ginfo"
echo
show "$ginfo" --why "$big"

say "waiting for the jobs to finish (at most 30 s)"
end=$((SECONDS + 30))
last=
while :; do
  active=$("$gq" --noheader -o "%i %T" 2>/dev/null || true)
  [[ -z "$active" ]] && break
  if ((SECONDS >= end)); then
    echo "demo-cluster: jobs still active after 30 s:" >&2
    "$gq" >&2
    break
  fi
  if [[ "$active" != "$last" ]]; then
    echo "--- $(date +%T)"
    "$gq"
    last=$active
  fi
  sleep 1
done
echo "--- $(date +%T)"
show "$gq" -a

say "output of the 16-GPU job (one file per node: -o %x-%j-rank%n.out)"
for f in "$demo"/jobs/pretrain-*-rank*.out; do
  echo "# $f"
  cat "$f"
done

http_port=${http_addr##*:}
say "the demo cluster keeps running"
cat <<EOF
Use it from this shell:

  export PHALANX_SOCKET=$sock
  export PATH=$build/cli/user:\$PATH
  gsub -G 8 --wrap 'nvidia-smi -L || env | grep -E "CUDA|RANK|WORLD"'   # submit (Submitted job N)
  gq                     # the queue; gq -a also shows finished jobs, gq -j N --json one job
  gcancel N              # cancel a job
  ginfo                  # nodes and free blocks; ginfo -N per node, ginfo --why N
  (job output goes to the directory you submit from: phalanx-<jobid>.out)

The dashboard (cluster map, fragmentation, utilization, queue; live):
  http://$http_addr/

Metrics and the read-only API:
  http://$http_addr/metrics
  http://$http_addr/api/v1/jobs        (also /api/v1/nodes, /api/v1/stats, /healthz)
  curl -s http://127.0.0.1:$http_port/api/v1/jobs

Logs: $demo/logs/   State: $demo/state/phalanxd.db
Stop it: $repo/config/demo-cluster.sh stop
EOF
