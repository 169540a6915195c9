#!/usr/bin/env bash
# Builds store_bench (Release, build-bench/) and prints the store's figures for docs/store.md.
# Usage: bench/run_store_bench.sh [store_bench args, e.g. --jobs=20000 --restart-jobs=100000
#        --sync=normal|full|both --dir=/var/lib/phalanx (measure on the daemon's real disk)]
# Set JOBS for parallel make (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPHALANX_BUILD_BENCH=ON -DPHALANX_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench -j"${JOBS:-2}" --target store_bench >/dev/null
./build-bench/bench/store_bench "$@"
