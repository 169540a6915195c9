#!/usr/bin/env bash
# shellcheck disable=SC2016 # job scripts are single-quoted: their variables expand in the job
# phalanxd's Slurm mode on real Slurm daemons: one lab (config/slurm/demo-slurm.sh with
# PHALANX_SLURM_PHALANXD=1: munged, slurmctld, 4 slurmd with fake GPUs, job_submit.lua's HOLD,
# phalanxd in Slurm mode) started once for every check below, always stopped on exit.
#   tests/slurm/slurm_mode_test.sh BUILD_DIR SOURCE_DIR
# Exit 0: all passed; 1: a check failed; 77: skipped (not root, or Slurm not installed).
set -uo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
# shellcheck source=tests/slurm/lib.sh
source "$src/tests/slurm/lib.sh"
need_lab

lab=$(mktemp -d /tmp/phalanx-slurm-mode-test.XXXXXX)
export PHALANX_SLURM_DEMO_DIR=$lab PHALANX_SLURM_DEMO_JOBS=0 PHALANX_SLURM_PHALANXD=1 PHALANX_SLURM_CRED_EXPIRE=5
http_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export PHALANX_SLURM_HTTP=127.0.0.1:$http_port  # the dashboard in Slurm mode (check 1)
export PHALANX_SLURM_MIN_RUNTIME=0
export PHALANX_SLURM_REPORT=tcp # step reports over TCP, as from compute nodes on other hosts
# apart from slurm.spank's 17817 (or PHALANX_SLURM_PORT_BASE's + 100 when that is set)
export PHALANX_SLURM_PORT_BASE=${PHALANX_SLURM_MODE_TEST_PORT:-$((${PHALANX_SLURM_PORT_BASE:-17817} + 100))}
t0=$SECONDS
cleanup() {
  trap - EXIT INT TERM
  [[ -n "${watchdog:-}" ]] && kill "$watchdog" 2>/dev/null
  "$src/config/slurm/demo-slurm.sh" stop >/dev/null 2>&1
  if ((fail > 0)); then
    echo "--- the lab's logs (kept in $lab/log)"
    tail -n 30 "$lab"/log/phalanxd.log "$lab"/log/slurmctld.log
  else
    rm -rf "$lab"
  fi
  echo "slurm mode tests: $pass passed, $fail failed, $((SECONDS - t0)) s (lab start included)"
  # An explicit status: a bare `exit` in an EXIT trap returns the status of the command before
  # the trap, not of the last one here (a failed check passed in CTest).
  exit $((fail > 0 ? 1 : 0))
}
pass=0
fail=0
trap cleanup EXIT
trap 'echo "interrupted"; fail=$((fail + 1)); cleanup' INT TERM
start_watchdog slurm_mode_test

state() { timeout 5 squeue -h -j "$1" -t all -o %T 2>/dev/null; }
is_state() { [[ "$(state "$1")" == "$2" ]]; }
nodes_of() { timeout 5 squeue -h -j "$1" -t all -o %N 2>/dev/null; }
log=$lab/log/phalanxd.log
in_log() { grep -q -- "$1" "$log"; }
count_log() { grep -c -- "$1" "$log" 2>/dev/null || true; }
clean=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "SLURM_CONF=$lab/etc/slurm.conf")
sub() { "${clean[@]}" sbatch --parsable -o "$out/%x-%j.out" "$@"; }

start_out=$(timeout 120 "$src/config/slurm/demo-slurm.sh" "$build" 2>&1) || {
  bad "lab start with phalanxd" "$start_out"
  exit 1
}
echo "lab up in $((SECONDS - t0)) s"
export SLURM_CONF=$lab/etc/slurm.conf
out=$lab/out
cd "$out" || exit 1
if until_ok 10 in_log "node n4 is up (Slurm"; then
  ok "phalanxd in Slurm mode reads the nodes ($(grep -o 'slurm mode: [0-9.]* (libslurm)' "$log"))"
else
  bad "phalanxd in Slurm mode reads the nodes" "$(tail -n 5 "$log")"
fi

# --- 1. a 16-GPU leaf job lands on one leaf where Slurm alone would split it -----------------------
busy2=$(sub -J busy-n2 -w n2 -N1 --gres=gpu:8 -t 2 --wrap 'sleep 20')
busy4=$(sub -J busy-n4 -w n4 -N1 --gres=gpu:8 -t 1 --wrap 'sleep 6')
until_ok 10 is_state "$busy4" RUNNING && until_ok 10 is_state "$busy2" RUNNING
slurm_choice=$("${clean[@]}" sbatch --test-only -N2 --gres=gpu:8 --wrap true 2>&1)
leaf=$(sub -J leaf16 -N2 --gres=gpu:8 -t 5 --phx-topology=leaf --wrap 'echo ran on $SLURM_JOB_NODELIST')
plain=$(sub -J plain -N1 --gres=gpu:1 -t 5 --wrap 'echo ran')
until_ok 10 in_log "Slurm job $leaf is job"
comment_is() {
  comment=$(timeout 5 squeue -h -j "$leaf" -o '%r|%k')
  [[ "$comment" == "$1"* ]]
}
until_ok 10 comment_is "BeginTime|phalanx: TopologyBlock(leaf)"
if [[ "$slurm_choice" == *"nodes n[1,3]"* && "$comment" == "BeginTime|phalanx: TopologyBlock(leaf)"* ]]; then
  ok "with n2 and n4 busy Slurm alone would split it (${slurm_choice##*using }); Phalanx holds it: $comment"
else
  bad "Slurm's own choice splits, Phalanx waits for a leaf" "sbatch --test-only: $slurm_choice" "squeue %r|%k: $comment"
fi
# Backfill plans around Slurm's own jobs (their GPUs are the core's external load until their
# end): the Comment carries the leaf job's predicted start.
if until_ok 10 comment_is "BeginTime|phalanx: TopologyBlock(leaf) start~20"; then
  ok "the predicted start, planned around Slurm's jobs on n2 and n4, is in the Comment: ${comment#*|}"
else
  bad "the predicted start in the Comment" "squeue %r|%k: $comment" "$(grep -E "GPUs busy" "$log" | head -n 4)"
fi
# The dashboard is served in Slurm mode too: the page, and the map with the GPUs of Slurm's own
# jobs on n2 and n4 busy (the core holds them for the unmanaged jobs) while the leaf job waits.
map_busy() {
  curl -sf --max-time 5 http://$PHALANX_SLURM_HTTP/api/v1/map | python3 -c '
import json, sys
m = json.load(sys.stdin)
names = [d[1] for d in m["domains"] if d[0] == "node"]
busy = sum(1 for o in m["owner"] if o != 0)
sys.exit(0 if {"n1", "n2", "n3", "n4"} <= set(names) and busy >= 8 else 1)'
}
if curl -sf --max-time 5 http://$PHALANX_SLURM_HTTP/ | grep -qi "<html" && until_ok 10 map_busy; then
  ok "the dashboard is served in Slurm mode: / and /api/v1/map with Slurm's busy GPUs"
else
  bad "the dashboard in Slurm mode" "$(curl -s --max-time 5 http://$PHALANX_SLURM_HTTP/api/v1/map | head -c 300)"
fi
if until_ok 30 is_state "$leaf" COMPLETED && [[ "$(nodes_of "$leaf")" == "n[3-4]" ]] &&
  [[ "$(count_log "(Slurm $leaf) released on n\[3-4\]")" == 1 ]]; then
  ok "the leaf job ran on n[3-4] (one leaf), released once: $(grep -o "job [0-9]* (Slurm $leaf) released on [^ ]*" "$log")"
else
  bad "the leaf job ran on one leaf" "state $(state "$leaf") on '$(nodes_of "$leaf")'" "$(grep "Slurm $leaf" "$log")"
fi
# The batch step's start and end, reported by the plugin (MUNGE-signed, as the job's user at the
# start, as root at the end), reach phalanxd and name the node.
if until_ok 10 in_log "Slurm job $leaf (job [0-9]*) step batch ended on n3" &&
  in_log "Slurm job $leaf (job [0-9]*) step batch started on n3 (reported by root)"; then
  ok "the step's start and end reach phalanxd as MUNGE-signed reports over TCP ($(grep -o ' socket=[^ ]*' "$lab/etc/plugstack.conf" | head -n 1 | tr -d ' ')): $(grep -o "Slurm job $leaf (job [0-9]*) step batch started on [^ ]*" "$log")"
else
  bad "the step's start and end reach phalanxd" "$(grep "Slurm job $leaf \|step report" "$log")"
fi
if until_ok 20 is_state "$plain" COMPLETED && ! in_log "Slurm job $plain is job"; then
  ok "a plain job is Slurm's: it ran on $(nodes_of "$plain"), phalanxd left it alone"
else
  bad "a plain job is Slurm's" "state $(state "$plain")" "$(grep "Slurm job $plain " "$log")"
fi

# --- 2. the owner's own hold (-H) is the owner's; when released, Phalanx places it -------------------
held=$(sub -J held -H -N1 --gres=gpu:4 -t 5 --phx-topology=node --wrap 'echo ran CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES gpus=$SLURM_JOB_GPUS')
sleep 3
start_held=$(timeout 5 squeue -h -j "$held" -o '%r %S')
if [[ "$(state "$held")" == PENDING ]] && ! in_log "Slurm job $held is job"; then
  ok "a job held by its owner (sbatch -H) is not placed while held ($start_held)"
else
  bad "a job held by its owner is not placed" "state $(state "$held")" "$(grep "Slurm $held\|Slurm job $held" "$log")"
fi
timeout 10 scontrol release "$held"
if until_ok 20 is_state "$held" COMPLETED && in_log "Slurm job $held is job" && in_log "(Slurm $held) released on"; then
  ok "released by its owner, it is placed by Phalanx: $(grep -o "(Slurm $held) released on [^ ]*" "$log")"
else
  bad "released by its owner, Phalanx places it" "state $(state "$held")" "$(grep "Slurm $held\|Slurm job $held" "$log")"
fi
# The step's GPUs along the best ring of the lab's gpu_topology= (NVLink pairs 0-2 and 1-3): Slurm
# gave 0,1,2,3 (four PCIe hops); the plugin ordered them 0,1,3,2 (NVLink hops 1-3 and 2-0).
if grep -q "^ran CUDA_VISIBLE_DEVICES=0,1,3,2 gpus=0,1,2,3$" "$out/held-$held.out"; then
  ok "CUDA_VISIBLE_DEVICES along the NVLink ring: $(grep -o 'CUDA_VISIBLE_DEVICES=[^ ]* gpus=[^ ]*' "$out/held-$held.out")"
else
  bad "CUDA_VISIBLE_DEVICES along the NVLink ring" "$(cat "$out/held-$held.out")"
fi

# --- 3. kill -9 of phalanxd while jobs are held: after a restart each is placed once ---------------
# n1 and n3 busy (n2 free again, n4 free): no leaf has two free nodes, both jobs wait in Phalanx.
until_ok 30 is_state "$busy2" COMPLETED
b1=$(sub -J busy-n1 -w n1 -N1 --gres=gpu:8 -t 1 --wrap 'sleep 12')
b3=$(sub -J busy-n3 -w n3 -N1 --gres=gpu:8 -t 1 --wrap 'sleep 6')
until_ok 10 is_state "$b1" RUNNING && until_ok 10 is_state "$b3" RUNNING
ja=$(sub -J after-a -N2 --gres=gpu:8 -t 5 --phx-topology=leaf --wrap 'echo ran on $SLURM_JOB_NODELIST')
jb=$(sub -J after-b -N2 --gres=gpu:8 -t 5 --phx-topology=leaf --wrap 'echo ran on $SLURM_JOB_NODELIST')
until_ok 10 in_log "Slurm job $ja is job" && until_ok 10 in_log "Slurm job $jb is job"
pid=$(cat "$lab/run/phalanxd.pid")
kill -KILL "$pid"
# Gone when /proc has no live process any more (a zombie counts as gone: PID 1 may reap late).
until_ok 10 bash -c "[[ ! -r /proc/$pid/status ]] || grep -q '^State:[[:space:]]*Z' /proc/$pid/status"
setsid "$build/scheduler/service/phalanxd" --config "$lab/etc/phalanxd.yaml" >>"$log" 2>&1 </dev/null &
echo $! >"$lab/run/phalanxd.pid"
if until_ok 30 is_state "$ja" COMPLETED && until_ok 30 is_state "$jb" COMPLETED; then
  runs_a=$(grep -c '^ran' "$out/after-a-$ja.out")
  runs_b=$(grep -c '^ran' "$out/after-b-$jb.out")
  na=$(nodes_of "$ja")
  nb=$(nodes_of "$jb")
  if [[ "$runs_a" == 1 && "$runs_b" == 1 && "$(count_log "Slurm job $ja is job")" == 1 &&
    "$(count_log "Slurm job $jb is job")" == 1 && "$(count_log "(Slurm $ja) released")" == 1 &&
    "$(count_log "(Slurm $jb) released")" == 1 &&
    "$na" =~ ^n\[(1-2|3-4)\]$ && "$nb" =~ ^n\[(1-2|3-4)\]$ ]]; then
    ok "kill -9 with 2 jobs held: after the restart each was submitted once, released once, ran once ($ja on $na, $jb on $nb)"
  else
    bad "kill -9: each job placed once" "runs $runs_a/$runs_b on '$na'/'$nb'" "$(grep -E "Slurm( job)? ($ja|$jb)|recovered" "$log")"
  fi
else
  bad "kill -9: the held jobs run after the restart" "states $(state "$ja")/$(state "$jb")" "$(tail -n 8 "$log")"
fi
if grep -q "recovered [0-9]* jobs .*(2 unfinished" "$log"; then ok "the restarted phalanxd re-adopted them from its store ($(grep -o 'recovered [^(]*([^)]*)' "$log" | tail -n 1))"; else bad "re-adopted from the store" "$(grep recovered "$log")"; fi

# --- 4. checkpoint preemption: a high-class leaf job takes a leaf from a low-class one ------------
# Both leaves run low-class preemptible jobs (--phx-checkpoint=USR1@60); the high one makes the core
# signal one victim (USR1 to its batch shell and steps). The victim reports its checkpoint done
# (phalanx-ckpt-done: a MUNGE-signed report), which ends the wait at once: it is requeued long
# before the 60 s deadline (Slurm: SIGTERM, requeue, cred_expire), the high job runs in its block,
# and the victim restarts with PHALANX_RESUME=1. Before that, another user's report for the
# victim is refused.
until_ok 30 is_state "$b1" COMPLETED
cat >"$out/victim.sh" <<VICTIM
#!/bin/bash
echo "start restarts=\$PHALANX_RESTART_COUNT resume=\$PHALANX_RESUME"
trap 'echo "got USR1 at \$(date +%s)"; $lab/lib/phalanx-ckpt-done --path /ckpt/low && echo "checkpoint reported"' USR1
trap 'echo "got TERM at \$(date +%s)"; exit 143' TERM
for _ in \$(seq 1 240); do sleep 0.5; done
VICTIM
chmod +x "$out/victim.sh"
low=()
for n in a b; do
  low+=("$(sub -J "low-$n" -N2 --gres=gpu:8 -t 10 --phx-topology=leaf --phx-class=low --phx-preemptible \
    --phx-checkpoint=USR1@60 --open-mode=append "$out/victim.sh")")
done
until_ok 20 is_state "${low[0]}" RUNNING && until_ok 20 is_state "${low[1]}" RUNNING
other=$(runuser -u nobody -- env "SLURM_JOB_ID=${low[0]}" "PHALANX_REPORT_SOCKET=127.0.0.1:$((PHALANX_SLURM_PORT_BASE + 9))" \
  "PHALANX_MUNGE_SOCKET=$lab/munge/munge.sock" "$lab/lib/phalanx-ckpt-done" 2>&1)
other_rc=$?
if [[ $other_rc == 1 && "$other" == *"refused by phalanxd"*"not to nobody"* ]] &&
  until_ok 5 in_log "step report from nobody refused"; then
  ok "another user's checkpoint report is refused: ${other#phalanx-ckpt-done: }"
else
  bad "another user's checkpoint report is refused" "rc $other_rc: $other" "$(grep "step report" "$log")"
fi
high=$(sub -J high -N2 --gres=gpu:8 -t 5 --phx-topology=leaf --phx-class=high --wrap 'echo high ran on $SLURM_JOB_NODELIST')
resumed() { grep -qs "start restarts=1 resume=1" "$out/low-a-${low[0]}.out" "$out/low-b-${low[1]}.out"; }
if until_ok 40 is_state "$high" COMPLETED && until_ok 30 resumed; then
  victim=$(grep -ls "start restarts=1 resume=1" "$out"/low-*.out)
  seq=$(grep -o "start restarts=0 resume=0\|got USR1\|checkpoint reported\|got TERM\|start restarts=1 resume=1" "$victim" | paste -sd ' ')
  usr1=$(grep -o "got USR1 at [0-9]*" "$victim" | head -n 1 | grep -o "[0-9]*$")
  term=$(grep -o "got TERM at [0-9]*" "$victim" | head -n 1 | grep -o "[0-9]*$")
  waited=$((${term:-999} - ${usr1:-0}))
  if [[ "$seq" == "start restarts=0 resume=0 got USR1 checkpoint reported got TERM start restarts=1 resume=1" ]] &&
    ((waited < 30)) && [[ "$(nodes_of "$high")" =~ ^n\[(1-2|3-4)\]$ ]] && in_log "requeue Slurm job" &&
    in_log "checkpoint done, reported by root"; then
    ok "checkpoint preemption: the victim got USR1, reported its checkpoint, was requeued ${waited} s later (deadline 60 s), the high job ran on $(nodes_of "$high"), the victim restarted with PHALANX_RESUME=1"
  else
    bad "checkpoint preemption ended by the checkpoint report" "victim $victim: $seq (TERM ${waited} s after USR1)" "high on $(nodes_of "$high")" "$(grep -E "checkpoint|preempt|requeue" "$log")"
  fi
else
  bad "checkpoint preemption: the high job runs and the victim resumes" "high $(state "$high"), low ${low[*]}: $(state "${low[0]}")/$(state "${low[1]}")" \
    "$(grep -E "checkpoint|preempt|requeue" "$log")"
fi
timeout 10 scancel "${low[@]}" 2>/dev/null

# --- 5. partial nodes: Slurm's own jobs take part of each node, Phalanx places on the rest --------
# 6 GPUs of n1 and 4 of n2, n3, n4 busy with plain jobs: a -N2 --gres=gpu:4 leaf job fits only on
# leaf2 (n1 has 2 free), and runs there beside Slurm's jobs (their GPUs are the core's external
# load until their end; no node is drained for them).
gone() { [[ "$(state "$1")" != RUNNING && "$(state "$1")" != COMPLETING ]]; }
until_ok 20 gone "${low[0]}" && until_ok 20 gone "${low[1]}"
part=()
for n in n1 n2 n3 n4; do
  g=4
  [[ $n == n1 ]] && g=6
  part+=("$(sub -J "part-$n" -w "$n" -N1 --gres=gpu:$g -t 1 --wrap 'sleep 15')")
done
running_all() { local j; for j in "${part[@]}"; do is_state "$j" RUNNING || return 1; done; }
until_ok 15 running_all
# Slurm's own jobs are visible to Phalanx's users (as of phalanxd's last poll): gq marks them
# slurm:ID with Slurm's state, node and GPUs; ginfo -N names them on the node.
gq_sees() {
  gq_line=$("$build/cli/user/gq" --socket "$lab/run/phalanxd.sock" -h -o '%i %T %N %G %u' 2>&1 | grep "^slurm:${part[0]} ")
  [[ "$gq_line" == "slurm:${part[0]} RUNNING n1 6 root" ]] &&
    "$build/cli/user/ginfo" --socket "$lab/run/phalanxd.sock" -N 2>&1 | grep -q "^n1 .*slurm:${part[0]}" &&
    "$build/cli/phalanx" job show "slurm:${part[0]}" --socket "$lab/run/phalanxd.sock" 2>&1 |
    grep -q "ScheduledBy=Slurm SlurmJobId=${part[0]} SlurmState=RUNNING NodeGPUs=n1:6"
}
if until_ok 5 gq_sees; then
  ok "Slurm's own jobs in gq, ginfo -N and phalanx job show slurm:${part[0]}: $gq_line"
else
  bad "Slurm's own jobs in gq and ginfo" "gq: $("$build/cli/user/gq" --socket "$lab/run/phalanxd.sock" 2>&1)" \
    "ginfo -N: $("$build/cli/user/ginfo" --socket "$lab/run/phalanxd.sock" -N 2>&1)"
fi
half=$(sub -J half -N2 --gres=gpu:4 -t 5 --phx-topology=leaf --wrap 'echo ran on $SLURM_JOB_NODELIST')
if until_ok 20 is_state "$half" COMPLETED && [[ "$(nodes_of "$half")" == "n[3-4]" ]] && running_all &&
  in_log "node n1: 6 GPUs busy with Slurm jobs ${part[0]} " && ! in_log "node n3 is drain (Slurm jobs"; then
  ok "partial nodes: with 6/4/4/4 GPUs of n1-n4 busy with Slurm's jobs, the leaf job ran on $(nodes_of "$half") beside them"
else
  bad "partial nodes: the leaf job runs beside Slurm's jobs" "state $(state "$half") on '$(nodes_of "$half")'" \
    "$(grep -E "GPUs busy|Slurm $half|node n[1-4] is" "$log" | tail -n 8)"
fi
timeout 10 scancel "${part[@]}" 2>/dev/null

# --- 6. elastic shrink in place: a high job takes a node of a running --phx-elastic job ----------
# n3, n4 full and 4 GPUs of n1 busy with plain jobs: the elastic job (4 to 12 GPUs) gets 12, n1:4
# (its batch host) + n2:8. A high-class 8-GPU node job then needs n2: the core signals the elastic
# job (USR1), and at the 3 s deadline shrinks it to its 4 GPUs on n1; Slurm cuts the running job's
# NodeList to n1 (22.05 frees n2; the job goes on) and the high job runs on n2.
for j in "${part[@]}"; do until_ok 20 gone "$j"; done
shr=()
for n in n3 n4; do shr+=("$(sub -J "shr-$n" -w "$n" -N1 --gres=gpu:8 -t 1 --wrap 'sleep 40')"); done
shr+=("$(sub -J shr-n1 -w n1 -N1 --gres=gpu:4 -t 1 --wrap 'sleep 40')")
running_shr() { local j; for j in "${shr[@]}"; do is_state "$j" RUNNING || return 1; done; }
until_ok 15 running_shr
cat >"$out/elastic.sh" <<'ELASTIC'
#!/bin/bash
echo "start on $SLURM_JOB_NODELIST"
trap 'echo "got USR1"' USR1
for _ in $(seq 1 60); do sleep 0.5; done
echo "end"
ELASTIC
chmod +x "$out/elastic.sh"
el=$(sub -J elastic --gpus=12 -t 5 --phx-elastic=4:12 --phx-topology=leaf --phx-class=low --phx-preemptible \
  --phx-checkpoint=USR1@3 "$out/elastic.sh")
until_ok 20 is_state "$el" RUNNING
el_nodes=$(nodes_of "$el")
hi=$(sub -J high2 -N1 --gres=gpu:8 -t 5 --phx-topology=node --phx-class=high --wrap 'echo high ran on $SLURM_JOB_NODELIST')
if until_ok 30 is_state "$hi" COMPLETED && [[ "$el_nodes" == "n[1-2]" && "$(nodes_of "$hi")" == n2 ]] &&
  is_state "$el" RUNNING && [[ "$(nodes_of "$el")" == n1 ]] && grep -q "got USR1" "$out/elastic-$el.out" &&
  in_log "(Slurm $el) shrunk in place to n1"; then
  ok "elastic shrink in place: $el on $el_nodes got USR1, was shrunk to n1 (still running), the high job ran on n2"
else
  bad "elastic shrink in place" "elastic $(state "$el") on '$(nodes_of "$el")' (was '$el_nodes'), high $(state "$hi") on '$(nodes_of "$hi")'" \
    "$(cat "$out/elastic-$el.out" 2>/dev/null)" "$(grep -E "Slurm $el|Slurm $hi|shrink|checkpoint|resize" "$log" | tail -n 8)"
fi
timeout 10 scancel "$el" "${shr[@]}" 2>/dev/null
