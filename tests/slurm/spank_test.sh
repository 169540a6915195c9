#!/usr/bin/env bash
# phalanx_spank.so on real Slurm daemons: one lab (config/slurm/demo-slurm.sh: munged, slurmctld,
# 4 slurmd with fake GPUs) started once for every check below, always stopped on exit.
#   tests/slurm/spank_test.sh BUILD_DIR SOURCE_DIR
# Exit 0: all passed; 1: a check failed; 77: skipped (not root, or Slurm not installed: CI is
# root and config/install-deps.sh installs Slurm, so CI never skips it).
set -uo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
# shellcheck source=tests/slurm/lib.sh
source "$src/tests/slurm/lib.sh"
need_lab

lab=$(mktemp -d /tmp/phalanx-slurm-test.XXXXXX)
export PHALANX_SLURM_DEMO_DIR=$lab PHALANX_SLURM_DEMO_JOBS=0 PHALANX_SLURM_CRED_EXPIRE=5
# PHALANX_SLURM_PORT_BASE (when set) moves both lab tests: slurm.spank on it, slurm.mode 100 above.
export PHALANX_SLURM_PORT_BASE=${PHALANX_SLURM_TEST_PORT:-${PHALANX_SLURM_PORT_BASE:-17817}} # apart from a demo on 16817
t0=$SECONDS
cleanup() {
  trap - EXIT INT TERM
  [[ -n "${watchdog:-}" ]] && kill "$watchdog" 2>/dev/null
  [[ -n "${fake:-}" ]] && kill "$fake" 2>/dev/null
  "$src/config/slurm/demo-slurm.sh" stop >/dev/null 2>&1
  if ((fail > 0)); then
    echo "--- the lab's logs (kept in $lab/log)"
    tail -n 20 "$lab"/log/*.log
  else
    rm -rf "$lab"
  fi
  echo "slurm tests: $pass passed, $fail failed, $((SECONDS - t0)) s (lab start included)"
  # An explicit status: a bare `exit` in an EXIT trap returns the status of the command before
  # the trap, not of the last one here (a failed check passed in CTest).
  exit $((fail > 0 ? 1 : 0))
}
pass=0
fail=0
trap cleanup EXIT
trap 'echo "interrupted"; fail=$((fail + 1)); cleanup' INT TERM
start_watchdog spank_test

finished() { [[ "$(timeout 5 squeue -h -j "$1" -t all -o %T 2>/dev/null)" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]]; }
state() { timeout 5 squeue -h -j "$1" -t all -o %T 2>/dev/null; }
# Submissions use --export=NONE-like clean environments: the test runner's own variables must not
# decide what the plugin sees.
clean=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "SLURM_CONF=$lab/etc/slurm.conf")

start_out=$(timeout 120 "$src/config/slurm/demo-slurm.sh" "$build" 2>&1) || {
  bad "lab start" "$start_out"
  exit 1
}
echo "lab up in $((SECONDS - t0)) s"
export SLURM_CONF=$lab/etc/slurm.conf
out=$lab/out
cd "$out" || exit 1

# --- submitted together, checked below ---------------------------------------------------------
good=$("${clean[@]}" sbatch --parsable -N2 --gres=gpu:4 --phx-topology=leaf:prefer --phx-checkpoint=USR2@90 \
  --phx-class=high --phx-elastic=4:8 --phx-no-preemptible -o "$out/good.out" \
  --wrap 'env | grep ^PHALANX_ | sort; srun -N1 -n1 sh -c "echo step0 \$PHALANX_TOPOLOGY \$PHALANX_CLASS"')
plain=$("${clean[@]}" sbatch --parsable --gres=gpu:1 -o "$out/plain.out" --wrap 'env | grep ^PHALANX_ | sort')
down=$("${clean[@]}" sbatch --parsable --phx-topology=node -o "$out/down.out" --wrap 'echo ran')
requeue=$("${clean[@]}" sbatch --parsable --phx-checkpoint=USR1@30 --open-mode=append -o "$out/requeue.out" \
  --wrap 'echo "run restarts=$PHALANX_RESTART_COUNT resume=$PHALANX_RESUME slurm=$SLURM_RESTART_COUNT"; sleep 300')

# --- the options are in sbatch's, srun's and salloc's help ------------------------------------------------
for cmd in sbatch srun salloc; do
  help=$("${clean[@]}" $cmd --help 2>&1)
  missing=()
  for o in phx-topology=LEVEL phx-elastic=MIN:MAX phx-checkpoint=SIG phx-preemptible phx-no-preemptible phx-class=NAME; do
    grep -q -- "--$o" <<<"$help" || missing+=("--$o")
  done
  if [[ ${#missing[@]} -eq 0 ]] && grep -q '\[phalanx\] where the job' <<<"$help"; then
    ok "$cmd --help lists the --phx-* options"
  else
    bad "$cmd --help lists the --phx-* options" "missing: ${missing[*]}"
  fi
done

# --- bad values are refused at submit, with one line from the plugin -----------------------------
# refused NAME EXPECTED_LINE COMMAND...: nonzero exit, exactly one "phalanx:" line, equal to EXPECTED.
refused() {
  local name=$1 want=$2 got rc lines
  shift 2
  got=$("$@" 2>&1)
  rc=$?
  lines=$(grep -c 'phalanx:' <<<"$got")
  if ((rc != 0)) && [[ $lines == 1 ]] && grep -qxF -- "$want" <<<"$got"; then
    ok "$name"
  else
    bad "$name" "exit $rc, $lines phalanx lines; want: $want" "got: $got"
  fi
}
jobs_before=$(timeout 5 squeue -h -t all | wc -l)
refused "sbatch --phx-topology=bogus is refused" \
  "sbatch: error: phalanx: --phx-topology=bogus: 'bogus' is not a level (node, nvlink, leaf, spine or any, with :prefer)" \
  "${clean[@]}" sbatch --phx-topology=bogus --wrap true
refused "sbatch --phx-elastic=4:2 is refused" \
  "sbatch: error: phalanx: --phx-elastic=4:2: the minimum is above the maximum" \
  "${clean[@]}" sbatch --phx-elastic=4:2 --wrap true
refused "sbatch --phx-checkpoint=USR1@x is refused" \
  "sbatch: error: phalanx: --phx-checkpoint=USR1@x: 'x' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or 90s/30m/2h/1d)" \
  "${clean[@]}" sbatch --phx-checkpoint=USR1@x --wrap true
refused "srun --phx-class='a b' is refused" \
  "srun: error: phalanx: --phx-class=a b: not a class name (low, normal, high, urgent, ...)" \
  "${clean[@]}" srun --phx-class='a b' true
refused "PHALANX_TOPOLOGY=rack in the environment is refused" \
  "sbatch: error: phalanx: --phx-topology=rack: 'rack' is not a level (node, nvlink, leaf, spine or any, with :prefer)" \
  "${clean[@]}" PHALANX_TOPOLOGY=rack sbatch --wrap true
jobs_after=$(timeout 5 squeue -h -t all | wc -l)
if [[ $jobs_before == "$jobs_after" ]]; then ok "refused submissions created no job"; else bad "refused submissions created no job" "$jobs_before -> $jobs_after"; fi

# --- a bad plugstack.conf: the plugin refuses, naming the key (a client-side copy of the config,
# so the lab's daemons are not touched) ------------------------------------------------------------
mkdir -p "$lab/client"
sed "s#^PlugStackConfig=.*#PlugStackConfig=$lab/client/plugstack.conf#" "$lab/etc/slurm.conf" >"$lab/client/slurm.conf"
sed 's/$/ bogus_key=1/' "$lab/etc/plugstack.conf" >"$lab/client/plugstack.conf"
refused "plugstack.conf bogus_key=1 is refused, naming the key" \
  "sbatch: error: phalanx: plugstack.conf: unknown key 'bogus_key' (keys: socket, timeout_ms, default_topology, fallback_delay_s, checkpoint_dir, report, munge_socket, gpu_topology)" \
  env -i PATH=/usr/bin:/bin "SLURM_CONF=$lab/client/slurm.conf" sbatch --wrap true
sed 's/$/ timeout_ms=soon/' "$lab/etc/plugstack.conf" >"$lab/client/plugstack.conf"
refused "plugstack.conf timeout_ms=soon is refused, naming the value" \
  "srun: error: phalanx: plugstack.conf: timeout_ms=soon: not a whole number in 1..10000" \
  env -i PATH=/usr/bin:/bin "SLURM_CONF=$lab/client/slurm.conf" srun true

# --- a good job runs, and its steps see PHALANX_* --------------------------------------------------
until_ok 30 finished "$good"
want=(PHALANX_JOB_ID="$good" PHALANX_RESUME=0 PHALANX_RESTART_COUNT=0 PHALANX_CHECKPOINT_SIGNAL=12
  PHALANX_CHECKPOINT_WARNING_S=90 PHALANX_CHECKPOINT_FILE="$lab/ckpt/phalanx-checkpoint.$good"
  PHALANX_TOPOLOGY=leaf:prefer PHALANX_CLASS=high PHALANX_ELASTIC=4:8 PHALANX_PREEMPTIBLE=0 "step0 leaf:prefer high")
missing=()
for w in "${want[@]}"; do grep -qxF "$w" "$out/good.out" 2>/dev/null || missing+=("$w"); done
if [[ "$(state "$good")" == COMPLETED && ${#missing[@]} -eq 0 ]]; then
  ok "a --phx-* job runs; its batch step and srun step see PHALANX_*"
else
  bad "a --phx-* job runs; its batch step and srun step see PHALANX_*" "state $(state "$good"), missing: ${missing[*]}" \
    "output: $(cat "$out/good.out" 2>/dev/null)"
fi
comment=$(timeout 5 scontrol -o show job "$good" | grep -o 'AdminComment=[^ ]*')
want_comment="AdminComment=phalanx:topology=leaf:prefer,elastic=4:8,checkpoint=12@90,preemptible=0,class=high"
if [[ "$comment" == "$want_comment" ]]; then ok "job_submit.lua tags the job: $comment"; else bad "job_submit.lua tags the job" "want $want_comment" "got '$comment'"; fi

# --- a plain job runs as before: PHALANX_JOB_ID, no tag, no phalanxd line -----------------------------
until_ok 30 finished "$plain"
if [[ "$(state "$plain")" == COMPLETED ]] && grep -qxF "PHALANX_JOB_ID=$plain" "$out/plain.out" &&
  ! grep -q PHALANX_TOPOLOGY "$out/plain.out" && ! timeout 5 scontrol -o show job "$plain" | grep -q AdminComment=phalanx &&
  ! grep -q "phalanx: .* job $plain step" "$lab"/log/slurmd-n*.log; then
  ok "a plain job runs untouched (PHALANX_JOB_ID only, no tag, no report)"
else
  bad "a plain job runs untouched" "state $(state "$plain")" "$(cat "$out/plain.out" 2>/dev/null)"
fi

# --- phalanxd down: the job runs, and the step log has one line about it ---------------------------
until_ok 30 finished "$down"
lines=$(grep -h "phalanx: phalanxd not reachable at $lab/run/phalanxd-report.sock (No such file or directory): job $down step batch start not reported, the job runs" \
  "$lab"/log/slurmd-n*.log | wc -l)
all=$(grep -h "job $down step" "$lab"/log/slurmd-n*.log | wc -l)
if [[ "$(state "$down")" == COMPLETED && "$(cat "$out/down.out" 2>/dev/null)" == ran && $lines == 1 && $all == 1 ]]; then
  ok "phalanxd down: the job runs; its step log has one line about it"
else
  bad "phalanxd down: the job runs; its step log has one line about it" "state $(state "$down"), $lines/$all lines" \
    "$(grep -h "phalanx" "$lab"/log/slurmd-n*.log)"
fi

# --- phalanxd up: the reports get through (start and end), no log line; phalanxd hung (never
# accepts): the step waits at most timeout_ms (200), one line, the job runs --------------------------
# fake_phalanxd MODE: a stand-in on the plugin's socket= ($lab/run/phalanxd-report.sock).
fake_phalanxd() {
  [[ -n "${fake:-}" ]] && kill "$fake" 2>/dev/null && wait "$fake" 2>/dev/null
  perl "$src/tests/slurm/fake_phalanxd.pl" "$lab/run/phalanxd-report.sock" "$1" >"$lab/fake-$1.log" 2>&1 &
  fake=$!
  until_ok 10 grep -q ready "$lab/fake-$1.log"
}
fake_phalanxd accept
up=$("${clean[@]}" sbatch --parsable --phx-class=normal -o "$out/up.out" --wrap 'echo ran')
until_ok 30 finished "$up"
until_ok 5 bash -c '[[ $(grep -c accepted "$1") -ge 2 ]]' _ "$lab/fake-accept.log"
accepted=$(grep -c accepted "$lab/fake-accept.log")
if [[ "$(state "$up")" == COMPLETED && $accepted == 2 ]] && ! grep -q "job $up step" "$lab"/log/slurmd-n*.log; then
  ok "phalanxd up: the step's start and end reach it, no log line"
else
  bad "phalanxd up: the step's start and end reach it" "state $(state "$up"), $accepted connections" \
    "$(grep -h "job $up step" "$lab"/log/slurmd-n*.log)"
fi
fake_phalanxd hang
submitted=$SECONDS
hung=$("${clean[@]}" sbatch --parsable --phx-class=normal -o "$out/hung.out" --wrap 'echo ran')
until_ok 30 finished "$hung"
lines=$(grep -h "phalanx: phalanxd not reachable at $lab/run/phalanxd-report.sock (timed out after 200 ms (backlog full)): job $hung step batch start not reported, the job runs" \
  "$lab"/log/slurmd-n*.log | wc -l)
all=$(grep -h "job $hung step" "$lab"/log/slurmd-n*.log | wc -l)
if [[ "$(state "$hung")" == COMPLETED && "$(cat "$out/hung.out" 2>/dev/null)" == ran && $lines == 1 && $all == 1 ]]; then
  ok "phalanxd hung: the job runs ($((SECONDS - submitted)) s); one line (timed out after 200 ms)"
else
  bad "phalanxd hung: the job runs; one line about it" "state $(state "$hung"), $lines/$all lines" \
    "$(grep -h "job $hung step" "$lab"/log/slurmd-n*.log)"
fi
kill "$fake" 2>/dev/null
wait "$fake" 2>/dev/null
fake=
rm -f "$lab/run/phalanxd-report.sock"

# --- a requeued job restarts with PHALANX_RESUME=1 ---------------------------------------------
until_ok 20 grep -q "restarts=0" "$out/requeue.out"
timeout 10 scontrol requeue "$requeue"
# A requeued job may start again after cred_expire (5 s here) + KillWait.
until_ok 40 grep -q "restarts=1" "$out/requeue.out"
if grep -qxF "run restarts=0 resume=0 slurm=" "$out/requeue.out" && grep -qxF "run restarts=1 resume=1 slurm=1" "$out/requeue.out"; then
  ok "a requeued job restarts with PHALANX_RESTART_COUNT=1 PHALANX_RESUME=1"
else
  bad "a requeued job restarts with PHALANX_RESUME=1" "$(cat "$out/requeue.out" 2>/dev/null)" "state $(state "$requeue")"
fi
timeout 10 scancel "$requeue"

# --- job_submit.lua with HOLD on: a managed job waits fallback_delay_s for phalanxd, then Slurm
# runs it (phalanxd is down). slurmctld reloads job_submit.lua when it changes. -----------------------
sed -i 's/^local HOLD = false$/local HOLD = true/' "$lab/etc/job_submit.lua"
sed "s/\$/ fallback_delay_s=3/" "$lab/etc/plugstack.conf" >"$lab/client/plugstack.conf"
submitted=$SECONDS
held=$(env -i PATH=/usr/bin:/bin "SLURM_CONF=$lab/client/slurm.conf" sbatch --parsable --phx-class=low -o "$out/held.out" --wrap 'echo ran')
reason=$(timeout 5 squeue -h -j "$held" -o %r)
until_ok 30 finished "$held"
waited=$((SECONDS - submitted))
if [[ "$reason" == BeginTime && "$(state "$held")" == COMPLETED && $waited -ge 2 ]]; then
  ok "HOLD: a managed job waits for phalanxd (Reason=BeginTime), Slurm runs it after fallback_delay_s=3 (${waited} s)"
else
  bad "HOLD: a managed job falls back to Slurm after fallback_delay_s" "reason '$reason', state $(state "$held"), $waited s"
fi
# ... and its owner cannot start it early (scontrol update StartTime=now), which would skip Phalanx.
owned=$(runuser -u nobody -- env -i PATH=/usr/bin:/bin "SLURM_CONF=$lab/client/slurm.conf" \
  sbatch --parsable --phx-class=low -o "$out/owned.out" --wrap true 2>&1)
early=$(runuser -u nobody -- env -i PATH=/usr/bin:/bin "SLURM_CONF=$SLURM_CONF" \
  timeout 10 scontrol update jobid="$owned" StartTime=now 2>&1)
rc=$?
if [[ "$owned" =~ ^[0-9]+$ ]] && ((rc != 0)) && [[ "$(timeout 5 squeue -h -j "$owned" -o %r)" == BeginTime ]]; then
  ok "HOLD: the owner's StartTime=now is refused"
else
  bad "HOLD: the owner's StartTime=now is refused" "job '$owned', exit $rc: $early"
fi
timeout 10 scancel "$owned" 2>/dev/null
sed -i 's/^local HOLD = true$/local HOLD = false/' "$lab/etc/job_submit.lua"
