#!/bin/bash
# usage: bench/failover_bench.sh [BUILD_DIR]   (default: build)
# Failover time of two phalanxd on one PostgreSQL (docs/deployment.md, "High availability"):
# ROUNDS (20) rounds of kill -9 the leader; each round measures, from the kill,
#   takeover: the standby's log says it took the lease ("standby: took over"),
#   ready:    it serves again ("phalanxd ready": core rebuilt from the store, listeners up),
#   submit:   the first submission acknowledged by whichever leads (gsub tried on each socket),
#   agents:   every agent registered with the new leader (its 4 nodes up again),
# then restarts the killed one, which stands by, and waits for the next round. The cluster: 4
# agents (8 fake GPUs each) running RUNNING (8) jobs that must survive every round (same pids).
# Prints each round and the median and p99 (nearest rank) of each measure.
# LEASE (10, whole seconds) and RENEW (2): store.lease and store.lease_renew, phalanxd's defaults. The expected
# takeover is LEASE - (the time since the last renewal) + up to RENEW: between LEASE - RENEW
# and LEASE + RENEW.
# PG_BINDIR: PostgreSQL's server binaries (default: the newest /usr/lib/postgresql/*/bin).
set -u
build=${1:-build}
rounds=${ROUNDS:-20} lease=${LEASE:-10} renew=${RENEW:-2} running=${RUNNING:-8}
phalanxd=$build/scheduler/service/phalanxd agent=$build/scheduler/agent/phalanx-agent
gsub=$build/cli/user/gsub ginfo=$build/cli/user/ginfo
for b in "$phalanxd" "$agent" "$gsub" "$ginfo"; do [ -x "$b" ] || { echo "missing $b (build it first)"; exit 2; }; done
bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bindir/initdb" ] || { echo "no PostgreSQL server binaries (set PG_BINDIR)"; exit 2; }
dir=$(mktemp -d /tmp/phx-failover-bench-XXXXXX)
chmod 755 "$dir"
mkdir "$dir/pg"
as_pg=()
if [ "$(id -u)" -eq 0 ]; then chown nobody "$dir/pg"; as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups); fi
pid_a= pid_b= agent_pids=
cleanup() {
  for p in $pid_a $pid_b; do kill -KILL "$p" 2>/dev/null; done
  for p in $agent_pids; do kill -TERM "$p" 2>/dev/null; done
  sleep 1
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^PHALANX_CHECKPOINT_FILE=$dir/"; then kill -KILL "${p#/proc/}" 2>/dev/null; fi
  done
  for p in $agent_pids; do kill -KILL "$p" 2>/dev/null; done
  "${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/pg/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$dir"
}
trap cleanup EXIT
die() { echo "error: $*"; tail -n 20 "$dir"/a.log "$dir"/b.log; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
wait_for() {  # SECONDS COMMAND...
  local end=$(($(now_ms) + $1 * 1000))
  shift
  while ! "$@"; do
    [ "$(now_ms)" -ge "$end" ] && return 1
    sleep 0.02
  done
}

"${as_pg[@]}" "$bindir/initdb" -D "$dir/pg/data" -U phalanx --auth=trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
  die "initdb"
"${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/pg/data" -o "-k $dir/pg -c listen_addresses=" -l "$dir/pg/server.log" -w start \
  >/dev/null 2>&1 || die "pg_ctl start"
dsn="host=$dir/pg user=phalanx dbname=postgres options='-c idle_in_transaction_session_timeout=$((lease * 500))'"
read -r pa pb < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
printf 'bench-token-%s\n' "$$" >"$dir/agent.token"
chmod 600 "$dir/agent.token"
for n in a b; do
  port=$pa
  [ "$n" = b ] && port=$pb
  cat >"$dir/$n.yaml" <<EOF
socket: $dir/$n.sock
store:
  backend: postgresql
  dsn: "$dsn"
  lease: $lease
  lease_renew: $renew
agents:
  listen: 127.0.0.1:$port
  token_file: $dir/agent.token
  heartbeat_interval: 1
  heartbeat_timeout: 30
  grace: 10
  kill_grace: 2
scheduler:
  pass_interval: 0.1
EOF
done
start() {  # NAME -> pid in started_pid
  : >"$dir/$1.log"
  "$phalanxd" --config "$dir/$1.yaml" --topology gen:demo >"$dir/$1.log" 2>&1 &
  started_pid=$!
}
start a
pid_a=$started_pid
wait_for 30 grep -q "phalanxd ready" "$dir/a.log" || die "A not ready"
start b
pid_b=$started_pid
wait_for 30 grep -q "standby: the leader is" "$dir/b.log" || die "B does not stand by"
for i in 0 1 2 3; do
  "$agent" --daemon "127.0.0.1:$pa,127.0.0.1:$pb" --node "node$i" --gpus 8 --token-file "$dir/agent.token" \
    --state-dir "$dir/agent-node$i" --allow-root-jobs --nvml-library none --heartbeat 1 --kill-grace 2 \
    >"$dir/agent-node$i.log" 2>&1 &
  agent_pids="$agent_pids $!"
done
nodes_up() { [ "$("$ginfo" --socket "$dir/$1.sock" -N --json 2>/dev/null | grep -o '"state":"NODE_STATE_UP"' | wc -l)" -eq 4 ]; }
wait_for 30 nodes_up a || die "agents not up"
submit() {  # any socket that acknowledges
  PHALANX_TIMEOUT=2 "$gsub" --socket "$dir/a.sock" --parsable -G 1 -D "$dir" --wrap true >/dev/null 2>&1 ||
    PHALANX_TIMEOUT=2 "$gsub" --socket "$dir/b.sock" --parsable -G 1 -D "$dir" --wrap true >/dev/null 2>&1
}
for i in $(seq 1 "$running"); do
  PHALANX_TIMEOUT=5 "$gsub" --socket "$dir/a.sock" --parsable -G 1 -D "$dir" \
    --wrap "echo \$\$ >> $dir/pids; exec sleep 3600" >/dev/null || die "submit"
done
wait_for 30 bash -c "[ \$(wc -l < '$dir/pids' 2>/dev/null || echo 0) -ge $running ]" || die "jobs did not start"
pids=$(sort "$dir/pids")

leader=a standby=b
declare -a T_TAKE T_READY T_SUBMIT T_AGENTS
printf '%5s %10s %9s %10s %10s\n' round takeover_ms ready_ms submit_ms agents_ms
for r in $(seq 1 "$rounds"); do
  lp=$pid_a
  [ "$leader" = b ] && lp=$pid_b
  takes=$(grep -c "standby: took over" "$dir/$standby.log")
  readies=$(grep -c "phalanxd ready" "$dir/$standby.log")
  # A random moment of the lease's cycle (else the kill would fall at the same phase of the
  # standby's tries every round, right after it started).
  sleep "$(awk -v r="$renew" -v s="$RANDOM" 'BEGIN { printf "%.3f", (s % 1000) / 1000 * 2 * r }')"
  t0=$(now_ms)
  kill -KILL "$lp"
  wait "$lp" 2>/dev/null
  take= ready= sub= ag=
  while [ -z "$take" ] || [ -z "$ready" ] || [ -z "$sub" ] || [ -z "$ag" ]; do
    t=$(now_ms)
    [ $((t - t0)) -gt $((lease * 2000 + 30000)) ] && die "round $r: no failover within $((lease * 2 + 30)) s"
    [ -z "$take" ] && [ "$(grep -c "standby: took over" "$dir/$standby.log")" -gt "$takes" ] && take=$((t - t0))
    [ -z "$ready" ] && [ "$(grep -c "phalanxd ready" "$dir/$standby.log")" -gt "$readies" ] && ready=$((t - t0))
    if [ -n "$ready" ]; then
      [ -z "$sub" ] && submit && sub=$(($(now_ms) - t0))
      [ -z "$ag" ] && nodes_up "$standby" && ag=$(($(now_ms) - t0))
    fi
    sleep 0.02
  done
  printf '%5d %10d %9d %10d %10d\n' "$r" "$take" "$ready" "$sub" "$ag"
  T_TAKE+=("$take") T_READY+=("$ready") T_SUBMIT+=("$sub") T_AGENTS+=("$ag")
  for p in $pids; do kill -0 "$p" 2>/dev/null || die "round $r: job process $p is gone"; done
  # The killed one comes back (as systemd would restart it) and stands by.
  start "$leader"
  if [ "$leader" = a ]; then pid_a=$started_pid; else pid_b=$started_pid; fi
  wait_for 30 grep -q "standby: the leader is" "$dir/$leader.log" || die "round $r: $leader does not stand by"
  tmp=$leader leader=$standby standby=$tmp
done
[ "$(sort "$dir/pids")" = "$pids" ] || die "a job was launched again"
stats() {  # NAME VALUES...
  local name=$1
  shift
  printf '%s\n' "$@" | sort -n | awk -v name="$name" '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    p = int(0.99 * NR + 0.999999); if (p < 1) p = 1
    printf "%-9s median %6.0f ms  p99 %6d ms  min %6d  max %6d\n", name, m, v[p], v[1], v[NR] }'
}
echo "lease $lease s, renewed every $renew s; $rounds rounds; $running jobs kept running (same pids) throughout"
stats takeover "${T_TAKE[@]}"
stats ready "${T_READY[@]}"
stats submit "${T_SUBMIT[@]}"
stats agents "${T_AGENTS[@]}"
