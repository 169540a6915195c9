#!/usr/bin/env bash
# Builds Phalanx and runs every test: a normal build, then an ASan/UBSan build of the tests.
# Usage: tests/run.sh [--no-sanitize]
# With CI=true a skipped test (GTEST_SKIP, or a script's exit 77) fails the run unless its name
# matches a line of tests/skip-allowlist.txt (each line says why it may skip).
set -euo pipefail
cd "$(dirname "$0")/.."
./config/install-deps.sh
jobs=$(nproc)
logs=$(mktemp -d /tmp/phalanx-tests-XXXXXX)

# run_ctest BUILD_DIR: ctest with its output kept, then the skip check.
run_ctest() {
  local dir=$1 log
  log="$logs/$(basename "$dir").log"
  "${ctest_env[@]}" ctest --test-dir "$dir" --output-on-failure -j"$jobs" 2>&1 | tee "$log"  # pipefail: ctest's status
  tests/check_skips.sh "$log"
}

ctest_env=(env)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
run_ctest build
if [ "${1:-}" != "--no-sanitize" ]; then
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHALANX_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$jobs"
  ctest_env=(env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1)
  run_ctest build-asan
fi
rm -rf "$logs"
echo "all tests passed"
