#!/usr/bin/env bash
# History size and scrape cost for docs/monitoring.md. Runs an already built phalanxd (no agents)
# with history.interval 1 s on each topology, submits JOBS jobs from this user, lets SAMPLES
# samples accumulate, stops it, and reads the store with sqlite3: rows per sample, then the
# bytes of the history tables and their indexes (dbstat) once a day of samples at the default
# 60 s interval is in (the first sample's rows copied to 1,440 times), per row and per day.
# Without agents every node stays down (jobs pend): the series are the same, the cost of a
# snapshot with jobs running is not measured here.
# Also times GET /metrics (one ClusterSnapshot, what the sampler takes too) and a day's
# /api/v1/history of one series.
# Usage: bench/run_history_bench.sh [BUILD_DIR]   (default build)
# Environment: TOPOLOGIES (default "gen:demo gen:superpod:128": 32 and 32,768 GPUs), SAMPLES
# (default 120), JOBS (default 20), BENCH_DIR (default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
daemon=$build/scheduler/service/phalanxd
gsub=$build/cli/user/gsub
for f in "$daemon" "$gsub"; do
  [ -x "$f" ] || { echo "run_history_bench.sh: $f is not built" >&2; exit 1; }
done
command -v sqlite3 >/dev/null || { echo "run_history_bench.sh: needs sqlite3" >&2; exit 1; }
samples=${SAMPLES:-120}
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %8s %10s %12s %12s %12s %12s\n' topology gpus rows/smpl bytes/row bytes/day metrics_ms history_ms
for topo in ${TOPOLOGIES:-gen:demo gen:superpod:128}; do
  d=$(mktemp -d "${BENCH_DIR:-/tmp}/phx-history-XXXXXX")
  printf 'history:\n  interval: 1\n  retention: 2592000\nagents:\n  startup_grace: 100000\n' >"$d/phalanxd.yaml"
  "$daemon" --config "$d/phalanxd.yaml" --socket "$d/s.sock" --db "$d/state.db" --topology "$topo" \
    --http-listen 127.0.0.1:0 --log-level warn >"$d/log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do [ -S "$d/s.sock" ] && break; sleep 0.1; done
  port=""
  for _ in $(seq 100); do
    port=$(ss -ltnp 2>/dev/null | grep "pid=$pid," | sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' | head -n1)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "no HTTP port for $topo"; cat "$d/log"; kill "$pid"; exit 1; }
  for i in $(seq "${JOBS:-20}"); do
    PHALANX_SOCKET=$d/s.sock "$gsub" -G $((1 << (i % 6))) -J "bench$i" --wrap "sleep 1000" >/dev/null
  done
  until [ "$(sqlite3 "$d/state.db" 'SELECT count(DISTINCT time) FROM history' 2>/dev/null || echo 0)" -ge "$samples" ]; do
    sleep 1
  done
  gpus=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '/^phalanx_gpus\{/ { s += $2 } END { print s }')
  t_metrics=0
  for _ in 1 2 3 4 5; do
    t=$(curl -fsS -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/metrics")
    t_metrics=$(echo "$t_metrics $t" | awk '{ print $1 + $2 * 1000 / 5 }')
  done
  t_hist=$(curl -fsS -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/api/v1/history?series=gpus_allocated,user_gpus.*" |
    awk '{ print $1 * 1000 }')
  kill -TERM "$pid"
  wait "$pid" || true
  n=$(sqlite3 "$d/state.db" 'SELECT count(DISTINCT time) FROM history')
  per=$(sqlite3 "$d/state.db" 'SELECT count(*) * 1.0 / count(DISTINCT time) FROM history')
  # A day at the default 60 s: the first sample's rows copied to 1,440 later times (the same
  # names and values, so the same row sizes), then the B-trees' pages counted.
  sqlite3 "$d/state.db" "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 1440)
    INSERT INTO history(series, time, value) SELECT h.series, m.t + 1000000 + k.i * 60, h.value
    FROM history h, k, (SELECT min(time) AS t FROM history) m WHERE h.time = m.t"
  rows=$(sqlite3 "$d/state.db" 'SELECT count(*) FROM history')
  bytes=$(sqlite3 "$d/state.db" "SELECT sum(pgsize) FROM dbstat WHERE name IN ('history', 'history_by_time', 'history_series', 'sqlite_autoindex_history_series_1')")
  printf '%-22s %8s %10.1f %12.1f %12.0f %12.1f %12.1f\n' "$topo" "$gpus" "$per" \
    "$(echo "$bytes $rows" | awk '{ print $1 / $2 }')" "$(echo "$bytes $rows $per" | awk '{ print $1 / $2 * $3 * 1440 }')" \
    "$t_metrics" "$t_hist"
  rm -rf "$d"
done
