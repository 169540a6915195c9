#!/usr/bin/env bash
# usage: demo_cluster_test.sh BUILD_DIR SOURCE_DIR
# config/demo-cluster.sh end to end in a private PHALANX_DEMO_DIR: it starts the daemon and four
# agents, runs its demo jobs to completion and leaves the cluster up (gq and /metrics answer);
# a second start replaces the first (idempotent); `stop` stops everything.
set -u
build=$1
src=$2
demo=$(mktemp -d /tmp/phx-demo-test-XXXXXX)
export PHALANX_DEMO_DIR=$demo
script=$src/config/demo-cluster.sh
trap '"$script" stop >/dev/null 2>&1; rm -rf "$demo"' EXIT
fail() {
  echo "FAIL: $*"
  tail -n 30 "$demo"/logs/*.log 2>/dev/null
  exit 1
}
# curl reads /metrics below; config/install-deps.sh installs it (77: skipped, which fails in CI).
command -v curl >/dev/null 2>&1 || { echo "curl not found: skipped"; exit 77; }
export PHALANX_SOCKET=$demo/run/phalanxd.sock
gq=$build/cli/user/gq

run_demo() {
  local start=$SECONDS
  out=$(timeout 100 "$script" "$build" 2>&1)
  local rc=$?
  echo "$out"
  echo "--- demo-cluster.sh: exit $rc after $((SECONDS - start)) s"
  [[ $rc -eq 0 ]] || fail "demo-cluster.sh exit $rc"
  for want in "rank 0 of 2 on node" "rank 1 of 2 on node" "WORLD_SIZE=16 NPROC_PER_NODE=8" "rank 1: done" \
    "export PHALANX_SOCKET=$demo/run/phalanxd.sock" "/metrics" "/api/v1/jobs" "demo-cluster.sh stop"; do
    grep -qF -- "$want" <<<"$out" || fail "no '$want' in the demo's output"
  done
  # Every demo job completed, the cluster is still up.
  [[ $("$gq" -a --noheader -o "%T" | grep -c COMPLETED) -eq 4 ]] || { "$gq" -a; fail "not 4 completed jobs"; }
  [[ -z $("$gq" --noheader) ]] || fail "jobs still active"
  url=$(grep -o 'http://[0-9.]*:[0-9]*/metrics' <<<"$out" | head -n 1)
  curl -fsS "$url" | grep -q '^phalanx_agents_connected 4$' || fail "$url: not 4 agents connected"
}

run_demo
first_daemon=$(cat "$demo/pids/phalanxd")
run_demo
kill -0 "$first_daemon" 2>/dev/null && fail "the first demo's phalanxd ($first_daemon) still runs after a second start"
second_daemon=$(cat "$demo/pids/phalanxd")
agents=$(cat "$demo"/pids/agent-*)

"$script" stop || fail "stop: exit $?"
for pid in $second_daemon $agents; do
  kill -0 "$pid" 2>/dev/null && fail "pid $pid still runs after stop"
done
[[ -e "$demo/run/phalanxd.sock" ]] && fail "the socket is left behind"
"$script" stop | grep -q "no demo running" || fail "a second stop"
echo "demo cluster: ok"
