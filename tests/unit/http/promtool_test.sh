#!/bin/sh
# usage: promtool_test.sh HTTP_TEST_SERVER
# Serves a registry with every metric type (labels that need escaping, a collector) over HTTP,
# fetches /metrics to a file and pipes it to `promtool check metrics`. Fails when promtool exits
# non-zero (parse errors: 1, lint problems: 3) or prints anything: lint warnings count too.
# Exits 77 (skipped) without promtool.
set -u
server=$1
PROMTOOL=${PROMTOOL:-promtool}
command -v "$PROMTOOL" >/dev/null 2>&1 || { echo "promtool not found: skipped"; exit 77; }
. "$(dirname "$0")/serve_lib.sh"

# The check must be able to fail: promtool flags a lint problem (exit 3) here.
printf '# HELP x_ms h\n# TYPE x_ms gauge\nx_ms 1\n' | "$PROMTOOL" check metrics >/dev/null 2>&1 &&
  fail "promtool accepted a metric with an abbreviated unit; the check would prove nothing"

start_server "$server"
"$server" get "$port" /metrics >"$dir/metrics.txt" || fail "GET /metrics"
for type in counter gauge histogram; do
  grep -q "^# TYPE .* $type\$" "$dir/metrics.txt" || fail "no $type in /metrics"
done
grep -q '^phalanx_jobs{state="running"} 1$' "$dir/metrics.txt" || fail "collector did not run"

out=$("$PROMTOOL" check metrics <"$dir/metrics.txt" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
  echo "promtool check metrics: exit $rc"
  echo "$out"
  echo "--- /metrics:"
  cat "$dir/metrics.txt"
  exit 1
fi
stop_server "$server"
echo "promtool check metrics: clean ($(grep -c -v '^#' "$dir/metrics.txt") samples)"
