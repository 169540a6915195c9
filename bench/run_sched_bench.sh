#!/usr/bin/env bash
# Builds sched_bench (Release, build-bench/) and prints the scheduling-pass latency table.
# Usage: bench/run_sched_bench.sh [sched_bench args, e.g. --reps=5 --n=1000,10000 --seed=42]
# Set JOBS for parallel make (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPHALANX_BUILD_BENCH=ON -DPHALANX_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"${JOBS:-2}" --target sched_bench >/dev/null
./build-bench/bench/sched_bench "$@"
