#!/usr/bin/env bash
# phalanxd's figures for docs/performance.md ("Daemon"). Builds nothing: it runs daemon_bench
# against an already built phalanxd. Build both first (Release):
#   cmake -S . -B build-bench2 -DCMAKE_BUILD_TYPE=Release -DPHALANX_BUILD_BENCH=ON -DPHALANX_BUILD_TESTS=OFF
#   cmake --build build-bench2 -j1 --target phalanxd daemon_bench
# Usage: bench/run_daemon_bench.sh [BUILD_DIR]   (default build-bench2)
# Environment: RUNS (default 3), COUNT (submissions counted per run, default 20000), INFLIGHT
# (in-flight Submits, a list, default "8 64"), JOBS (jobs in the restart store, default 100000),
# RUNNING (percent of them running, default 6), TOPOLOGY (default gen:superpod:128, 32,768
# GPUs), BENCH_DIR (where the stores go, default /tmp), LOG_LEVEL (phalanxd's, default info:
# the production default, one line per submission). PHALANX_BENCH_PERF=FILE records the daemon
# with perf during each submission run (FILE.SYNC.RUN).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-bench2}
bench=$build/bench/daemon_bench
daemon=$build/scheduler/service/phalanxd
for f in "$bench" "$daemon"; do
  [ -x "$f" ] || { echo "run_daemon_bench.sh: $f is not built (see the header of this script)" >&2; exit 1; }
done
common=(--phalanxd "$daemon" --runs "${RUNS:-3}" --dir "${BENCH_DIR:-/tmp}" --log-level "${LOG_LEVEL:-info}")
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== (a) durable submissions through gRPC"
for n in ${INFLIGHT:-8 64}; do
  "$bench" submit "${common[@]}" --sync both --inflight "$n" --count "${COUNT:-20000}"
done
echo "== (b) restart with ${JOBS:-100000} jobs in the store"
"$bench" restart "${common[@]}" --jobs "${JOBS:-100000}" --running-percent "${RUNNING:-6}" --topology "${TOPOLOGY:-gen:superpod:128}"
