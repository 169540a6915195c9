#!/usr/bin/env bash
# Replay speed of `phalanx sim`: seconds per policy per case (issue 17: < 30 s each on the
# development machine). Prints one row per case and policy: the median of REPS runs of the
# process's user CPU seconds (the machine is shared: wall time moves with other builds; user
# time much less) and of the wall seconds, and the number of scheduling passes. Not a test.
#
#   bench/sim_speed.sh [PHALANX_BINARY] [REPS]     (defaults: build/cli/phalanx, 3)
#   CASES='synth-x2|itp-x2' bench/sim_speed.sh     (a regular expression over the case names)
#   POLICIES='phalanx slurm-like' bench/sim_speed.sh
#   LIMIT=120 bench/sim_speed.sh    (wall seconds a run may take; a run stopped there prints
#                                    '>120' for its times and no passes; default: no limit)
#
# Cases: the shipped traces under load (Philly x3, x4, x6; ITP x2, x4) and the stand-in for
# issue 17's held-out trace: bench/synth_trace.py (seed 17: 11,000 jobs of 1-160 GPUs) at 2x
# on itp-1024. Traces from $TRACES (default /work/shared/traces).
set -euo pipefail
cd "$(dirname "$0")/.."
PHALANX=${1:-build/cli/phalanx}
REPS=${2:-3}
TRACES=${TRACES:-/work/shared/traces}
CASES=${CASES:-.}
POLICIES=${POLICIES:-phalanx slurm-like ideal-backfill fifo-firstfit}
LIMIT=${LIMIT:-0}
[ -x "$PHALANX" ] || { echo "sim_speed.sh: no $PHALANX (cmake --build build --target phalanx)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 bench/synth_trace.py --seed 17 >"$TMP/synth.csv" 2>/dev/null

case_args() {  # NAME -> topology, trace, options
  case $1 in
    philly-x3) echo "config/topologies/philly.yaml $TRACES/philly_pollux.csv --load-scale 3" ;;
    philly-x4) echo "config/topologies/philly.yaml $TRACES/philly_pollux.csv --load-scale 4" ;;
    philly-x6) echo "config/topologies/philly.yaml $TRACES/philly_pollux.csv --load-scale 6" ;;
    itp-x2) echo "config/topologies/itp-1024.yaml $TRACES/msitp_cluster04.csv --load-scale 2" ;;
    itp-x4) echo "config/topologies/itp-1024.yaml $TRACES/msitp_cluster04.csv --load-scale 4" ;;
    synth-x2) echo "config/topologies/itp-1024.yaml $TMP/synth.csv --load-scale 2" ;;
  esac
}

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

printf '%-10s %-15s %8s %8s %8s\n' case policy user_s wall_s passes
for name in philly-x3 philly-x4 philly-x6 itp-x2 itp-x4 synth-x2; do
  [[ $name =~ $CASES ]] || continue
  read -r topo trace rest <<<"$(case_args "$name")"
  for policy in $POLICIES; do
    : >"$TMP/user"
    : >"$TMP/wall"
    passes=
    for ((r = 0; r < REPS; r++)); do
      # shellcheck disable=SC2086  # $rest is a list of options
      if ! timeout "$LIMIT" /usr/bin/time -f '%U %e' -o "$TMP/time" "$PHALANX" sim --topology "$topo" \
        --trace "$trace" $rest --policy "$policy" --quiet >"$TMP/out"; then
        [ "$LIMIT" != 0 ] || exit 1
        printf '%-10s %-15s %8s %8s %8s\n' "$name" "$policy" ">$LIMIT" ">$LIMIT" "-"
        continue 2
      fi
      read -r u w <"$TMP/time"
      echo "$u" >>"$TMP/user"
      echo "$w" >>"$TMP/wall"
      passes=$(awk '/scheduling passes/ {print $3}' "$TMP/out")
    done
    printf '%-10s %-15s %8s %8s %8s\n' "$name" "$policy" "$(median <"$TMP/user")" "$(median <"$TMP/wall")" "$passes"
  done
done
