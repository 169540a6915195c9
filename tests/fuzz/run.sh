#!/usr/bin/env bash
# usage: tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
# Builds the libFuzzer targets (build-fuzz/: -DPHALANX_FUZZ=ON with clang-16, only the targets
# and the libraries they need) and runs each for SECONDS_PER_TARGET (default 10; PHALANX_FUZZ_SECONDS
# also sets it): first over its committed corpus tests/fuzz/corpus/<target>/ (every seed and past
# crash, once), then coverage-guided from that corpus into a scratch copy (the committed corpus
# is not changed). Fails on any crash, leak, timeout (-timeout=10 s per input) or memory use over
# -rss_limit_mb=2048, naming the target and the saved input. TARGETS defaults to all of them.
# Budget with the default: 12 targets x 10 s = 2 min of fuzzing, plus the build (docs/fuzzing.md).
# Environment: PHALANX_FUZZ_BUILD (default build-fuzz), PHALANX_FUZZ_JOBS (default 2),
# PHALANX_FUZZ_OUT (where crashes and logs go; default a temporary directory, kept on failure).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-${PHALANX_FUZZ_SECONDS:-10}}
[ $# -gt 0 ] && shift
build=${PHALANX_FUZZ_BUILD:-$root/build-fuzz}
jobs=${PHALANX_FUZZ_JOBS:-2}
all=(slurm_topology gres nvsmi hwloc yaml generator trace hostlist duration directives store_codec http_request)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

for tool in clang++-16 clang-16; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found (config/install-deps.sh installs clang-16 and libclang-rt-16-dev)"; exit 1; }
done

start=$(date +%s)
launcher=()
# Ninja for a new build directory (an existing one keeps its generator): see tests/run.sh.
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then launcher=(-G Ninja); fi
command -v ccache >/dev/null && launcher+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# -O1 with line tables only: what libFuzzer's docs suggest, and about half the compile time of
# RelWithDebInfo's -O2 -g (this build runs in CI on a cold 2-core machine; stacks keep file:line).
cmake -S "$root" -B "$build" -DPHALANX_FUZZ=ON -DCMAKE_BUILD_TYPE=Fuzz \
  -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_FUZZ="-O1 -gline-tables-only" \
  -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]/#/fuzz_}"
built=$(date +%s)
echo "fuzz: built ${#targets[@]} targets in $((built - start)) s"

out=${PHALANX_FUZZ_OUT:-$(mktemp -d)}
mkdir -p "$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/fuzz_$t
  corpus=$here/corpus/$t
  dict=()
  case $t in
    slurm_topology | gres) dict=(-dict="$here/dict/slurm.dict") ;;
    yaml) dict=(-dict="$here/dict/yaml.dict") ;;
    hwloc) dict=(-dict="$here/dict/hwloc.dict") ;;
    http_request) dict=(-dict="$here/dict/http.dict") ;;
    directives) dict=(-dict="$here/dict/directives.dict") ;;
  esac
  mkdir -p "$out/$t/corpus" "$out/$t/crashes"
  cp "$corpus"/* "$out/$t/corpus/"
  common=(-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$out/$t/crashes/")
  # The committed corpus, every input once (regressions of fixed crashes live there).
  if ! "$bin" "${common[@]}" -runs=0 "$corpus" >"$out/$t/replay.log" 2>&1; then
    echo "fuzz: $t FAILED replaying its corpus (log: $out/$t/replay.log)"
    tail -30 "$out/$t/replay.log"
    failed+=("$t")
    continue
  fi
  if "$bin" "${common[@]}" "${dict[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    "$out/$t/corpus" >"$out/$t/fuzz.log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t/fuzz.log")
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$out/$t/fuzz.log" | tail -1)
    echo "fuzz: $t ok: ${execs:-?} runs in ${seconds} s, ${cov:-no coverage line}, corpus $(ls "$out/$t/corpus" | wc -l)"
  else
    echo "fuzz: $t FAILED (log: $out/$t/fuzz.log; input: $(ls "$out/$t/crashes" | head -1))"
    grep -A25 -m1 -E '==ERROR|runtime error|fuzz invariant|ALARM|out-of-memory|deadly signal' "$out/$t/fuzz.log" || tail -30 "$out/$t/fuzz.log"
    failed+=("$t")
  fi
done
echo "fuzz: ${#targets[@]} targets, $(( $(date +%s) - built )) s of running, $(( $(date +%s) - start )) s in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (crashing inputs under $out/*/crashes: add each to tests/fuzz/corpus/<target>/ once fixed)"
  exit 1
fi
[ -n "${PHALANX_FUZZ_OUT:-}" ] || rm -rf "$out"
