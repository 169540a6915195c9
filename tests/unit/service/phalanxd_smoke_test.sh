#!/bin/sh
# phalanxd as a program: starts on a temporary socket and store, answers on the socket (the
# socket file appears with mode 0666), stops cleanly on SIGTERM (exit 0, "phalanxd stopped"),
# and a second start on the same store recovers it.
# usage: phalanxd_smoke_test.sh PHALANXD
set -u
bin=$1
dir=$(mktemp -d /tmp/phxd-smoke-XXXXXX)
trap 'rm -rf "$dir"' EXIT
run() {
  "$bin" --socket "$dir/run/d.sock" --db "$dir/state/d.db" --topology gen:demo --log-level info >"$dir/log" 2>&1 &
  pid=$!
  i=0
  while [ ! -S "$dir/run/d.sock" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  if [ ! -S "$dir/run/d.sock" ]; then echo "no socket after 10 s"; cat "$dir/log"; kill "$pid"; exit 1; fi
  mode=$(stat -c %a "$dir/run/d.sock")
  if [ "$mode" != 666 ]; then echo "socket mode $mode, wanted 666"; kill "$pid"; exit 1; fi
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  if [ $rc -ne 0 ]; then echo "exit status $rc after SIGTERM"; cat "$dir/log"; exit 1; fi
  if ! grep -q "phalanxd stopped" "$dir/log"; then echo "no 'phalanxd stopped' in the log"; cat "$dir/log"; exit 1; fi
  if [ -e "$dir/run/d.sock" ]; then echo "the socket file was left behind"; exit 1; fi
}
run
run
grep -q "recovered 0 jobs" "$dir/log" || { echo "second start did not recover the store"; cat "$dir/log"; exit 1; }
exit 0
