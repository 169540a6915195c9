#!/usr/bin/env bash
# Builds the benchmarks (Release, build-bench/) and prints the placer latency table for docs/.
# Usage: bench/run_placer_bench.sh [placer_latency args, e.g. --calls=2000 --seed=42]
# Set JOBS for parallel make (default 2); set GBENCH=1 to also run the Google Benchmark suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPHALANX_BUILD_BENCH=ON -DPHALANX_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"${JOBS:-2}" --target placer_latency placer_bench >/dev/null
./build-bench/bench/placer_latency "$@"
if [[ "${GBENCH:-0}" == 1 ]]; then
  ./build-bench/bench/placer_bench --benchmark_min_time=0.2
fi
