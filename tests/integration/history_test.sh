#!/bin/sh
# usage: history_test.sh PHALANXD PHALANX_AGENT GSUB GINFO GCANCEL
# History (docs/monitoring.md) on the real daemon and its real SQLite file: with a 1 s sample
# interval, GET /api/v1/history shows the allocated GPUs of a running job, the per-user GPUs
# (user_gpus.*), the queue by reason and the largest free block per level; after a restart of
# phalanxd on the same store the points from before are still there and new ones follow; bad
# requests get a 400 naming the parameter. 77 (skipped) without curl or jq.
set -u
phalanxd=$1 agent=$2 gsub=$3 ginfo=$4 gcancel=$5
for tool in curl jq; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: skipped"; exit 77; }
done
. "$(dirname "$0")/cluster_lib.sh"
GCANCEL_FOR_CLEANUP=$gcancel
PHX_DAEMON_YAML='history:
  interval: 1
  retention: 86400'

start_daemon "$phalanxd"
start_agents "$agent" 4
wait_nodes_up "$ginfo" 4
export PHALANX_SOCKET=$sock
mkdir "$dir/work"
cd "$dir/work" || fail "cd"
me=$(id -un)
"$gsub" -G 16 --topology leaf -J gang --wrap "sleep 60" >/dev/null || fail "gsub"
"$gsub" -G 32 -J big --wrap "sleep 1" >/dev/null || fail "gsub"  # waits: 16 are taken

hist() { curl -fsS "http://127.0.0.1:$http_port/api/v1/history?$1" >"$dir/h.json"; }
q() { jq -r "$@" "$dir/h.json"; }
# A point with 16 allocated GPUs, 16 for this user, the 32-GPU job queued, blocks of 16 free.
seen_running() {
  hist "series=gpus_allocated,user_gpus.*,queue_jobs.*,largest_free_block_gpus.*,gpus_idle,fgd" &&
    [ "$(q '[.series.gpus_allocated[] | select(.[1] == 16)] | length')" -ge 1 ] &&
    [ "$(q --arg u "user_gpus.$me" '[.series[$u][]? | select(.[1] == 16)] | length')" -ge 1 ] &&
    [ "$(q '[.series | to_entries[] | select(.key | startswith("queue_jobs.")) | .value[] | select(.[1] == 1)] | length')" -ge 1 ] &&
    [ "$(q '[.series["largest_free_block_gpus.spine"][]? | select(.[1] == 16)] | length')" -ge 1 ]
}
deadline 30 seen_running || { cat "$dir/h.json"; fail "history never showed the 16-GPU job running and one queued"; }
[ "$(q '.series.gpus_idle | length')" -ge 1 ] || fail "no gpus_idle points"
before=$(q '.series.gpus_allocated | length')
last_before=$(q '.series.gpus_allocated[-1][0]')

# Restart phalanxd on the same store: the points are still there, and new ones follow.
_stop "$daemon_pid"
daemon_pid=
start_daemon "$phalanxd"
hist "series=gpus_allocated" || fail "history after restart"
after=$(q '.series.gpus_allocated | length')
[ "$after" -ge "$before" ] || fail "history lost points over a restart: $before before, $after after"
[ "$(q "[.series.gpus_allocated[] | select(.[0] <= $last_before)] | length")" -ge "$before" ] ||
  fail "the points from before the restart are not all there"
more() { hist "series=gpus_allocated" && [ "$(q "[.series.gpus_allocated[] | select(.[0] > $last_before)] | length")" -ge 1 ]; }
deadline 15 more || fail "no new samples after the restart"

# since and step.
hist "series=gpus_allocated&since=$((last_before + 1))" || fail "since"
[ "$(q "[.series.gpus_allocated[] | select(.[0] <= $last_before)] | length")" = 0 ] || fail "since= kept older points"
hist "series=gpus_allocated&step=3600" || fail "step"
[ "$(q '.series.gpus_allocated | length')" -le 2 ] || fail "step=3600 gave more than 2 buckets"

# Bad requests: 400 and the parameter named.
bad() {
  code=$(curl -sS -o "$dir/err.json" -w '%{http_code}' "http://127.0.0.1:$http_port/api/v1/history?$1")
  [ "$code" = 400 ] || fail "$1: HTTP $code, not 400"
  grep -q "$2" "$dir/err.json" || fail "$1: $(cat "$dir/err.json") does not name $2"
}
bad "" "series: missing"
bad "series=a*b" "series: 'a\\*b'"
bad "series=fgd&since=yesterday" "since: 'yesterday'"
bad "series=fgd&step=0" "step: '0'"
echo "history: $before points before the restart, $after after it, new samples after; API errors named"
