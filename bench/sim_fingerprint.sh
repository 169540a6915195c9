#!/usr/bin/env bash
# Writes the per-job CSVs (start, end, wait, state, ... per policy and job) of every policy on
# both shipped traces, native and under load with locality and class rules, plus one decision
# log, so a refactoring can be shown to leave scheduling byte-identical:
#
#   bench/sim_fingerprint.sh PHALANX_BINARY OUT_DIR     (traces from $TRACES, default /work/shared/traces)
#   diff -r BEFORE_DIR AFTER_DIR && echo identical
#
# Minutes of CPU (fifo-firstfit is slow on Philly x3); not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
PHALANX=$1
OUT=$2
TRACES=${TRACES:-/work/shared/traces}
mkdir -p "$OUT"
PHILLY=$TRACES/philly_pollux.csv
ITP=$TRACES/msitp_cluster04.csv
LOCALITY=(--class-rule "gpus<=8:level=node" --class-rule "gpus>=9:level=leaf,gpn=8")
CLASSES=(--class-rule "gpus>=32:class=high" --class-rule "all:ckpt=3600" --class-rule "gpus>=2,share=0.3:elastic=0.5"
         --walltime random:3 --restart-overhead 120)
only=${ONLY:-}  # a regular expression: run only the matching runs
run() {  # NAME TOPOLOGY TRACE [sim options...]
  local name=$1 topo=$2 trace=$3
  shift 3
  [[ -z $only || $name =~ $only ]] || return 0
  local start=$SECONDS
  "$PHALANX" sim --topology "$topo" --trace "$trace" --quiet "$@" --jobs-csv "$OUT/$name.jobs.csv" >"$OUT/$name.table.txt"
  # Run times differ between runs; everything else must not.
  sed -i -E '/replay|run time|wall/Id' "$OUT/$name.table.txt"
  echo "$name: $((SECONDS - start)) s" >&2
}
run philly        config/topologies/philly.yaml   "$PHILLY"
run philly-x3-cls config/topologies/philly.yaml   "$PHILLY" --load-scale 3 "${LOCALITY[@]}" "${CLASSES[@]}"
run itp           config/topologies/itp-1024.yaml "$ITP"
run itp-x2-loc    config/topologies/itp-1024.yaml "$ITP" --load-scale 2 "${LOCALITY[@]}"
run itp-x2-cons   config/topologies/itp-1024.yaml "$ITP" --window 0:1000000 --load-scale 2 \
  --policy phalanx:backfill=conservative --policy slurm-like --node-mtbf 2000000 "${CLASSES[@]}"
# One decision log with preemptions, resizes, conservative backfill and node failures.
run decisions     config/topologies/itp-1024.yaml "$ITP" --window 0:500000 --load-scale 2 --policy phalanx:backfill=conservative \
  --node-mtbf 500000 "${CLASSES[@]}" --decisions "$OUT/decisions.log"
