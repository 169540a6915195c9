# Shell helpers for the integration tests (sourced): phalanxd and phalanx-agent as processes in a
# temporary directory, free ports chosen by the kernel (port 0, read back from the daemon's log).
# Every wait has a deadline. Cleanup (on EXIT) cancels jobs, stops agents and the daemon, kills
# job processes left over (found by PHALANX_CHECKPOINT_FILE pointing into the directory) and
# removes the directory.
#
#   . cluster_lib.sh
#   start_daemon PHALANXD [FLAGS...]    # sets sock, agent_port, http_port ($PHX_DAEMON_YAML: extra config)
#   start_agents PHALANX_AGENT N        # node0..node{N-1}, 8 fake GPUs each
#   wait_nodes_up GINFO N
#   fail MESSAGE                        # prints the logs, exits 1

dir=$(mktemp -d /tmp/phx-integ-sh-XXXXXX)
chmod 755 "$dir"
sock=$dir/run/phalanxd.sock
daemon_pid=
agent_pids=
agent_port=
http_port=
GCANCEL_FOR_CLEANUP=

fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do
    [ -f "$f" ] || continue
    echo "---- $f"
    tail -n 40 "$f"
  done
  exit 1
}

# deadline SECONDS COMMAND...: runs COMMAND every 0.05 s until it succeeds; 1 after SECONDS.
deadline() {
  _secs=$1
  shift
  _end=$(($(date +%s) + _secs))
  while ! "$@"; do
    [ "$(date +%s)" -ge "$_end" ] && return 1
    sleep 0.05
  done
  return 0
}

start_daemon() {
  _bin=$1
  shift
  printf 'integ-token-%s\n' "$$" >"$dir/agent.token"
  chmod 600 "$dir/agent.token"
  cat >"$dir/phalanxd.yaml" <<EOF
agents:
  heartbeat_interval: 1
  grace: 2
  kill_grace: 2
scheduler:
  pass_interval: 0.1
EOF
  # PHX_DAEMON_YAML: more configuration (e.g. a history: section) appended to the file.
  [ -z "${PHX_DAEMON_YAML:-}" ] || printf '%s\n' "$PHX_DAEMON_YAML" >>"$dir/phalanxd.yaml"
  "$_bin" --config "$dir/phalanxd.yaml" --socket "$sock" --db "$dir/state/phalanxd.db" --topology gen:demo \
    --agent-listen 127.0.0.1:0 --token-file "$dir/agent.token" --http-listen 127.0.0.1:0 "$@" \
    >"$dir/phalanxd.log" 2>&1 &
  daemon_pid=$!
  deadline 30 grep -q "phalanxd ready" "$dir/phalanxd.log" || fail "phalanxd not ready"
  agent_port=$(sed -n 's/.*agents: listening on .* (port \([0-9]*\),.*/\1/p' "$dir/phalanxd.log")
  http_port=$(sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/phalanxd.log")
  [ -n "$agent_port" ] && [ -n "$http_port" ] || fail "no ports in the daemon's log"
}

start_agents() {
  _bin=$1
  _n=$2
  _i=0
  while [ "$_i" -lt "$_n" ]; do
    "$_bin" --daemon "127.0.0.1:$agent_port" --node "node$_i" --gpus 8 --token-file "$dir/agent.token" \
      --state-dir "$dir/agent-node$_i" --allow-root-jobs --nvml-library none --heartbeat 1 --kill-grace 2 \
      >"$dir/agent-node$_i.log" 2>&1 &
    agent_pids="$agent_pids $!"
    _i=$((_i + 1))
  done
}

_nodes_up() {
  [ "$(PHALANX_SOCKET=$sock "$1" -N --json 2>/dev/null | grep -o '"state":"NODE_STATE_UP"' | wc -l)" -eq "$2" ]
}
wait_nodes_up() {
  deadline 30 _nodes_up "$1" "$2" || fail "not every node came up"
}

_no_parts() {
  ! ls "$dir"/agent-node*/parts/*.part >/dev/null 2>&1
}
_gone() {
  ! kill -0 "$1" 2>/dev/null
}
# _stop PID...: SIGTERM to all (they stop in parallel), SIGKILL to any still there after 15 s.
_stop() {
  for _p in "$@"; do kill -TERM "$_p" 2>/dev/null; done
  for _p in "$@"; do
    deadline 15 _gone "$_p" || kill -KILL "$_p" 2>/dev/null
    wait "$_p" 2>/dev/null
  done
}
cleanup() {
  if [ -n "$GCANCEL_FOR_CLEANUP" ] && [ -n "$daemon_pid" ]; then
    PHALANX_SOCKET=$sock "$GCANCEL_FOR_CLEANUP" --me >/dev/null 2>&1
    deadline 10 _no_parts
  fi
  # shellcheck disable=SC2086
  _stop $agent_pids
  [ -z "$daemon_pid" ] || _stop "$daemon_pid"
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^PHALANX_CHECKPOINT_FILE=$dir/"; then
      kill -KILL "${p#/proc/}" 2>/dev/null
    fi
  done
  rm -rf "$dir"
}
trap cleanup EXIT
