#!/usr/bin/env bash
# Soak run of the crash test (tests/crash/daemon_crash_test.cc, docs/performance.md "Crash
# safety"): DaemonCrash.KillNineWhileSubmittingWithAgentsRunningJobs ROUNDS times, each with a
# random kill schedule (PHALANX_CRASH_SEED), one line per round and a summary at the end. CI runs
# the fixed seed 1; this covers the schedules it does not. A failed round is reproduced with the
# seed it prints (PHALANX_CRASH_SEED=N; the interleaving is still the machine's).
# Builds nothing: build the test first (it depends on phalanxd and phalanx-agent):
#   cmake --build build --target daemon_crash_test
# Usage: bench/run_crash_soak.sh [ROUNDS] [BUILD_DIR]   (default 20 rounds, build)
# Environment: SEEDS (a list of seeds to run instead of random ones; ROUNDS is then their number),
# PHALANX_CRASH_JOBS (passed on: jobs per round, default 2000), PHALANX_CRASH_SPREAD_S (passed on:
# seconds the submissions are paced over, default 12), ROUND_TIMEOUT (seconds, default
# 900), SOAK_LOGS (where the output of failed rounds is kept, default a new /tmp/phalanx-crash-soak.*).
# Exit status: 0 when every round passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
build=${2:-build}
test_bin=$build/tests/crash/daemon_crash_test
[ -x "$test_bin" ] || { echo "run_crash_soak.sh: $test_bin is not built (see the header of this script)" >&2; exit 1; }
if [ -n "${SEEDS:-}" ]; then
  read -r -a seeds <<<"$SEEDS"
else
  seeds=()
  for ((i = 0; i < rounds; i++)); do seeds+=($(($(od -An -N4 -tu4 /dev/urandom) & 0xffffff))); done
fi
logs=${SOAK_LOGS:-$(mktemp -d /tmp/phalanx-crash-soak.XXXXXX)}
mkdir -p "$logs"
filter=DaemonCrash.KillNineWhileSubmittingWithAgentsRunningJobs

done_rounds=0 passed=0 failed=0 kills=0 acked_kills=0 acked=0 lost_daemon=0 lost_store=0 ran_failed=0 unparsed=0
double_daemon=0 double_procs=0 twice=0
failed_seeds=()
samples_file=$logs/restart-samples-ms
: >"$samples_file"
# quantile Q: the Q-quantile (0..1) of the restart samples, in ms.
quantile() {
  tr ' ' '\n' <"$samples_file" | grep . | sort -n | awk -v q="$1" '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit }
    i = int(q * NR); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}
summary() {
  echo "== summary: $done_rounds rounds, $passed passed, $failed failed${failed_seeds:+ (seeds: ${failed_seeds[*]})}"
  echo "   kills: $kills ($acked_kills of a daemon that had acknowledged submissions), acknowledged jobs: $acked"
  echo "   acknowledged jobs lost (must be 0): $lost_daemon in the daemon, $lost_store in the store"
  echo "   jobs that ended failed (must be 0): $ran_failed"
  echo "   double allocations (must be 0): $double_daemon in the daemon's allocations, $double_procs GPUs used by two jobs' processes, $twice jobs running twice"
  echo "   restart to serving (spawn to the first answered call, ms): $(tr ' ' '\n' <"$samples_file" | grep -c .) samples, median $(quantile 0.5), p99 $(quantile 0.99), max $(quantile 1)"
  [ "$unparsed" -eq 0 ] || echo "   rounds that ended before printing their figures: $unparsed"
  [ "$failed" -eq 0 ] || echo "   output of failed rounds: $logs"
}
trap 'echo "interrupted"; summary; exit 130' INT TERM

echo "== $test_bin, ${#seeds[@]} rounds, jobs per round: ${PHALANX_CRASH_JOBS:-2000}; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for seed in "${seeds[@]}"; do
  log=$logs/seed-$seed.log
  start=$SECONDS
  PHALANX_CRASH_SEED=$seed timeout "${ROUND_TIMEOUT:-900}" "$test_bin" --gtest_filter="$filter" >"$log" 2>&1
  rc=$?
  done_rounds=$((done_rounds + 1))
  # "kills: 37 (13 long lives, 9 of a daemon that had acknowledged submissions), acknowledged: 2000, ..."
  k=$(sed -n 's/^kills: \([0-9]*\) ([0-9]* long lives, \([0-9]*\) of a daemon.*acknowledged: \([0-9]*\),.*/\1 \2 \3/p' "$log")
  # "acknowledged jobs lost: 0 in the daemon, 0 in the store; jobs that ended failed: 1"
  l=$(sed -n 's/^acknowledged jobs lost: \([0-9]*\) in the daemon, \([0-9]*\) in the store; jobs that ended failed: \([0-9]*\)$/\1 \2 \3/p' "$log")
  d=$(sed -n "s/^double allocations: \([0-9]*\) in the daemon's allocations, \([0-9]*\) GPUs used by two jobs' processes, \([0-9]*\) jobs running twice$/\1 \2 \3/p" "$log")
  if [ -n "$d" ]; then
    read -r dd dp dt <<<"$d"
    double_daemon=$((double_daemon + dd)) double_procs=$((double_procs + dp)) twice=$((twice + dt))
  fi
  sed -n 's/^restart samples (ms): //p' "$log" >>"$samples_file"
  if [ -n "$k" ] && [ -n "$l" ]; then
    read -r rk rak ra <<<"$k"
    read -r rld rls rrf <<<"$l"
    kills=$((kills + rk)) acked_kills=$((acked_kills + rak)) acked=$((acked + ra))
    lost_daemon=$((lost_daemon + rld)) lost_store=$((lost_store + rls)) ran_failed=$((ran_failed + rrf))
    figures="kills $rk ($rak acked), acknowledged $ra, lost $rld/$rls, failed $rrf"
  else
    unparsed=$((unparsed + 1))
    figures="no figures printed"
  fi
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    rm -f "$log"
    verdict=ok
  else
    failed=$((failed + 1))
    failed_seeds+=("$seed")
    verdict="FAILED (rc $rc, $log)"
  fi
  printf '[%d/%d] seed %-9s %3d s  %s  %s\n' "$done_rounds" "${#seeds[@]}" "$seed" $((SECONDS - start)) "$figures" "$verdict"
  if [ "$rc" -ne 0 ]; then
    grep -A4 ': Failure$' "$log" | grep -v -e ': Failure$' -e '^--$' | head -10 | sed 's/^/      /'
  fi
done
summary
[ "$failed" -eq 0 ]
