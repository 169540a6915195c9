#!/usr/bin/env bash
# The dashboard on a 4,096-node generated cluster (gen:superpod:128:32: 32,768 GPUs), in
# headless Chromium: first paint and the update when a job starts and ends, median of
# BENCH_RUNS (5) page loads (bench/dashboard_bench.mjs). Also the size and server time of the
# JSON the page reads. Not a test: it prints figures, nothing goes into CTest.
#   bench/dashboard_bench.sh [BUILD_DIR]
# Knobs: BENCH_RUNS (5), BENCH_AGENTS (16 agents, su000-n00.., so that a BENCH_GPUS (128) job
# can start; the other nodes have no agent and show as down), BENCH_TOPOLOGY (gen:superpod:128:32).
# Needs phalanxd, phalanx-agent, gsub, gcancel, ginfo in BUILD_DIR, node, npm, /usr/bin/chromium.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${BENCH_RUNS:-5}
agents=${BENCH_AGENTS:-16}
gpus=${BENCH_GPUS:-128}
topology=${BENCH_TOPOLOGY:-gen:superpod:128:32}
for t in node npm "${PHALANX_CHROMIUM:-/usr/bin/chromium}" curl; do
  command -v "$t" >/dev/null || { echo "$t not found" >&2; exit 77; }
done
work=$build/browser
mkdir -p "$work"
if ! cmp -s "$src/tests/browser/package-lock.json" "$work/package-lock.json" || [[ ! -d "$work/node_modules/playwright-core" ]]; then
  cp "$src/tests/browser/package.json" "$src/tests/browser/package-lock.json" "$work/"
  (cd "$work" && npm ci --no-audit --no-fund >npm.log 2>&1) || { cat "$work/npm.log"; exit 1; }
fi
cp "$src/tests/browser/browser_lib.mjs" "$src/bench/dashboard_bench.mjs" "$work/"

bin=$build/scheduler/service/phalanxd agent_bin=$build/scheduler/agent/phalanx-agent
gsub=$build/cli/user/gsub ginfo=$build/cli/user/ginfo
# shellcheck source=../tests/integration/cluster_lib.sh
. "$src/tests/integration/cluster_lib.sh"
GCANCEL_FOR_CLEANUP=$build/cli/user/gcancel
# As cluster_lib.sh's start_daemon, on the big topology.
printf 'bench-token-%s\n' "$$" >"$dir/agent.token"
chmod 600 "$dir/agent.token"
printf 'agents:\n  heartbeat_interval: 1\n  grace: 2\n  kill_grace: 2\nscheduler:\n  pass_interval: 1\n' >"$dir/phalanxd.yaml"
"$bin" --config "$dir/phalanxd.yaml" --socket "$sock" --db "$dir/state/phalanxd.db" --topology "$topology" \
  --agent-listen 127.0.0.1:0 --token-file "$dir/agent.token" --http-listen 127.0.0.1:0 >"$dir/phalanxd.log" 2>&1 &
daemon_pid=$!
deadline 60 grep -q "phalanxd ready" "$dir/phalanxd.log" || fail "phalanxd not ready"
agent_port=$(sed -n 's/.*agents: listening on .* (port \([0-9]*\),.*/\1/p' "$dir/phalanxd.log")
http_port=$(sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' "$dir/phalanxd.log")
i=0
while ((i < agents)); do
  node=$(printf 'su000-n%02d' "$i")
  "$agent_bin" --daemon "127.0.0.1:$agent_port" --node "$node" --gpus 8 --token-file "$dir/agent.token" \
    --state-dir "$dir/agent-$node" --allow-root-jobs --nvml-library none --heartbeat 1 --kill-grace 2 \
    >"$dir/agent-$node.log" 2>&1 &
  agent_pids="$agent_pids $!"
  i=$((i + 1))
done
up() { [[ $(PHALANX_SOCKET=$sock "$ginfo" -N --json 2>/dev/null | grep -o '"state":"NODE_STATE_UP"' | wc -l) -eq $agents ]]; }
deadline 60 up || fail "the agents' nodes did not come up"
export PHALANX_SOCKET=$sock
mkdir "$dir/work" && cd "$dir/work" || fail "cd"
u=http://127.0.0.1:$http_port
echo "topology $topology, $agents nodes up, phalanxd $(git -C "$src" rev-parse --short HEAD 2>/dev/null)"
for p in /api/v1/map /api/v1/placeable /api/v1/jobs /; do
  times=()
  for _ in 1 2 3 4 5; do times+=("$(curl -fsS -o "$dir/body" -w '%{time_total}' "$u$p")"); done
  printf '%-20s %8d bytes, median %s s (curl, 5 fetches)\n' "$p" "$(stat -c %s "$dir/body")" \
    "$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)"
done
node "$work/dashboard_bench.mjs" "$u" "$gsub" "$runs" "$gpus" || fail "dashboard_bench.mjs"
