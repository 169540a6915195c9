#!/bin/bash
# usage: failover_test.sh PHALANXD PHALANX_AGENT GSUB GQ GINFO
# High availability with the real parts (docs/deployment.md, "High availability"): a throwaway
# PostgreSQL cluster (initdb + pg_ctl, Unix socket only), two phalanxd on it (A and B, loopback
# ports, lease 2 s renewed every 0.4 s), four phalanx-agent processes with the address list
# A,B, and users over TCP with MUNGE (a private munged) through gsub --server A,B.
#  1. B stands by: every call to it is refused with UNAVAILABLE "standby: the leader is ...".
#  2. kill -9 A while a stream of submissions runs: B leads within 10 s (the bound asserted;
#     expected ~2-3 s: lease + a renewal step), no acknowledged job is lost, every job part
#     started once (no GPU of any node given twice: the parts' own start records), and the
#     jobs running before keep running with the same pids.
#  3. A again, as standby; SIGSTOP B past its lease: A takes over; SIGCONT B: its writes are
#     refused (fencing), it exits, and no agent registers with it or is sent anything by it.
#  4. B again, as standby; SIGTERM A: A resigns the lease on its way out, B takes over, the jobs
#     keep running.
# 77 (skipped) only where the PostgreSQL server binaries are missing (tests/skip-allowlist.txt).
# With MUNGE missing the users go through the Unix sockets instead (A's, then B's).
# About 20 s.
set -u
phalanxd=$1 agent=$2 gsub=$3 gq=$4 ginfo=$5
bindir=${PHALANX_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "no PostgreSQL server binaries (initdb) under /usr/lib/postgresql/*/bin or \$PHALANX_PG_BINDIR: skipped"
  exit 77
fi
dir=$(mktemp -d /tmp/phx-failover-XXXXXX)
chmod 755 "$dir"
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$dir/pg" && chown nobody "$dir/pg"
  as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
else
  mkdir "$dir/pg"
fi
pids_a= pids_b= agent_pids= munged_pid=
cleanup() {
  for p in $pids_a $pids_b; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  # shellcheck disable=SC2086
  for p in $agent_pids; do kill -TERM "$p" 2>/dev/null; done
  for p in $agent_pids; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$p" 2>/dev/null
  done
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^PHALANX_CHECKPOINT_FILE=$dir/"; then
      kill -KILL "${p#/proc/}" 2>/dev/null
    fi
  done
  [ -n "$munged_pid" ] && kill "$munged_pid" 2>/dev/null
  "${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/pg/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  # The lines that explain most failures first (CI keeps only the end of a long output).
  echo "---- the daemons' job ends, losses and leadership changes"
  grep -hE "job [0-9]+ (failed|completed|lost)|requeued|took over|resigned|deposed" "$dir"/a.log "$dir"/b*.log \
    2>/dev/null | tail -n 40
  for f in "$dir"/*.log; do
    echo "---- $f"
    tail -n 30 "$f"
  done
  exit 1
}
# deadline SECONDS COMMAND...: runs COMMAND every 0.05 s until it succeeds; 1 after SECONDS.
deadline() {
  local secs=$1 end
  shift
  end=$(($(date +%s%N) / 1000000 + secs * 1000))
  while ! "$@"; do
    [ "$(($(date +%s%N) / 1000000))" -ge "$end" ] && return 1
    sleep 0.05
  done
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- PostgreSQL ----
"${as_pg[@]}" "$bindir/initdb" -D "$dir/pg/data" -U phalanx --auth=trust -E UTF8 --locale=C --no-sync \
  >"$dir/initdb.log" 2>&1 || fail "initdb"
"${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/pg/data" -o "-k $dir/pg -c listen_addresses= -c fsync=off" \
  -l "$dir/pg/server.log" -w start >"$dir/pg_ctl.log" 2>&1 || fail "pg_ctl start: $(cat "$dir/pg/server.log")"
# A session left idle inside a transaction (a SIGSTOP'd leader) is ended by the server, so it
# cannot hold the lease row's lock past its lease (docs/deployment.md).
dsn="host=$dir/pg user=phalanx dbname=postgres options='-c idle_in_transaction_session_timeout=1000'"

# ---- MUNGE for users over TCP (optional) ----
munge=
if command -v munged >/dev/null 2>&1; then
  dd if=/dev/urandom of="$dir/munge.key" bs=1 count=1024 2>/dev/null
  chmod 600 "$dir/munge.key"
  if munged --key-file="$dir/munge.key" --socket="$dir/munge.sock" --pid-file="$dir/munge.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" --force; then
    munge=$dir/munge.sock
    munged_pid=$(cat "$dir/munge.pid")
  fi
fi

# ---- two phalanxd ----
read -r pa pb ua ub < <(python3 -c '
import socket
s = [socket.socket() for _ in range(4)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
printf 'failover-token-%s\n' "$$" >"$dir/agent.token"
chmod 600 "$dir/agent.token"
write_config() {  # NAME AGENT_PORT USER_PORT
  cat >"$dir/$1.yaml" <<EOF
socket: $dir/$1.sock
store:
  backend: postgresql
  dsn: "$dsn"
  lease: 2
  lease_renew: 0.4
agents:
  listen: 127.0.0.1:$2
  token_file: $dir/agent.token
  heartbeat_interval: 1
  heartbeat_timeout: 10
  grace: 5
  kill_grace: 2
scheduler:
  pass_interval: 0.1
EOF
  if [ -n "$munge" ]; then printf 'users_tcp:\n  listen: 127.0.0.1:%s\n  munge_socket: %s\n' "$3" "$munge" >>"$dir/$1.yaml"; fi
}
write_config a "$pa" "$ua"
write_config b "$pb" "$ub"
start_daemon() {  # NAME -> pid in $last_pid
  "$phalanxd" --config "$dir/$1.yaml" --topology gen:demo >>"$dir/$1.log" 2>&1 &
  last_pid=$!
}
start_daemon a
pids_a=$last_pid
deadline 30 grep -q "phalanxd ready" "$dir/a.log" || fail "A not ready"
echo "$(date +%T.%N) A leads"
start_daemon b
pids_b=$last_pid
deadline 30 grep -q "standby: the leader is" "$dir/b.log" || fail "B does not stand by"

# ---- four agents with the address list ----
for i in 0 1 2 3; do
  "$agent" --daemon "127.0.0.1:$pa,127.0.0.1:$pb" --node "node$i" --gpus 8 --token-file "$dir/agent.token" \
    --state-dir "$dir/agent-node$i" --allow-root-jobs --nvml-library none --heartbeat 1 --kill-grace 2 \
    >"$dir/agent-node$i.log" 2>&1 &
  agent_pids="$agent_pids $!"
done
nodes_up() {  # SOCKET
  [ "$("$ginfo" --socket "$1" -N --json 2>/dev/null | grep -o '"state":"NODE_STATE_UP"' | wc -l)" -eq 4 ]
}
deadline 30 nodes_up "$dir/a.sock" || fail "not every node came up on A"

# 1. The standby refuses, naming the leader.
out=$("$gq" --socket "$dir/b.sock" 2>&1) && fail "gq on the standby answered: $out"
case $out in *"standby: the leader is"*) ;; *) fail "the standby's refusal: $out" ;; esac
if [ -n "$munge" ]; then
  # The standby first in the list: the client skips it (its health check says standby).
  out=$(PHALANX_MUNGE_SOCKET=$munge "$gq" --server "127.0.0.1:$ub,127.0.0.1:$ua" 2>&1) ||
    fail "gq --server STANDBY,LEADER: $out"
  out=$(PHALANX_MUNGE_SOCKET=$munge "$gq" --server "127.0.0.1:$ub" 2>&1) && fail "gq on the standby over TCP: $out"
  case $out in *"standby: the leader is"*) ;; *) fail "the standby's refusal over TCP: $out" ;; esac
fi

# Users: gsub --server A,B over TCP with MUNGE, else A's socket then B's.
submit() {  # GPUS NAME -> job id on stdout; non-zero when no daemon acknowledged it
  local cmd="echo \"\$PHALANX_JOB_ID \$PHALANX_LAUNCH_ID \$PHALANX_NODE \$CUDA_VISIBLE_DEVICES \$\$\" >> $dir/starts; exec sleep 600"
  if [ -n "$munge" ]; then
    PHALANX_MUNGE_SOCKET=$munge PHALANX_TIMEOUT=5 "$gsub" --server "127.0.0.1:$ua,127.0.0.1:$ub" --parsable \
      -G "$1" -J "$2" -D "$dir" --wrap "$cmd" 2>>"$dir/gsub-errors.log"
  else
    PHALANX_TIMEOUT=5 "$gsub" --socket "$dir/a.sock" --parsable -G "$1" -J "$2" -D "$dir" --wrap "$cmd" 2>/dev/null ||
      PHALANX_TIMEOUT=5 "$gsub" --socket "$dir/b.sock" --parsable -G "$1" -J "$2" -D "$dir" --wrap "$cmd" \
        2>>"$dir/gsub-errors.log"
  fi
}
: >"$dir/starts"
: >"$dir/acked"
for i in 1 2 3 4; do
  id=$(submit 2 long$i) || fail "submitting long$i"
  echo "$id" >>"$dir/acked"
done
started() { [ "$(wc -l <"$dir/starts")" -ge "$1" ]; }
# Every job the daemon behind SOCKET remembers, finished ones too, with its state and reason;
# the acknowledged ids and how many parts wrote a start record (for failure messages).
jobs_report() {
  "$gq" --socket "$1" --all -o '%.6i %.10j %.10T %R' 2>&1
  echo "acknowledged: $(tr '\n' ' ' <"$dir/acked")"
  echo "start records: $(wc -l <"$dir/starts")"
}
deadline 20 started 4 || fail "the first 4 jobs did not start"
echo "$(date +%T.%N) 4 jobs run"
before_pids=$(awk '{print $5}' "$dir/starts" | sort)

# 2. kill -9 A during a stream of submissions (20 jobs of 1 GPU, one every 0.2 s).
(
  for i in $(seq 1 20); do
    if id=$(submit 1 stream$i); then echo "$id" >>"$dir/acked"; fi
    sleep 0.2
  done
) &
stream=$!
sleep 0.5
kill -KILL "$pids_a"
killed_at=$(now_ms)
wait "$pids_a" 2>/dev/null
pids_a=
deadline 10 grep -q "standby: took over" "$dir/b.log" || fail "B did not take over within 10 s"
deadline 10 grep -q "phalanxd ready" "$dir/b.log" || fail "B not ready"
led_at=$(now_ms)
echo "kill -9: B leads $((led_at - killed_at)) ms after the kill"
wait "$stream"
deadline 20 nodes_up "$dir/b.sock" || fail "not every agent came back to B"
acked=$(wc -l <"$dir/acked")
[ "$acked" -ge 12 ] || fail "only $acked submissions acknowledged (24 made)"
# Every job runs: the acknowledged ones and any stored whose ack the kill cut off; each job's
# one part wrote its start record.
all_running() {  # SOCKET
  local out total running
  out=$("$gq" --socket "$1" --json 2>/dev/null) || return 1
  total=$(echo "$out" | grep -o '"state":"JOB_STATE_[A-Z]*"' | wc -l)
  running=$(echo "$out" | grep -o '"state":"JOB_STATE_RUNNING"' | wc -l)
  [ "$total" -eq "$running" ] && [ "$running" -ge "$(wc -l <"$dir/acked")" ] &&
    [ "$(wc -l <"$dir/starts")" -eq "$running" ]
}
deadline 20 all_running "$dir/b.sock" || fail "not every job runs on B:
$(jobs_report "$dir/b.sock")"
while read -r id; do
  out=$("$gq" --socket "$dir/b.sock" -j "$id" --json 2>&1)
  case $out in *"\"id\":\"$id\""*) ;; *) fail "acknowledged job $id lost: $out" ;; esac
done <"$dir/acked"
check_starts() {
  # One start per job, and no (node, GPU) given to two parts (all of them still run).
  local dup
  dup=$(awk '{print $1}' "$dir/starts" | sort | uniq -d)
  [ -z "$dup" ] || fail "jobs started twice: $dup"
  dup=$(awk '{n = split($4, g, ","); for (i = 1; i <= n; i++) print $3 "/" g[i]}' "$dir/starts" | sort | uniq -d)
  [ -z "$dup" ] || fail "GPUs given twice: $dup"
}
check_starts
for p in $before_pids; do kill -0 "$p" 2>/dev/null || fail "job process $p did not survive the failover"; done
[ "$(awk 'NR <= 4 {print $5}' "$dir/starts" | sort)" = "$before_pids" ] || fail "the first jobs' pids changed"

echo "$(date +%T.%N) checked"
# 3. A again (as systemd would restart it): standby. SIGSTOP B past its lease; SIGCONT.
start_daemon a
pids_a=$last_pid
deadline 20 bash -c "grep -q 'standby: the leader is' '$dir/a.log'" || fail "A does not stand by"
kill -STOP "$pids_b"
stopped_at=$(now_ms)
deadline 10 bash -c "grep -c 'standby: took over' '$dir/a.log' | grep -q 1" || fail "A did not take over from the stopped B"
deadline 10 bash -c "grep -c 'phalanxd ready' '$dir/a.log' | grep -q 2" || fail "A not ready"
echo "SIGSTOP: A leads $(($(now_ms) - stopped_at)) ms after the stop"
deadline 20 nodes_up "$dir/a.sock" || fail "not every agent moved to A"
id=$(submit 1 after-stop) || fail "no submission acknowledged after the takeover"
echo "$id" >>"$dir/acked"
deadline 20 all_running "$dir/a.sock" || fail "the job submitted to A does not run:
$(jobs_report "$dir/a.sock")"
starts_before=$(wc -l <"$dir/starts")
registered_b=$(cat "$dir"/agent-node*.log | grep -c "registered with 127.0.0.1:$pb")
kill -CONT "$pids_b"
deadline 10 bash -c "! kill -0 $pids_b 2>/dev/null" || fail "B did not step down after SIGCONT"
wait "$pids_b"
rc=$?
pids_b=
[ "$rc" -ne 0 ] || fail "B exited 0 after being deposed"
grep -q "fencing" "$dir/b.log" || fail "B's writes were not refused by the fence"
echo "B after SIGCONT: $(grep -m1 -o 'deposed: .*fencing)' "$dir/b.log")"
sleep 1  # anything B had sent would have reached the agents by now
[ "$(cat "$dir"/agent-node*.log | grep -c "registered with 127.0.0.1:$pb")" -eq "$registered_b" ] ||
  fail "an agent registered with the deposed B"
[ "$(wc -l <"$dir/starts")" -eq "$starts_before" ] || fail "a job part started after B resumed"
check_starts
for p in $before_pids; do kill -0 "$p" 2>/dev/null || fail "job process $p did not survive the second failover"; done
deadline 20 all_running "$dir/a.sock" || fail "not every job runs on A:
$(jobs_report "$dir/a.sock")"
while read -r id; do
  out=$("$gq" --socket "$dir/a.sock" -j "$id" --json 2>&1)
  case $out in *"\"id\":\"$id\""*) ;; *) fail "acknowledged job $id lost: $out" ;; esac
done <"$dir/acked"
# 4. B again, as standby; a clean stop of A (SIGTERM, systemctl stop) hands the lease over: A
# resigns it after its last commit, B takes over at its next try, the jobs keep running.
cp "$dir/b.yaml" "$dir/b2.yaml"  # the same B, its own log (b2.log)
start_daemon b2
pids_b=$last_pid
deadline 20 grep -q "standby: the leader is" "$dir/b2.log" || fail "B does not stand by"
kill -TERM "$pids_a"
termed_at=$(now_ms)
deadline 10 grep -q "standby: took over" "$dir/b2.log" || fail "B did not take over from the stopped A"
echo "SIGTERM: B leads $(($(now_ms) - termed_at)) ms after the stop"
wait "$pids_a" || fail "A did not exit 0 on SIGTERM"
pids_a=
grep -q "resigned the leadership" "$dir/a.log" || fail "A did not resign the lease on its clean stop"
deadline 20 nodes_up "$dir/b.sock" || fail "not every agent moved to B"
for p in $before_pids; do kill -0 "$p" 2>/dev/null || fail "job process $p did not survive the clean handover"; done
deadline 20 all_running "$dir/b.sock" || fail "not every job runs on B:
$(jobs_report "$dir/b.sock")"
check_starts
echo "ok: $(wc -l <"$dir/acked") acknowledged jobs, each started once, through two failovers and a handover"
