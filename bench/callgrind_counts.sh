#!/usr/bin/env bash
# Instruction counts (valgrind's callgrind: deterministic, unlike wall clock on a shared machine)
# of the placer and of the scheduling pass, for before/after tables in docs/performance.md.
# Usage: bench/callgrind_counts.sh BUILD_DIR [PLACER_CALLS] [PASS_N[,PASS_N...]]
# BUILD_DIR holds a Release build with -DPHALANX_BUILD_BENCH=ON (bench/placer_latency and
# bench/sched_bench built). Prints one Markdown row per measurement: instructions executed inside
# Placer::Place (placer_latency --calls=PLACER_CALLS --seed=42: 12 cases, including the Place calls
# that refill the cluster between timed calls) and inside Scheduler::Schedule (sched_bench
# --reps=1 --n=PASS_N --seed=42, one run per N: the filling passes and the timed one), callees
# included. Under callgrind each run is ~50x slower than natively (about a minute each).
set -euo pipefail
build=$1
calls=${2:-100}
n=${3:-1000}
command -v valgrind >/dev/null || { echo "callgrind_counts: valgrind is not installed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# count OUT_FILE: the instructions collected (the toggled function and what it calls).
count() { sed -n 's/^summary: *//p' "$1"; }

valgrind --tool=callgrind --callgrind-out-file="$tmp/placer.out" --toggle-collect='phalanx::Placer::Place(*' \
  "$build/bench/placer_latency" --calls="$calls" --seed=42 >"$tmp/placer.txt" 2>"$tmp/placer.err" ||
  { cat "$tmp/placer.err"; exit 1; }
echo "| Placer::Place, placer_latency --calls=$calls --seed=42 | $(count "$tmp/placer.out") |"

for one in ${n//,/ }; do
  valgrind --tool=callgrind --callgrind-out-file="$tmp/pass.out" --toggle-collect='phalanx::Scheduler::Schedule(*' \
    "$build/bench/sched_bench" --reps=1 --n="$one" --seed=42 >"$tmp/pass.txt" 2>"$tmp/pass.err" ||
    { cat "$tmp/pass.err"; exit 1; }
  echo "| Scheduler::Schedule, sched_bench --reps=1 --n=$one --seed=42 | $(count "$tmp/pass.out") |"
done
