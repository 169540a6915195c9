#!/usr/bin/env bash
# Builds array_bench (Release, build-bench/) and prints the job-array table for docs/performance.md.
# Usage: bench/run_array_bench.sh [--reps=R] [--n=N]. Set JOBS for parallel make (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPHALANX_BUILD_BENCH=ON -DPHALANX_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"${JOBS:-2}" --target array_bench >/dev/null
./build-bench/bench/array_bench "$@"
