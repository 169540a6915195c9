#!/usr/bin/env bash
# shellcheck disable=SC2016 # job scripts are single-quoted: their variables expand in the job
# Speed of phalanxd's Slurm mode on the one-machine lab (config/slurm/demo-slurm.sh: munged,
# slurmctld, 4 slurmd x 8 fake GPUs, two leaves, job_submit.lua's HOLD, phalanxd in Slurm mode).
#   bench/slurm_mode_bench.sh [BUILD_DIR]          (as root; Slurm packages installed)
# Knobs: BENCH_JOBS (1000 held managed jobs), BENCH_WINDOW (seconds measured after the last
# submission, 90), BENCH_SLEEP_MAX (each job sleeps 1..this many seconds, 4), BENCH_PORT (18017),
# BENCH_RUNS (1), BENCH_PARTS ("backlog trace"), BENCH_SLURM_ALONE=1 (the backlog without
# phalanxd, HOLD or --phx: Slurm's own figures), BENCH_TRACE, BENCH_TRACE_FROM (contention: the rule of part 2; or a line),
# BENCH_TRACE_JOBS, BENCH_TRACE_MAX_LOAD, BENCH_TRACE_RUNS, BENCH_TRACE_MODES ("slurm phalanx"; also
# phalanx-fifo), BENCH_TRACE_RESULTS (part 2). Not a test: it prints a table, nothing goes into CTest.
# What it measures (docs/slurm.md, "Measured on the lab"):
#  - submission of BENCH_JOBS managed jobs (sbatch --phx-topology=node, 1..8 GPUs) into the lab,
#    most of them held behind the first 32 GPUs' worth;
#  - how many held jobs per second phalanxd releases while the backlog lasts (releases counted
#    in phalanxd's log), and how busy the 32 GPUs are meanwhile (sampled from squeue each second);
#  - submission-to-start latency (Slurm's SubmitTime/StartTime, 1 s resolution) of the jobs that
#    started: median, p90, max, and the same for the first 32 GPUs' worth (no queueing: the
#    placement path alone);
#  - CPU seconds phalanxd and slurmctld used, and whether Slurm ran any managed job itself
#    (a lease that ran out).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "needs root (slurmd, munged)" >&2; exit 77; }
for b in slurmctld slurmd sbatch squeue munged; do
  command -v "$b" >/dev/null || { echo "$b is not installed (config/install-deps.sh)" >&2; exit 77; }
done
if [[ " ${BENCH_PARTS:-backlog trace} " == *" backlog "* || " ${BENCH_TRACE_MODES:-slurm phalanx} " == *" phalanx "* ]]; then
  [[ -x "$build/scheduler/service/phalanxd" ]] || { echo "no phalanxd in $build" >&2; exit 1; }
fi

jobs_n=${BENCH_JOBS:-1000}
window=${BENCH_WINDOW:-90}
sleep_max=${BENCH_SLEEP_MAX:-4}
runs=${BENCH_RUNS:-1}
lab=$(mktemp -d /tmp/phalanx-slurm-bench.XXXXXX)
alone=${BENCH_SLURM_ALONE:-0} # 1: the backlog part without phalanxd (HOLD off, no --phx): Slurm's own figures
export PHALANX_SLURM_DEMO_DIR=$lab PHALANX_SLURM_DEMO_JOBS=0 PHALANX_SLURM_PHALANXD=1 PHALANX_SLURM_HOLD=1
export PHALANX_SLURM_MIN_RUNTIME=0 PHALANX_SLURM_CRED_EXPIRE=5
export PHALANX_SLURM_PORT_BASE=${BENCH_PORT:-18017}
stop_lab() { "$src/config/slurm/demo-slurm.sh" stop >/dev/null 2>&1; }
cleanup() {
  trap - EXIT INT TERM
  stop_lab
  echo "lab logs kept in $lab/log"
}
trap cleanup EXIT
trap 'echo interrupted; exit 1' INT TERM

cpu_s() { # utime+stime of a pid, seconds
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0
}
stats() { # median p90 max of numbers on stdin
  sort -n | awk '{a[NR] = $1} END {if (NR == 0) {print "- - -"; exit}
    m = a[int((NR + 1) / 2)]; p = a[int(NR * 0.9 + 0.999)]; if (p == "") p = a[NR]
    printf "%.2f %.2f %.2f\n", m, p, a[NR]}'
}
median() { sort -n | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }

one_run() {
  local r=$1 phx=--phx-topology=node
  if [[ "$alone" == 1 ]]; then
    export PHALANX_SLURM_PHALANXD=0 PHALANX_SLURM_HOLD=0
    phx=
  else
    export PHALANX_SLURM_PHALANXD=1 PHALANX_SLURM_HOLD=1
  fi
  timeout 120 "$src/config/slurm/demo-slurm.sh" "$build" >"$lab/start.log" 2>&1 || {
    cat "$lab/start.log"
    return 1
  }
  export SLURM_CONF=$lab/etc/slurm.conf
  local log=$lab/log/phalanxd.log
  local pd ctld
  pd=$(cat "$lab/run/phalanxd.pid" 2>/dev/null || echo 0)
  ctld=$(cat "$lab/run/slurmctld.pid")
  local pd0 ctld0
  pd0=$(cpu_s "$pd")
  ctld0=$(cpu_s "$ctld")
  local clean=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "SLURM_CONF=$SLURM_CONF")
  # Submit: GPUs 1..8 and sleeps 1..sleep_max from a fixed seed, so every run sees the same jobs.
  RANDOM=11
  local t_sub0 t_sub1 i g s
  t_sub0=$(date +%s.%N)
  for ((i = 0; i < jobs_n; i++)); do
    g=$((RANDOM % 8 + 1))
    s=$((RANDOM % sleep_max + 1))
    "${clean[@]}" sbatch --parsable -J "b$i" -o /dev/null -N1 --gres=gpu:$g -t 2 \
      $phx --wrap "sleep $s" >>"$lab/ids" 2>>"$lab/sbatch.err" || true
  done
  t_sub1=$(date +%s.%N)
  local submitted
  submitted=$(wc -l <"$lab/ids")
  # Sample: releases so far (phalanxd's log) and GPUs in use (squeue) once a second.
  local end=$((SECONDS + window)) rel busy
  : >"$lab/samples"
  while ((SECONDS < end)); do
    rel=$(grep -c ") released on" "$log" 2>/dev/null); rel=${rel:-0}
    busy=$(timeout 5 squeue -h -t R -o '%b' 2>/dev/null | grep -o '[0-9]*$' | awk '{s += $1} END {print s + 0}')
    started=$(grep -c "Started JobId=\|sched: Allocate JobId=" "$lab/log/slurmctld.log")
    echo "$(date +%s.%N) $rel $busy $started" >>"$lab/samples"
    [[ $(timeout 5 squeue -h -t PD 2>/dev/null | wc -l) == 0 ]] && break
    sleep 1
  done
  local pd1 ctld1
  pd1=$(cpu_s "$pd")
  ctld1=$(cpu_s "$ctld")
  local first_s last_s rel_total elapsed rate rel_at_sub busy_mean
  local st_at_sub st_total st_rate
  read -r first_s rel_at_sub _ st_at_sub < <(head -n 1 "$lab/samples")
  read -r last_s rel_total _ st_total < <(tail -n 1 "$lab/samples")
  st_rate=$(awk -v n=$((st_total - st_at_sub)) -v a="$first_s" -v b="$last_s" 'BEGIN {printf "%.2f", (b > a) ? n / (b - a) : 0}')
  elapsed=$(awk -v a="$t_sub0" -v b="$last_s" 'BEGIN {print b - a}')
  # Release rate while the backlog is held: from the end of the submissions to the last sample.
  rate=$(awk -v n=$((rel_total - rel_at_sub)) -v a="$first_s" -v b="$last_s" 'BEGIN {printf "%.2f", (b > a) ? n / (b - a) : 0}')
  busy_mean=$(awk '{s += $3; n++} END {printf "%.1f", n ? s / n : 0}' "$lab/samples")
  # Events with ms timestamps (seconds of the day; both logs are in this machine's time zone):
  # S submitted (slurmctld), R released (phalanxd), B started by Slurm, C completed (slurmctld).
  {
    sed -n 's/^\[[0-9-]*T\([0-9:.]*\)\] _slurm_rpc_submit_batch_job: JobId=\([0-9]*\) .*/\1 S \2/p' "$lab/log/slurmctld.log"
    sed -n 's/^\[[0-9-]*T\([0-9:.]*\)\] .*Started JobId=\([0-9]*\) .*/\1 B \2/p; s/^\[[0-9-]*T\([0-9:.]*\)\] sched: Allocate JobId=\([0-9]*\) .*/\1 B \2/p' "$lab/log/slurmctld.log"
    sed -n 's/^\[[0-9-]*T\([0-9:.]*\)\] _job_complete: JobId=\([0-9]*\) done/\1 C \2/p' "$lab/log/slurmctld.log"
    sed -n 's/^[0-9-]*T\([0-9:.]*\)Z .*(Slurm \([0-9]*\)) released on.*/\1 R \2/p' "$log" 2>/dev/null
  } | awk '{split($1, t, ":"); printf "%.3f %s %s\n", t[1] * 3600 + t[2] * 60 + t[3], $2, $3}' | sort -n -k1,1 >"$lab/events"
  # submit->release, release->start per job; reaction: a release's delay after the latest
  # completion before it (the poll's lag plus the core's decision), for releases that waited.
  : >"$lab/sr"; : >"$lab/rb"; : >"$lab/react"; : >"$lab/sb"
  awk -v d="$lab" '$2 == "S" {s[$3] = $1} $2 == "C" {c = $1}
    $2 == "R" {if ($3 in s) print $1 - s[$3] > d "/sr"; r[$3] = $1; if (c > 0 && c > s[$3]) print $1 - c > d "/react"}
    $2 == "B" && ($3 in r) {print $1 - r[$3] > d "/rb"}
    $2 == "B" && ($3 in s) {print $1 - s[$3] > d "/sb"}' "$lab/events"
  local lat rb react
  lat=$(stats <"$lab/sr")
  rb=$(stats <"$lab/rb")
  react=$(stats <"$lab/react")
  local sb
  sb=$(stats <"$lab/sb")
  local itself
  itself=$(grep -c "started it itself" "$log" 2>/dev/null); itself=${itself:-0}
  local sub_rate
  sub_rate=$(awk -v n="$submitted" -v a="$t_sub0" -v b="$t_sub1" 'BEGIN {printf "%.1f", n / (b - a)}')
  echo "$r $submitted $sub_rate $rel_total $rate $busy_mean $lat $rb $react $itself $(awk -v a="$pd0" -v b="$pd1" 'BEGIN {printf "%.1f", b - a}') $(awk -v a="$ctld0" -v b="$ctld1" 'BEGIN {printf "%.1f", b - a}') $(printf %.0f "$elapsed") $st_total $st_rate $sb" >>"$lab/results"
  timeout 30 scancel -u root 2>/dev/null
  stop_lab
  rm -f "$lab/ids"
}


# --- part 2: short trace slices through Slurm alone and through Slurm + Phalanx ------------------
# BENCH_TRACE: one trace or several, blank-separated (default: philly_pollux.csv and
# msitp_cluster04.csv of the workspace's shared/traces). Each trace is mapped the same way: GPUs
# capped at 16 (a job over 8 GPUs takes 2 nodes: -N2 --gres=gpu:ceil(G/2)); gaps between
# submissions / 150 (at most 3 s); durations to 3*log2(d/30) s, 3..45 s.
# The slice (BENCH_TRACE_FROM=contention, the default; or a file line number, e.g. 75120): the
# trace cut into blocks of BENCH_TRACE_JOBS (50) consecutive jobs from its first row; a 2-node
# job is *contended* when, at its (mapped) submission, at least 2 long 1-node jobs (<= 8 GPUs,
# mapped duration >= 30 s) of its block submitted before it would still run if each had started
# at once (so that one node of each leaf may be held); the slice is the block with the most
# contended 2-node jobs (ties: the earliest) among those whose offered load -- the block's
# GPU-seconds / (32 GPUs x (its submission span + 45 s)) -- is at most BENCH_TRACE_MAX_LOAD (2),
# so that the 4-node lab drains it in minutes. Nothing in the rule looks at how Slurm or Phalanx
# place the jobs.
# Each slice runs BENCH_TRACE_RUNS times (3) in each configuration of BENCH_TRACE_MODES
# ("slurm phalanx"), alternating: Slurm alone (no phalanxd, HOLD off, no --phx options), then
# Slurm + Phalanx (phalanxd, HOLD on, --phx-topology=leaf for 2-node jobs, node for the others);
# phalanx-fifo: the same with the core's queue in submission order (scheduler.order: fifo).
# BENCH_TRACE_RESULTS: the per-run figures' file (appended to), so that the table can also come
# from several invocations.
trace_files=${BENCH_TRACE:-}
if [[ -z "$trace_files" ]]; then
  for t in philly_pollux.csv msitp_cluster04.csv; do
    f=$src/../shared/traces/$t
    [[ -r "$f" ]] || f=/work/shared/traces/$t
    trace_files+=" $f"
  done
fi
trace_pick=${BENCH_TRACE_FROM:-contention}
trace_n=${BENCH_TRACE_JOBS:-50}
trace_max_load=${BENCH_TRACE_MAX_LOAD:-2}
trace_runs=${BENCH_TRACE_RUNS:-3}
trace_modes=${BENCH_TRACE_MODES:-slurm phalanx}
# Per-run figures; a given file is appended to (runs of several invocations, e.g. one mode each,
# go into one table).
trace_results=${BENCH_TRACE_RESULTS:-$lab/trace_results}
# The rule above: prints "first_line contended two_node span_s load" of the chosen block.
trace_slice() { # $1: trace file
  awk -F, -v B="$trace_n" -v maxload="$trace_max_load" '
    NR == 1 { next }
    { k = NR - 2; b = int(k / B); i = k % B
      if (i == 0) t = 0; else { gap = ($2 - prev) / 150; if (gap > 3) gap = 3; t += gap }
      prev = $2
      g = ($3 > 16) ? 16 : $3; d = int(3 * log($4 / 30) / log(2) + 0.5); if (d < 3) d = 3; if (d > 45) d = 45
      T[b, i] = t; G[b, i] = g; D[b, i] = d; nb = b + 1; last = i }
    END { best = -1
      for (b = 0; b < nb; b++) {
        if (b == nb - 1 && last < B - 1) break
        big = 0; score = 0; gs = 0
        for (i = 0; i < B; i++) {
          gs += G[b, i] * D[b, i]
          if (G[b, i] <= 8) continue
          big++; live = 0
          for (j = 0; j < i; j++) if (G[b, j] <= 8 && D[b, j] >= 30 && T[b, j] + D[b, j] > T[b, i]) live++
          if (live >= 2) score++
        }
        load = gs / 32 / (T[b, B - 1] + 45)
        if (load <= maxload && score > best) { best = score; bb = b; bbig = big; bspan = T[b, B - 1]; bload = load }
      }
      if (best < 0) exit 1
      printf "%d %d %d %.0f %.2f\n", bb * B + 2, best, bbig, bspan, bload }' "$1"
}
trace_run() { # $1: slurm | phalanx | phalanx-fifo, $2: trace, $3: first line; "id gpus nodes submit start end state" per job to $lab/trace.$1
  local mode=$1 trace_file=$2 trace_from=$3
  if [[ "$mode" == phalanx* ]]; then
    export PHALANX_SLURM_PHALANXD=1 PHALANX_SLURM_HOLD=1
  else
    export PHALANX_SLURM_PHALANXD=0 PHALANX_SLURM_HOLD=0
  fi
  # phalanx-fifo: the core's queue in submission order (scheduler.order: fifo), as Slurm's
  # priority/basic orders it; phalanx: its default multifactor priority (bigger jobs first).
  if [[ "$mode" == phalanx-fifo ]]; then export PHALANX_SLURM_ORDER=fifo; else unset PHALANX_SLURM_ORDER; fi
  timeout 120 "$src/config/slurm/demo-slurm.sh" "$build" >"$lab/start.log" 2>&1 || { cat "$lab/start.log"; return 1; }
  export SLURM_CONF=$lab/etc/slurm.conf
  local clean=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "SLURM_CONF=$SLURM_CONF")
  : >"$lab/tids"
  local gap g d n per phx
  while read -r gap g d; do
    sleep "$gap"
    if ((g > 8)); then n=2; per=$(((g + 1) / 2)); phx=--phx-topology=leaf; else n=1; per=$g; phx=--phx-topology=node; fi
    [[ "$mode" == phalanx* ]] || phx=
    "${clean[@]}" sbatch --parsable -o /dev/null -J "t$g" -N$n --gres=gpu:$per -t 2 $phx --wrap "sleep $d" >>"$lab/tids" 2>>"$lab/sbatch.err"
  done < <(awk -F, -v a="$trace_from" -v n="$trace_n" 'NR >= a && NR < a + n {
      gap = (NR == a) ? 0 : ($2 - prev) / 150; if (gap > 3) gap = 3; prev = $2
      g = ($3 > 16) ? 16 : $3; d = int(3 * log($4 / 30) / log(2) + 0.5); if (d < 3) d = 3; if (d > 45) d = 45
      printf "%.2f %d %d\n", gap, g, d }' "$trace_file")
  local end=$((SECONDS + 900))
  while ((SECONDS < end)) && [[ -n "$(timeout 5 squeue -h -t PD,R,CG -o %i 2>/dev/null)" ]]; do sleep 1; done
  timeout 30 scontrol -o show job 2>/dev/null | awk '{for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = substr($i, length(kv[1]) + 2) }
      print v["JobId"], v["JobName"], v["NodeList"], v["SubmitTime"], v["StartTime"], v["EndTime"], v["JobState"] }' |
    while read -r id name nodes sub st en state; do
      echo "$id ${name#t} $nodes $(date -d "$sub" +%s) $(date -d "$st" +%s) $(date -d "$en" +%s) $state"
    done >"$lab/trace.$mode"
  itself=$(grep -c "started it itself" "$lab/log/phalanxd.log" 2>/dev/null); itself=${itself:-0}
  timeout 30 scancel -u root 2>/dev/null
  stop_lab
}
# $1: mode -> "jobs two_node split wait_mean wait_median makespan not_completed wait_mean_2node wait_mean_1node"
# A 2-node job (9-16 GPUs: -N2, at most 8 per node) always fits one leaf (2 x 8 GPUs): every
# 2-node job on a node of each leaf is split where it could have fitted.
trace_figures() {
  awk '{ multi = ($3 ~ /,/ || $3 ~ /-/) ? 1 : 0; n++
      if (multi) { m++; s += !($3 == "n[1-2]" || $3 == "n[3-4]") }
      w = $5 - $4; ws += w; wait[n] = w; if (multi) w2 += w; else w1 += w
      if (!f || $4 < f) f = $4; if ($6 > l) l = $6; if ($7 != "COMPLETED") bad++ }
    END { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (wait[j] < wait[i]) { t = wait[i]; wait[i] = wait[j]; wait[j] = t }
      printf "%d %d %d %.1f %d %d %d %.1f %.1f\n", n, m, s, ws / n, wait[int((n + 1) / 2)], l - f, bad + 0,
        m ? w2 / m : 0, (n - m) ? w1 / (n - m) : 0 }' "$lab/trace.$1"
}
# One slice: every run's figures to $lab/trace_results as "slice mode run <trace_figures> itself".
trace_slice_runs() { # $1: trace, $2: first line, $3: label
  local r mode
  for ((r = 1; r <= trace_runs; r++)); do
    for mode in $trace_modes; do
      echo "  $3: run $r/$trace_runs, $mode" >&2
      itself=0
      trace_run "$mode" "$1" "$2" || return 1
      cp "$lab/trace.$mode" "$lab/trace.$3.$mode.$r"
      echo "$3 $mode $r $(trace_figures "$mode") $itself" >>"$trace_results"
    done
  done
}
# The table of one slice: per figure, each configuration's median and range over the runs.
trace_table() { # $1: label
  awk -v label="$1" '$1 == label { for (f = 4; f <= NF; f++) v[$2, f, ++c[$2, f]] = $f }
    function med(mode, f,   n, i, j, a, t) { n = c[mode, f]; if (n == 0) return "-"; for (i = 1; i <= n; i++) a[i] = v[mode, f, i]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n == 1 ? a[1] : sprintf("%s (%s-%s)", a[int((n + 1) / 2)], a[1], a[n]) }
    END { name[4] = "jobs run"; name[5] = "2-node jobs (9-16 GPUs)"; name[6] = "  of them split across the leaves"
      name[7] = "mean wait s"; name[8] = "median wait s"; name[9] = "makespan s (first submit to last end)"
      name[10] = "jobs not COMPLETED"; name[11] = "mean wait s, 2-node jobs"; name[12] = "mean wait s, 1-node jobs"
      name[13] = "managed jobs Slurm ran itself"
      printf "\n%-40s %22s %22s %22s\n", label " (median (min-max))", "Slurm alone", "Slurm + Phalanx", "+ Phalanx, order fifo"
      for (f = 4; f <= 13; f++) printf "%-40s %22s %22s %22s\n", name[f], med("slurm", f), med("phalanx", f), med("phalanx-fifo", f) }' "$trace_results"
}

parts=${BENCH_PARTS:-backlog trace}
if [[ " $parts " == *" backlog "* ]]; then
: >"$lab/results"
for ((r = 1; r <= runs; r++)); do
  echo "run $r/$runs: $jobs_n jobs ($([[ $alone == 1 ]] && echo "Slurm alone" || echo "managed, Slurm + Phalanx")), window $window s ($(nproc) cores)" >&2
  one_run "$r" || exit 1
done
# One row per figure, one column per run, and the median of the runs.
awk -v runs="$runs" -v jobs="$jobs_n" '
  function med(row,   n, i, j, v, t) { n = 0; for (i = 1; i <= runs; i++) v[++n] = val[row, i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return v[int((n + 1) / 2)] }
  { for (f = 2; f <= NF; f++) val[f, NR] = $f }
  END {
    name[2] = "managed jobs submitted"; name[3] = "sbatch submissions per second"
    name[4] = "jobs released by phalanxd"; name[5] = "held jobs released per second"
    name[6] = "GPUs busy (mean of 1 s samples, of 32)"
    name[7] = "submit -> release, median s"; name[8] = "submit -> release, p90 s"; name[9] = "submit -> release, max s"
    name[10] = "release -> Slurm start, median s"; name[11] = "release -> Slurm start, p90 s"; name[12] = "release -> Slurm start, max s"
    name[13] = "job end -> next release, median s"; name[14] = "job end -> next release, p90 s"; name[15] = "job end -> next release, max s"
    name[16] = "managed jobs Slurm ran itself (lease out)"
    name[17] = "phalanxd CPU s"; name[18] = "slurmctld CPU s"; name[19] = "measured s (first sbatch to last sample)"
    name[20] = "jobs started by Slurm"; name[21] = "jobs started per second (after the sbatches)"
    name[22] = "submit -> Slurm start, median s"; name[23] = "submit -> Slurm start, p90 s"; name[24] = "submit -> Slurm start, max s"
    printf "%-44s", "figure"; for (i = 1; i <= runs; i++) printf " %9s", "run " i; if (runs > 1) printf " %9s", "median"; print ""
    for (f = 2; f <= 24; f++) { printf "%-44s", name[f]; for (i = 1; i <= runs; i++) printf " %9s", val[f, i]
      if (runs > 1) printf " %9s", med(f); print "" }
  }' "$lab/results"
fi
if [[ " $parts " == *" trace "* ]]; then
  [[ -n "${BENCH_TRACE_RESULTS:-}" ]] || : >"$trace_results"
  labels=()
  for tf in $trace_files; do
    if [[ "$trace_pick" == contention ]]; then
      read -r from score big span load < <(trace_slice "$tf") || { echo "no block of $tf qualifies" >&2; exit 1; }
      echo "trace $(basename "$tf"): lines $from..$((from + trace_n - 1)) ($big 2-node jobs, $score contended; submissions over $span s; offered load $load)" >&2
    else
      from=$trace_pick
      echo "trace $(basename "$tf"): lines $from..$((from + trace_n - 1))" >&2
    fi
    label="$(basename "$tf" .csv):$from"
    labels+=("$label")
    trace_slice_runs "$tf" "$from" "$label" || exit 1
  done
  for label in "${labels[@]}"; do trace_table "$label"; done
  echo "per-run figures: $trace_results (slice mode run jobs two_node split wait_mean wait_median makespan not_completed wait_2node wait_1node itself)"
fi
