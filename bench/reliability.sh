#!/usr/bin/env bash
# Reliability under load and faults (issue 12, item 9; the figures are in docs/reliability.md).
# Real programs only: phalanxd, phalanx-agent, gsub/gq/ginfo from BUILD_DIR. Prints figures; it
# asserts nothing about time (a part fails only on a broken invariant: a lost acknowledged job,
# a corrupt store, a launch started twice).
#
#   bench/reliability.sh crash   [ROUNDS]  kill -9 of phalanxd at random points while
#                                          PHALANX_CRASH_JOBS (10,000) jobs are submitted and 4
#                                          agents run them: bench/run_crash_soak.sh (default 20
#                                          rounds): acknowledged jobs lost, double allocations,
#                                          restart time (median / p99 over every round)
#   bench/reliability.sh diskfull          the store's file system fills up (a tmpfs of DISK_MB,
#                                          default 8, as root; store.min_free MIN_FREE_KB, default
#                                          2048): submissions refused with a clear error under the
#                                          reserve, the daemon stays up (MIN_FREE_KB=0: the old
#                                          last resort: it stops on the failed commit); kill -9; space
#                                          returns: PRAGMA integrity_check, every acknowledged
#                                          job there, submissions accepted again
#   bench/reliability.sh netcut [ROUNDS]   an agent cut off from the daemon while its job runs:
#                                          each agent talks to phalanxd through its own
#                                          tests/integration/tcp_proxy.py, killed for CUT_S
#                                          (default 15 s) and started again (default 3 rounds;
#                                          the agents fence after 4 s): the most processes of
#                                          the job alive at once (sampled every 50 ms; must be
#                                          1), no launch started twice; time to the old part's
#                                          end, to node down, to the restart elsewhere
#   bench/reliability.sh all               the three, in this order
#
# Build first: cmake --build build --target phalanxd phalanx-agent gsub gq ginfo daemon_crash_test
# Environment: BUILD_DIR (default build), KEEP=1 keeps the scratch directories.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
PHALANXD=$build/scheduler/service/phalanxd
AGENT=$build/scheduler/agent/phalanx-agent
GSUB=$build/cli/user/gsub
GQ=$build/cli/user/gq
GINFO=$build/cli/user/ginfo
for b in "$PHALANXD" "$AGENT" "$GSUB" "$GQ" "$GINFO"; do
  [ -x "$b" ] || { echo "reliability.sh: $b is not built (see the header of this script)" >&2; exit 1; }
done

pids=()
scratch=()
cleanup() {
  exec 2>/dev/null  # no "Killed" notices for the processes ended here
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  # Job processes of our clusters (their checkpoint file lies in a scratch dir).
  for d in "${scratch[@]}"; do
    for e in /proc/[0-9]*/environ; do
      if grep -qsF "PHALANX_CHECKPOINT_FILE=$d/" "$e" 2>/dev/null; then
        p=${e#/proc/}
        kill -KILL "${p%/environ}" 2>/dev/null
      fi
    done
    mountpoint -q "$d/store" 2>/dev/null && umount "$d/store"
    [ "${KEEP:-0}" = 1 ] || rm -rf "$d"
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }
# until_ok SECONDS CMD...: runs CMD every 50 ms until it succeeds; 1 on timeout.
until_ok() {
  local end=$(($(now_ms) + $1 * 1000))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$(now_ms)" -lt "$end" ] || return 1
    sleep 0.05
  done
}

# new_cluster NAME [STORE_DIR]: a scratch dir with a token and a config with short grace periods.
new_cluster() {
  dir=$(mktemp -d "/tmp/phalanx-rel-$1.XXXXXX")
  chmod 0755 "$dir"
  scratch+=("$dir")
  store=${2:-$dir}
  echo "reliability-$$-$RANDOM" >"$dir/token"
  chmod 0600 "$dir/token"
  # agents_yaml: netcut sets grace 5 s and the fence (3 + 5 - 2 - 2 = 4 s); grace 2 s leaves it off.
  cat >"$dir/phalanxd.yaml" <<EOF
log_level: info
agents:
  heartbeat_interval: 1
  heartbeat_timeout: 3
  startup_grace: 10
  kill_grace: 2
${agents_yaml:-  grace: 2}
scheduler:
  pass_interval: 0.1
  default_walltime: 3600
EOF
  export PHALANX_SOCKET=$dir/phalanxd.sock
}

# start_daemon: phalanxd on $dir, store $store; sets daemon and agent_port.
start_daemon() {
  echo "==== started $(date +%T.%N)" >>"$dir/phalanxd.log"
  "$PHALANXD" --config "$dir/phalanxd.yaml" --socket "$dir/phalanxd.sock" --db "$store/phalanxd.db" \
    --topology gen:demo --agent-listen "127.0.0.1:${agent_port:-0}" --token-file "$dir/token" \
    >>"$dir/phalanxd.log" 2>&1 &
  daemon=$!
  pids+=("$daemon")
  local end=$(($(now_ms) + 30000))
  until "$GQ" >/dev/null 2>&1; do
    kill -0 "$daemon" 2>/dev/null || { echo "phalanxd exited:"; tail -3 "$dir/phalanxd.log"; return 1; }
    [ "$(now_ms)" -lt "$end" ] || { echo "phalanxd not serving after 30 s:"; tail -20 "$dir/phalanxd.log"; return 1; }
    sleep 0.05
  done
  if [ -z "${agent_port:-}" ]; then
    agent_port=$(sed -n 's/.*agents: listening on [^ ]* (port \([0-9]*\),.*/\1/p' "$dir/phalanxd.log" | tail -1)
  fi
}

start_agent() {  # start_agent N: to the daemon, or to proxy_port[N] when set
  "$AGENT" --daemon "127.0.0.1:${proxy_port[$1]:-$agent_port}" --node "node$1" --gpus 8 --token-file "$dir/token" \
    --state-dir "$dir/agent-node$1" --allow-root-jobs --nvml-library none --heartbeat 1 --kill-grace 2 \
    >>"$dir/agent-node$1.log" 2>&1 &
  agent[$1]=$!
  pids+=("${agent[$1]}")
}

# start_proxy N: tcp_proxy.py for node N's agent (on its earlier port when it had one).
start_proxy() {
  : >"$dir/proxy-node$1.log"
  python3 tests/integration/tcp_proxy.py "${proxy_port[$1]:-0}" "$agent_port" >>"$dir/proxy-node$1.log" 2>&1 &
  proxy[$1]=$!
  pids+=("${proxy[$1]}")
  until_ok 10 grep -q listening "$dir/proxy-node$1.log" || { echo "tcp_proxy.py did not start"; return 1; }
  proxy_port[$1]=$(sed -n 's/^listening \([0-9]*\)/\1/p' "$dir/proxy-node$1.log")
}

nodes_up() {  # nodes_up N: N nodes up with their agent
  [ "$("$GINFO" -N --json | jq '[.nodes.nodes[] | select(.state == "NODE_STATE_UP" and .agent_connected)] | length')" -ge "$1" ]
}

job_json() { "$GQ" -j "$1" -a --json | jq -c '.jobs[0]'; }

# ---- crash -----------------------------------------------------------------------------------
crash() {
  local rounds=${1:-20}
  [ -x "$build/tests/crash/daemon_crash_test" ] || { echo "build daemon_crash_test first" >&2; return 1; }
  echo "== crash: kill -9 of phalanxd while ${PHALANX_CRASH_JOBS:=10000} jobs are submitted, 4 agents, $rounds rounds"
  PHALANX_CRASH_JOBS=$PHALANX_CRASH_JOBS bench/run_crash_soak.sh "$rounds" "$build"
}

# ---- diskfull --------------------------------------------------------------------------------
diskfull() {
  [ "$(id -u)" = 0 ] || { echo "diskfull: needs root (mount -t tmpfs)"; return 1; }
  new_cluster disk
  store=$dir/store
  mkdir "$store"
  mount -t tmpfs -o "size=${DISK_MB:-8}m" tmpfs "$store" || return 1
  # store.min_free: the reserve under which user writes are refused (MIN_FREE_KB=0: off, the
  # last resort of a failed commit, which stops phalanxd).
  local min_free_kb=${MIN_FREE_KB:-2048}
  printf 'store:\n  min_free: %s\n' "$((min_free_kb * 1024))" >>"$dir/phalanxd.yaml"
  echo "== diskfull: the store on a ${DISK_MB:-8} MB tmpfs ($store), store.min_free ${min_free_kb} KiB"
  start_daemon || return 1
  local payload
  payload=$(head -c 3000 /dev/zero | tr '\0' x)
  # Fill the file system but for the reserve + ~600 KB: room for some jobs before the reserve.
  local avail
  avail=$(df --output=avail -k "$store" | tail -1)
  dd if=/dev/zero of="$store/filler" bs=1k count=$((avail - 600 - min_free_kb)) status=none 2>/dev/null
  echo "   filled: $(df -h --output=avail "$store" | tail -1 | tr -d ' ') left"
  local acked=0 refused=0 in_a_row=0 first_error="" t0
  t0=$(now_ms)
  : >"$dir/acked"
  while [ "$in_a_row" -lt 5 ]; do
    if out=$("$GSUB" --parsable -H -G 1 -J "fill-$acked" --wrap "echo $payload" 2>&1); then
      echo "$out" >>"$dir/acked"
      acked=$((acked + 1))
      in_a_row=0
    else
      refused=$((refused + 1))
      in_a_row=$((in_a_row + 1))
      [ -n "$first_error" ] || first_error=$out
      echo "$out" >>"$dir/refusals"
    fi
    [ $(($(now_ms) - t0)) -lt 300000 ] || { echo "   never refused in 300 s"; break; }
  done
  echo "   acknowledged before the refusals: $acked; refused: $refused"
  echo "   first refusal as gsub printed it: $first_error"
  echo "   other refusals: $(sort -u "$dir/refusals" 2>/dev/null | grep -vxF "$first_error" | head -3 | cut -c1-200 | tr '\n' '|')"
  echo "   gq answers while full: $("$GQ" -a >/dev/null 2>&1 && echo yes || echo no)"
  echo "   phalanxd log lines: $(grep -c . "$dir/phalanxd.log"), first error logged: $(grep -m1 -E 'ERROR' "$dir/phalanxd.log" | cut -c1-220)"
  echo "   first warning logged: $(grep -m1 -E 'WARN.*store: only' "$dir/phalanxd.log" | cut -c1-220); such lines: $(grep -c 'store: only' "$dir/phalanxd.log")"
  if [ "$min_free_kb" != 0 ] && kill -0 "$daemon" 2>/dev/null; then
    # The reserve held: phalanxd still serves; free the space, submissions are accepted again.
    echo "   phalanxd still serves while low: $("$GQ" -a >/dev/null 2>&1 && echo yes || echo no)"
    rm -f "$store/filler"
    echo "   space returned: $(df -h --output=avail "$store" | tail -1 | tr -d ' ') free"
    local after=0 t1
    t1=$(now_ms)
    until "$GSUB" --parsable -H -G 1 -J after-0 --wrap true >/dev/null 2>&1; do
      [ $(($(now_ms) - t1)) -lt 10000 ] || break
      sleep 0.05
    done
    echo "   first submission accepted $(($(now_ms) - t1)) ms after the space returned (cached reading: up to 1 s)"
    echo "   logged when space returned: $(grep -m1 'free on .* again' "$dir/phalanxd.log" | cut -c1-200)"
    for i in $(seq 20); do "$GSUB" --parsable -H -G 1 -J "after-$i" --wrap true >/dev/null 2>&1 && after=$((after + 1)); done
    echo "   submissions accepted after space returned: $after of 20"
    local missing=0
    "$GQ" -a --json | jq -r '.jobs[].id' | sort -n >"$dir/present"
    while read -r id; do grep -qx "$id" "$dir/present" || missing=$((missing + 1)); done <"$dir/acked"
    echo "   $(wc -l <"$dir/present") jobs in the daemon; acknowledged jobs missing: $missing"
    kill -TERM "$daemon"
    wait "$daemon" 2>/dev/null
    echo "   PRAGMA integrity_check after a clean stop: $(sqlite3 "$store/phalanxd.db" 'PRAGMA integrity_check' 2>&1 | head -3 | tr '\n' ' ')"
    echo "   jobs rows: $(sqlite3 "$store/phalanxd.db" 'SELECT count(*) FROM jobs')"
    return 0
  fi
  if kill -0 "$daemon" 2>/dev/null; then
    kill -KILL "$daemon"
    wait "$daemon" 2>/dev/null
    echo "   phalanxd still ran while full: killed it with -9"
  else
    wait "$daemon" 2>/dev/null
    echo "   phalanxd stopped on its own on the failed commit (exit status $?)"
  fi
  echo "   integrity_check of the file as it lies, still full: $(sqlite3 "$store/phalanxd.db" 'PRAGMA integrity_check' 2>&1 | head -3 | tr '\n' ' ')"
  # A restart while the disk is still full (what systemd's Restart= would do).
  if start_daemon 2>/dev/null; then
    echo "   restarted while still full: serves reads: $("$GQ" -a >/dev/null 2>&1 && echo yes || echo no); a submission: $("$GSUB" --parsable -H -G 1 --wrap "echo $payload" 2>&1 | cut -c1-200)"
    kill -0 "$daemon" 2>/dev/null && { kill -KILL "$daemon"; wait "$daemon" 2>/dev/null; }
  else
    echo "   restarted while still full: did not come up; its log: $(tail -2 "$dir/phalanxd.log" | cut -c1-200 | tr '\n' '|')"
    kill -KILL "$daemon" 2>/dev/null
    wait "$daemon" 2>/dev/null
  fi
  rm -f "$store/filler"
  echo "   space returned: $(df -h --output=avail "$store" | tail -1 | tr -d ' ') free"
  start_daemon || return 1
  local missing=0
  "$GQ" -a --json | jq -r '.jobs[].id' | sort -n >"$dir/present"
  while read -r id; do grep -qx "$id" "$dir/present" || missing=$((missing + 1)); done <"$dir/acked"
  echo "   after the restart: $(wc -l <"$dir/present") jobs in the daemon; acknowledged jobs missing: $missing"
  local after=0
  for i in $(seq 20); do "$GSUB" --parsable -H -G 1 -J "after-$i" --wrap true >/dev/null 2>&1 && after=$((after + 1)); done
  echo "   submissions accepted after space returned: $after of 20"
  kill -TERM "$daemon"
  wait "$daemon" 2>/dev/null
  echo "   PRAGMA integrity_check after a clean stop: $(sqlite3 "$store/phalanxd.db" 'PRAGMA integrity_check' 2>&1 | head -3 | tr '\n' ' ')"
  echo "   jobs rows: $(sqlite3 "$store/phalanxd.db" 'SELECT count(*) FROM jobs')"
  [ "$missing" -eq 0 ] && [ "$after" -eq 20 ]
}

# ---- netcut ----------------------------------------------------------------------------------
# alive_count FILE: how many of the pids (3rd field) in FILE are alive.
alive_count() {
  local n=0 p
  while read -r _ _ p; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done <"$1"
  echo "$n"
}

netcut() {
  local rounds=${1:-3} cut=${CUT_S:-15} bad=0
  agents_yaml=$'  grace: 5\n  fence: true\n  fence_margin: 2' new_cluster net
  echo "== netcut: $rounds rounds, the link of a running job's agent cut for $cut s (its tcp_proxy.py killed); daemon: heartbeat_timeout 3 s + grace 5 s, kill_grace 2 s, fence after 3 + 5 - 2 - 2 = 4 s"
  start_daemon || return 1
  for n in 0 1 2 3; do start_proxy "$n" || return 1; start_agent "$n"; done
  until_ok 30 nodes_up 4 || { echo "agents did not come up"; return 1; }
  mkdir -p "$dir/work"
  for ((r = 1; r <= rounds; r++)); do
    local id node idx
    id=$("$GSUB" --parsable -N 1 --gpus-per-node 8 -J "cut-$r" -D "$dir/work" -o /dev/null \
      --wrap 'echo "$PHALANX_LAUNCH_ID $PHALANX_NODE $$" >> starts-$PHALANX_JOB_ID; trap "" TERM; while :; do sleep 0.2; done')
    until_ok 30 sh -c "[ -s '$dir/work/starts-$id' ]" || { echo "job $id did not start"; bad=1; continue; }
    read -r launch1 node pid1 <"$dir/work/starts-$id"
    idx=${node#node}
    until_ok 10 sh -c "ls '$dir/agent-$node/parts/'*.part" || true
    local t0 t_down="" t_moved="" t_gone="" most=0 a
    t0=$(now_ms)
    kill -KILL "${proxy[$idx]}"
    wait "${proxy[$idx]}" 2>/dev/null
    local last_poll=0
    while [ $(($(now_ms) - t0)) -lt $((cut * 1000)) ]; do
      a=$(alive_count "$dir/work/starts-$id")
      [ "$a" -gt "$most" ] && most=$a
      if [ -z "$t_gone" ] && ! kill -0 "$pid1" 2>/dev/null; then t_gone=$(($(now_ms) - t0)); fi
      if [ -z "$t_moved" ] && [ "$(wc -l <"$dir/work/starts-$id")" -ge 2 ]; then t_moved=$(($(now_ms) - t0)); fi
      if [ -z "$t_down" ] && [ $(($(now_ms) - last_poll)) -ge 200 ]; then
        last_poll=$(now_ms)
        [ "$("$GINFO" -N --json | jq -r ".nodes.nodes[] | select(.name == \"$node\") | .state")" = NODE_STATE_DOWN ] &&
          t_down=$(($(now_ms) - t0))
      fi
      sleep 0.05
    done
    local old_alive_at_restore=no
    kill -0 "$pid1" 2>/dev/null && old_alive_at_restore=yes
    start_proxy "$idx" || return 1
    until_ok 60 nodes_up 4 || echo "   round $r: $node did not come back up"
    local t_rest=$(($(now_ms) + 2000))
    while [ "$(now_ms)" -lt "$t_rest" ]; do  # late reports: a duplicate launch would show up here
      a=$(alive_count "$dir/work/starts-$id")
      [ "$a" -gt "$most" ] && most=$a
      sleep 0.05
    done
    local starts dup_launch alive state nodes fenced
    starts=$(wc -l <"$dir/work/starts-$id")
    dup_launch=$(cut -d' ' -f1 "$dir/work/starts-$id" | sort | uniq -d | wc -l)
    alive=$(alive_count "$dir/work/starts-$id")
    state=$(job_json "$id" | jq -r '.state')
    nodes=$(job_json "$id" | jq -r '.nodelist')
    fenced=$(grep -c "job $id launch $launch1 ended: fenced" "$dir/agent-$node.log")
    # Launch ids the agents started more than once (their logs: "started job J launch L").
    local agent_dups
    agent_dups=$(cat "$dir"/agent-node*.log | sed -n "s/.*started job $id launch \([0-9]*\).*/\1/p" | sort | uniq -d | wc -l)
    printf '   round %d: job %s on %s; old part gone after %s ms (fenced: %d), node down after %s ms, restarted elsewhere after %s ms; old part alive at restore: %s; most processes of the job alive at once: %d; starts %d, launch ids started twice: %d (agents: %d); processes alive now: %d; state %s on %s\n' \
      "$r" "$id" "$node" "${t_gone:-never}" "$fenced" "${t_down:-never}" "${t_moved:-never}" "$old_alive_at_restore" \
      "$most" "$starts" "$dup_launch" "$agent_dups" "$alive" "$state" "$nodes"
    [ "$dup_launch" -eq 0 ] && [ "$agent_dups" -eq 0 ] && [ "$alive" -eq 1 ] && [ "$most" -eq 1 ] || bad=1
    $build/cli/user/gcancel "$id" >/dev/null 2>&1
    until_ok 20 sh -c "[ \"\$($GQ -j $id -a --json | jq -r '.jobs[0].state')\" = JOB_STATE_CANCELLED ]" || true
  done
  return $bad
}

case "${1:-all}" in
  crash) crash "${2:-20}" ;;
  diskfull) diskfull ;;
  netcut) netcut "${2:-3}" ;;
  all)
    rc=0
    crash "${2:-20}" || rc=1
    diskfull || rc=1
    netcut 3 || rc=1
    exit $rc
    ;;
  *) echo "usage: bench/reliability.sh crash [ROUNDS] | diskfull | netcut [ROUNDS] | all" >&2; exit 2 ;;
esac
