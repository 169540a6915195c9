#!/usr/bin/env bash
# Builds Phalanx and runs every test: a normal build, then an ASan/UBSan build of the tests, then
# a ThreadSanitizer build of the threaded tests only (PHALANX_TSAN=0 leaves that one out), then
# a bounded libFuzzer run of every reader (tests/fuzz/run.sh; PHALANX_FUZZ=0 leaves it out).
# Usage: tests/run.sh [--no-sanitize]   (--no-sanitize: the normal build only)
# With CI=true a skipped test (GTEST_SKIP, or a script's exit 77) fails the run unless its name
# matches a line of tests/skip-allowlist.txt (each line says why it may skip).
set -euo pipefail
cd "$(dirname "$0")/.."
# phase NAME: the time since the last phase mark. The marks are printed when the run ends, passed or
# failed, so CI's log tail says where its minutes went.
phases=() mark=$(date +%s)
phase() { local now; now=$(date +%s); phases+=("$1 $((now - mark)) s"); mark=$now; }
trap 'phase "(until exit)"; printf "time: %s\n" "${phases[@]}"' EXIT
./config/install-deps.sh
jobs=$(nproc)
logs=$(mktemp -d /tmp/phalanx-tests-XXXXXX)

# run_ctest BUILD_DIR [CTEST_ARGS...]: ctest with its output kept, then the skip check.
run_ctest() {
  local dir=$1 log
  shift
  log="$logs/$(basename "$dir").log"
  "${ctest_env[@]}" ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$log"  # pipefail: ctest's status
  tests/check_skips.sh "$log"
}

ctest_env=(env)
# Ninja (config/install-deps.sh installs it) for a new build directory: with make, a target's files
# wait until every library it links is built, and a unity batch of instrumented core files is
# minutes long. An existing directory keeps its generator (cmake refuses to change it).
generator() { if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null; then echo -GNinja; fi; }
# Unity batches in all three GCC builds (PHALANX_UNITY, CMakeLists.txt): the tree is compiled three
# times here, mostly parsing the same gRPC, Protobuf and GoogleTest headers again per file.
cmake -S . -B build $(generator build) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHALANX_UNITY=ON >/dev/null
phase "dependencies"
cmake --build build -j"$jobs"
phase "plain build"
run_ctest build
phase "plain tests"
if [ "${1:-}" != "--no-sanitize" ]; then
  cmake -S . -B build-asan $(generator build-asan) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHALANX_UNITY=ON -DPHALANX_SANITIZE=address >/dev/null
  cmake --build build-asan -j"$jobs"
  phase "asan build"
  # Under ASan the placer's exhaustive and randomized quality tests run a quarter of their cases
  # (PHALANX_QUALITY_SCALE: the same code paths, 4x fewer seeds; the plain build runs them all), and
  # SchedulerProperty.BestFitTieBreakingKeepsLargerFreeBlocks is left to the plain build: it is a
  # statistical claim over 48 whole simulations (83 s there, 206 s under ASan), and the same
  # scheduler paths run under ASan in SchedulerProperty's randomized runs. The tooling.* checks
  # read the sources, not the build (clang's -Wthread-safety pass alone is ~35 s): the plain run's
  # answer is theirs.
  ctest_env=(env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 PHALANX_QUALITY_SCALE=0.25)
  run_ctest build-asan -E '^(SchedulerProperty\.BestFitTieBreakingKeepsLargerFreeBlocks|tooling\..*)$'
  phase "asan tests"
fi

# ThreadSanitizer over the threaded parts: the daemon's io thread and gRPC's threads
# (daemon_test, service_test), the store's group committer (store_test's GroupCommitter and
# StoreCrash tests; its single-threaded Store* tests are left out), the HTTP server
# (http_test), the Unix-socket accept thread (service_test, daemon_test) and the agent's link
# to the daemon (agent_client_test). Only these executables are built: the rest of the tree has
# no threads of its own. Each test's label is its executable (tests/CMakeLists.txt).
# GCC 12's TSan runtime cannot map its shadow memory with the address-space randomization
# of newer kernels (vm.mmap_rnd_bits > 28: "FATAL: ThreadSanitizer: unexpected memory
# mapping"), so the build (which runs the tests to list them) and ctest run with it turned off.
# On by default since issue 10's loops: 29 of 30 runs clean (the one report, gRPC's write op
# set in the agent's ConnectStream, is explained in tests/tsan.supp), then 30 of 30 clean with
# that entry. PHALANX_TSAN=0 leaves it out (e.g. a quick local run).
if [ "${1:-}" != "--no-sanitize" ] && [ "${PHALANX_TSAN:-1}" != 0 ]; then
  tsan_tests=(daemon_test service_test store_test http_test agent_client_test)
  norandom=(setarch "$(uname -m)" -R)
  cmake -S . -B build-tsan $(generator build-tsan) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHALANX_UNITY=ON -DPHALANX_SANITIZE=thread >/dev/null
  "${norandom[@]}" cmake --build build-tsan -j"$jobs" --target "${tsan_tests[@]}"
  phase "tsan build"
  # Debian's gRPC/Protobuf/Abseil are not instrumented: tests/tsan_absl_sync.cc (linked into these
  # tests) shows TSan gRPC's absl::Mutex locking; tests/tsan.supp silences what remains of gRPC's.
  # history_size=7: the most memory of past accesses (4M per thread, the default is 128K), so that
  # both stacks of a report, and so the frames tests/tsan.supp matches, are still there.
  ctest_env=(env "TSAN_OPTIONS=suppressions=$PWD/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=7"
             "${norandom[@]}")
  run_ctest build-tsan -L "^($(IFS='|'; echo "${tsan_tests[*]}"))\$" -E '^Store(Codec|Faults)?\.'
  phase "tsan tests"
fi
# libFuzzer over every reader (tests/fuzz/run.sh: build-fuzz/ with clang-16, only the fuzz
# targets and their libraries; its corpus replayed, then PHALANX_FUZZ_SECONDS (default 5 here) of
# fuzzing per target, 12 targets). PHALANX_FUZZ=0 leaves it out. Time: docs/fuzzing.md (measured
# here: 12 targets built cold in 166 s at -O1 with another build beside it, 81 s of running at 5 s).
if [ "${1:-}" != "--no-sanitize" ] && [ "${PHALANX_FUZZ:-1}" != 0 ]; then
  PHALANX_FUZZ_JOBS=$jobs tests/fuzz/run.sh "${PHALANX_FUZZ_SECONDS:-5}"
  phase "fuzz"
fi
rm -rf "$logs"
echo "all tests passed"
