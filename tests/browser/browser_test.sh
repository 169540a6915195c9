#!/bin/sh
# usage: browser_test.sh BUILD_DIR SOURCE_DIR PHALANXD PHALANX_AGENT GSUB GCANCEL GINFO PHALANX
# The dashboard in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core from
# npm; tests/browser/package-lock.json pins it) against phalanxd with four agents on the demo
# cluster: dashboard_test.mjs; then a `phalanx sim` HTML report (the same chart module):
# sim_report_test.mjs. Screenshots in BUILD_DIR/browser/screenshots. node_modules are
# installed once into BUILD_DIR/browser (npm ci again when the lock file changes). Skipped (77)
# only when node, npm or chromium is not installed; an unreachable registry is a failure.
set -u
build=$1 src=$2 phalanxd=$3 agent=$4 gsub=$5 gcancel=$6 ginfo=$7 phalanx=$8
chromium=${PHALANX_CHROMIUM:-/usr/bin/chromium}
for tool in node npm "$chromium"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: skipped"; exit 77; }
done
work=$build/browser
mkdir -p "$work"
if ! cmp -s "$src/tests/browser/package-lock.json" "$work/package-lock.json" || [ ! -d "$work/node_modules/playwright-core" ]; then
  cp "$src/tests/browser/package.json" "$src/tests/browser/package-lock.json" "$work/"
  (cd "$work" && npm ci --no-audit --no-fund >npm.log 2>&1) || {
    cat "$work/npm.log"
    echo "FAIL: npm ci failed (is the npm registry reachable?)"
    exit 1
  }
fi
cp "$src/tests/browser/"*.mjs "$work/"

. "$src/tests/integration/cluster_lib.sh"
GCANCEL_FOR_CLEANUP=$gcancel
# The store's history every second, so the history charts have points within the test.
PHX_DAEMON_YAML=$(printf 'history:\n  interval: 1')
start_daemon "$phalanxd"
start_agents "$agent" 4
wait_nodes_up "$ginfo" 4
export PHALANX_SOCKET=$sock
mkdir "$dir/work"
cd "$dir/work" || fail "cd"
# The known placement: on the empty cluster, 16 GPUs within one leaf go to leaf0 (node0, node1).
"$gsub" -G 16 --topology leaf -J gang --wrap "sleep 300" >/dev/null || fail "gsub"
running() { curl -fsS "http://127.0.0.1:$http_port/api/v1/jobs/1" | grep -q JOB_STATE_RUNNING; }
deadline 20 running || fail "job 1 never ran"
node "$work/dashboard_test.mjs" "http://127.0.0.1:$http_port" "$gsub" "$gcancel" "$work/screenshots" || fail "dashboard_test.mjs"
"$phalanx" sim --topology gen:demo --trace "$src/tests/fixtures/traces/mixed40.csv" --html "$dir/report.html" >/dev/null ||
  fail "phalanx sim"
node "$work/sim_report_test.mjs" "$dir/report.html" "$work/screenshots" || fail "sim_report_test.mjs"
echo "screenshots: $work/screenshots"
