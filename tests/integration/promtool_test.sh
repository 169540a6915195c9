#!/bin/sh
# usage: promtool_test.sh PHALANXD PHALANX_AGENT GSUB GINFO GCANCEL
# The real daemon's /metrics, with jobs running, pending and finished and four agents connected,
# checked by `promtool check metrics`. Fails when promtool exits non-zero (parse errors: 1, lint
# problems: 3) or prints anything at all: lint warnings count. 77 (skipped) without promtool or
# curl.
set -u
phalanxd=$1 agent=$2 gsub=$3 ginfo=$4 gcancel=$5
PROMTOOL=${PROMTOOL:-promtool}
for tool in "$PROMTOOL" curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: skipped"; exit 77; }
done
. "$(dirname "$0")/cluster_lib.sh"
GCANCEL_FOR_CLEANUP=$gcancel

start_daemon "$phalanxd"
start_agents "$agent" 4
wait_nodes_up "$ginfo" 4
export PHALANX_SOCKET=$sock
mkdir "$dir/work"
cd "$dir/work" || fail "cd"
"$gsub" -G 1 -J quick --wrap true >/dev/null || fail "gsub"
"$gsub" -G 16 --topology leaf -J gang --wrap "sleep 30" >/dev/null || fail "gsub"
"$gsub" -G 8 -J eight --wrap "sleep 30" >/dev/null || fail "gsub"
"$gsub" -G 32 -J big --wrap "sleep 1" >/dev/null || fail "gsub"

metrics() { curl -fsS "http://127.0.0.1:$http_port/metrics" >"$dir/metrics.txt"; }
ready() {
  metrics &&
    grep -q '^phalanx_jobs{state="running"} 2$' "$dir/metrics.txt" &&
    grep -q '^phalanx_jobs{state="pending"} 1$' "$dir/metrics.txt" &&
    grep -q '^phalanx_gpus{state="allocated"} 24$' "$dir/metrics.txt" &&
    grep -q '^phalanx_agents_connected 4$' "$dir/metrics.txt" &&
    grep -q '^phalanx_decisions_total{kind="start"} 3$' "$dir/metrics.txt"
}
deadline 30 ready || { cat "$dir/metrics.txt"; fail "/metrics never showed 2 running, 1 pending, 24 GPUs allocated, 4 agents"; }
# The names docs/http.md lists (and config/monitoring's rules and dashboard use).
for name in phalanx_submissions_total phalanx_http_requests_total phalanx_preemptions_total \
  phalanx_lost_gpu_seconds_total 'phalanx_schedule_pass_seconds_bucket{le="+Inf"}' \
  'phalanx_job_wait_seconds_count{size="1"}' 'phalanx_job_wait_seconds_count{size="9-64"}' \
  'phalanx_largest_free_block_gpus{level="node"}' 'phalanx_whole_free_domains{level="leaf"}' \
  'phalanx_fragmentation_ratio{level="node"}' phalanx_fragmentation_fgd_ratio \
  phalanx_placement_efficiency_ratio 'phalanx_queue_jobs{reason="Resources"}' \
  'phalanx_nodes{state="up"} 4' 'phalanx_nodes{state="down"} 0' 'phalanx_gpus{state="idle"} 8' \
  'phalanx_gpus{state="down"} 0' 'phalanx_gpus{state="drained"} 0' 'phalanx_user_gpus{user=' \
  'phalanx_reservation_overdue_seconds{size="65+"}'; do
  grep -qF "$name" "$dir/metrics.txt" || { cat "$dir/metrics.txt"; fail "no $name in /metrics"; }
done
# One snapshot: the GPUs by state add up to the cluster's 32, the queue by reason to the pending jobs.
gpus=$(awk '/^phalanx_gpus\{/ { s += $2 } END { print s }' "$dir/metrics.txt")
[ "$gpus" = 32 ] || fail "phalanx_gpus adds up to $gpus, not 32"
queued=$(awk '/^phalanx_queue_jobs\{/ { s += $2 } END { print s }' "$dir/metrics.txt")
[ "$queued" = 1 ] || fail "phalanx_queue_jobs adds up to $queued, not 1 pending job"
# Old names are gone (docs/http.md: renamed, no duplicates).
for old in phalanx_free_block_gpus 'phalanx_fragmentation_fgd ' 'phalanx_gpus{state="free"}'; do
  ! grep -qF "$old" "$dir/metrics.txt" || fail "old name $old still in /metrics"
done

out=$("$PROMTOOL" check metrics <"$dir/metrics.txt" 2>&1)
rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
  echo "promtool check metrics: exit $rc"
  echo "$out"
  echo "--- /metrics:"
  cat "$dir/metrics.txt"
  exit 1
fi
# HEAD and the JSON API answer too.
curl -fsS "http://127.0.0.1:$http_port/api/v1/jobs" | grep -q '"state":"JOB_STATE_RUNNING"' || fail "/api/v1/jobs"
curl -fsS "http://127.0.0.1:$http_port/healthz" | grep -qx ok || fail "/healthz"
echo "promtool check metrics: clean ($(grep -c -v '^#' "$dir/metrics.txt") samples)"
