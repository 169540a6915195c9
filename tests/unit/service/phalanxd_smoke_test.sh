#!/bin/sh
# phalanxd as a program: starts on a temporary socket and store, answers on the socket (the
# socket file appears with mode 0666; gsub submits a job through it), stops cleanly on SIGTERM
# (exit 0, "phalanxd stopped"), and a second start on the same store recovers that job: the log
# says "recovered 1 jobs" and gq still lists it as pending.
# usage: phalanxd_smoke_test.sh PHALANXD GSUB GQ
set -u
bin=$1
gsub=$2
gq=$3
dir=$(mktemp -d /tmp/phxd-smoke-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export PHALANX_SOCKET="$dir/run/d.sock"
fail() { echo "FAIL: $*"; cat "$dir/log"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; exit 1; }
start() {
  "$bin" --socket "$dir/run/d.sock" --db "$dir/state/d.db" --topology gen:demo --log-level info >"$dir/log" 2>&1 &
  pid=$!
  i=0
  while [ ! -S "$dir/run/d.sock" ] && [ $i -lt 1200 ]; do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; rc=$?; pid=; fail "phalanxd exited with status $rc before its socket appeared"; }
    sleep 0.05
    i=$((i + 1))
  done
  [ -S "$dir/run/d.sock" ] || fail "no socket after 60 s"
  mode=$(stat -c %a "$dir/run/d.sock")
  [ "$mode" = 666 ] || fail "socket mode $mode, wanted 666"
}
stop() {
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  pid=
  [ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
  grep -q "phalanxd stopped" "$dir/log" || fail "no 'phalanxd stopped' in the log"
  [ ! -e "$dir/run/d.sock" ] || fail "the socket file was left behind"
}

start
grep -q "recovered 0 jobs" "$dir/log" || fail "a new store should recover 0 jobs"
# No agent is connected, so the job stays pending across both lives of the daemon.
out=$("$gsub" -G 2 -J smoke --wrap "true" 2>&1) || fail "gsub failed: $out"
id=$(printf '%s\n' "$out" | grep -o '[0-9][0-9]*' | tail -n 1)
[ -n "$id" ] || fail "no job id in gsub's answer: $out"
stop

start
grep -q "recovered 1 jobs" "$dir/log" || fail "second start did not recover the submitted job"
listed=$("$gq" --noheader -o "%i %j %T" 2>&1) || fail "gq failed: $listed"
printf '%s\n' "$listed" | grep -q "^ *$id  *smoke  *PENDING" || fail "gq after the restart: '$listed', wanted job $id smoke PENDING"
stop
echo "smoke: ok (job $id recovered)"
exit 0
