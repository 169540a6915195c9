#!/usr/bin/env bash
# `slurm-like` checked against the real Slurm 22.05 (issue 17): a seeded workload of ~50 jobs
# (1-16 GPUs, 20-120 s, walltime requests rounded up to minutes) runs on a fresh one-machine lab
# (config/slurm/demo-slurm.sh: 4 nodes x 8 fake GPUs, two leaves; Slurm alone, no phalanxd, no
# job_submit HOLD), its jobs are written as sacct --parsable2 rows and replayed with
#   phalanx sim --topology config/topologies/demo.yaml --walltime trace --comm-share 0
# under each policy of BENCH_POLICIES. Prints, per seed, one row per job (id, GPUs, submit, wait on
# Slurm, wait modelled, difference, and who started the job in Slurm: the submit RPC, the main
# scheduler or backfill, read from slurmctld's log) and a summary (avg/median/p90 wait, jobs within
# 5 s of Slurm, worst gaps). Not a test (minutes of wall time): nothing goes into CTest.
#
#   bench/slurm_vs_sim.sh [BUILD_DIR]        (as root; Slurm packages installed; BUILD_DIR has
#                                             cli/phalanx and plugins/spank/phalanx_spank.so)
# Knobs: BENCH_SEEDS ("1 2 3"; one lab per seed, run side by side on their own ports),
# BENCH_JOBS (50), BENCH_GAP (mean seconds between submissions, exponential; 6),
# BENCH_PORT (18217; seed k's lab uses BENCH_PORT + 10 k), BENCH_SCHED_PARAMS (slurm.conf
# SchedulerParameters of the labs; default empty: Slurm 22.05's defaults, which slurm-like models;
# "bf_interval=1,sched_interval=2" is the test lab's), BENCH_POLICIES ("slurm-like ideal-backfill"),
# BENCH_OUT (a directory for the results; default a new /tmp/phalanx-slurm-vs-sim.XXXXXX),
# BENCH_REPLAY=DIR (no Slurm: replay the seed-*/jobs.sacct of an earlier BENCH_OUT again, e.g.
# after a change to the model), BENCH_LIMIT (seconds a lab may run, 1500).
# Each lab is torn down when its run ends, fails or is interrupted; logs stay in BENCH_OUT/seed-*/.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
phalanx=$build/cli/phalanx
[[ -x "$phalanx" ]] || { echo "no $phalanx (cmake --build $build --target phalanx)" >&2; exit 1; }
seeds=${BENCH_SEEDS:-1 2 3}
jobs_n=${BENCH_JOBS:-50}
gap=${BENCH_GAP:-6}
port0=${BENCH_PORT:-18217}
policies=${BENCH_POLICIES:-slurm-like ideal-backfill}
limit=${BENCH_LIMIT:-1500}
replay=${BENCH_REPLAY:-}
if [[ -n "$replay" ]]; then
  out=$(cd "$replay" && pwd)
else
  [[ $(id -u) -eq 0 ]] || { echo "needs root (slurmd, munged)" >&2; exit 77; }
  for b in slurmctld slurmd sbatch squeue scontrol munged; do
    command -v "$b" >/dev/null || { echo "$b is not installed (config/install-deps.sh)" >&2; exit 77; }
  done
  [[ -f "$build/plugins/spank/phalanx_spank.so" ]] || { echo "no phalanx_spank.so in $build (the lab loads it)" >&2; exit 1; }
  out=${BENCH_OUT:-$(mktemp -d /tmp/phalanx-slurm-vs-sim.XXXXXX)}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
fi

# workload SEED: "submit_s gpus duration_s limit_min" per job. Submission gaps exponential with
# mean $gap; GPUs 1, 2, 4, 8 (one node) or 16 (two whole nodes), small ones likelier; durations
# 20..120 s, short ones likelier; the walltime request is the duration rounded up to minutes.
workload() {
  awk -v seed="$1" -v n="$jobs_n" -v gap="$gap" 'BEGIN { srand(seed); t = 0
    for (i = 0; i < n; i++) {
      if (i > 0) t += -gap * log(1 - rand())
      u = rand(); g = (u < .3) ? 1 : (u < .5) ? 2 : (u < .7) ? 4 : (u < .85) ? 8 : 16
      d = 20 + int(100 * rand() ^ 2)
      printf "%.2f %d %d %d\n", t, g, d, int((d + 59) / 60) } }'
}

# lab_run SEED DIR: the workload on a fresh lab in DIR/lab; writes DIR/jobs.sacct, DIR/starter
# ("JobID how" per job) and keeps slurmctld's log as DIR/slurmctld.log.
lab_run() {
  local seed=$1
  dir=$2 lab=$2/lab # not local: the EXIT trap reads them
  local port=$((port0 + 10 * seed))
  mkdir -p "$lab"
  export PHALANX_SLURM_DEMO_DIR=$lab PHALANX_SLURM_DEMO_JOBS=0 PHALANX_SLURM_PHALANXD=0 PHALANX_SLURM_HOLD=0
  export PHALANX_SLURM_PORT_BASE=$port PHALANX_SLURM_SCHED_PARAMS=${BENCH_SCHED_PARAMS:-}
  export PHALANX_SLURM_DEBUG_FLAGS=Backfill PHALANX_SLURM_CTLD_DEBUG=debug PHALANX_SLURM_MIN_JOB_AGE=7200
  # The lab is always torn down: at the end, on failure, on INT/TERM and past the time limit.
  local stopped=0
  stop_lab() {
    ((stopped)) && return
    stopped=1
    "$src/config/slurm/demo-slurm.sh" stop >/dev/null 2>&1
    cp "$lab/log/slurmctld.log" "$dir/slurmctld.log" 2>/dev/null
  }
  trap 'stop_lab; exit 1' INT TERM
  trap stop_lab EXIT
  timeout 120 "$src/config/slurm/demo-slurm.sh" "$build" >"$dir/start.log" 2>&1 || {
    echo "seed $seed: the lab did not start (see $dir/start.log)" >&2
    exit 1
  }
  export SLURM_CONF=$lab/etc/slurm.conf
  local clean=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "SLURM_CONF=$SLURM_CONF")
  workload "$seed" >"$dir/workload"
  local t0 at g d lim now n i=0
  t0=$(date +%s.%N)
  : >"$dir/ids"
  while read -r at g d lim; do
    now=$(date +%s.%N)
    sleep "$(awk -v a="$at" -v t0="$t0" -v now="$now" 'BEGIN { s = t0 + a - now; printf "%.3f", (s > 0 ? s : 0) }')"
    n=1
    ((g > 8)) && n=2
    "${clean[@]}" sbatch --parsable -J "j$i" -o /dev/null -N$n --gres=gpu:$((g / n)) -t "$lim" \
      --wrap "sleep $d" >>"$dir/ids" 2>>"$dir/sbatch.err" || echo "seed $seed: sbatch of job $i failed" >&2
    i=$((i + 1))
  done <"$dir/workload"
  local end=$((SECONDS + limit))
  while [[ -n "$(timeout 5 squeue -h -o %i 2>/dev/null)" ]]; do
    ((SECONDS < end)) || { echo "seed $seed: jobs still queued after ${limit} s" >&2; break; }
    sleep 2
  done
  # sacct --parsable2 rows (the lab has no slurmdbd: scontrol's records, kept by MinJobAge).
  {
    echo "JobID|JobName|User|Submit|Start|End|State|AllocTRES|Timelimit|NodeList"
    timeout 30 scontrol -o show job | awk '{ delete v; for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, "", k); v[k] = substr($i, length(k) + 2) }
      n = v["NumNodes"]; g = v["TresPerNode"]; sub(/.*gpu:/, "", g)
      printf "%s|%s|root|%s|%s|%s|%s|cpu=%s,gres/gpu=%d,node=%s|%s|%s\n", v["JobId"], v["JobName"], v["SubmitTime"],
        v["StartTime"], v["EndTime"], v["JobState"], v["NumCPUs"], g * n, n, v["TimeLimit"], v["NodeList"] }' | sort -t'|' -k1,1n
  } >"$dir/jobs.sacct"
  stop_lab
  trap - EXIT INT TERM
}

# starters DIR: who started each job (DIR/starter, "JobID how"), from DIR/slurmctld.log.
starters() {
  # Who started each job: "sched: Allocate" is the main scheduler (schedule()) or the submit RPC
  # (job_allocate at submission: the start follows the submit line directly), "_start_job: Started"
  # is a backfill cycle.
  awk '/_slurm_rpc_submit_batch_job: JobId=/ { match($0, /JobId=[0-9]+/); sub_[substr($0, RSTART + 6, RLENGTH - 6)] = 1; last = substr($0, RSTART + 6, RLENGTH - 6) }
    /sched: Allocate JobId=/ { match($0, /JobId=[0-9]+/); id = substr($0, RSTART + 6, RLENGTH - 6); how[id] = (prev_submit == id) ? "submit" : "main" }
    /_start_job: Started JobId=/ { match($0, /JobId=[0-9]+/); how[substr($0, RSTART + 6, RLENGTH - 6)] = "backfill" }
    { if ($0 ~ /_slurm_rpc_submit_batch_job: JobId=/) prev_submit = last; else if ($0 !~ /sched: Allocate|debug/) prev_submit = "" }
    END { for (id in how) print id, how[id] }' "$1/slurmctld.log" | sort -n >"$1/starter"
}

if [[ -z "$replay" ]]; then
  echo "slurm_vs_sim: seeds $seeds, $jobs_n jobs each, labs in $out/seed-* (SchedulerParameters: ${BENCH_SCHED_PARAMS:-Slurm 22.05 defaults})" >&2
  pids=()
  for s in $seeds; do
    mkdir -p "$out/seed-$s"
    (lab_run "$s" "$out/seed-$s") &
    pids+=($!)
  done
  trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; exit 1' INT TERM
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  trap - INT TERM
  ((rc == 0)) || { echo "slurm_vs_sim: a lab failed (logs in $out)" >&2; exit 1; }
fi

# Replay and compare, per seed.
for s in $seeds; do
  dir=$out/seed-$s
  [[ -s "$dir/jobs.sacct" ]] || { echo "no $dir/jobs.sacct" >&2; exit 1; }
  starters "$dir"
  pol_args=()
  for p in $policies; do pol_args+=(--policy "$p"); done
  "$phalanx" sim --topology "$src/config/topologies/demo.yaml" --trace "$dir/jobs.sacct" --walltime trace \
    --comm-share 0 "${pol_args[@]}" --jobs-csv "$dir/sim-jobs.csv" --quiet >"$dir/sim.txt" 2>"$dir/sim.err" || {
    cat "$dir/sim.err" >&2
    exit 1
  }
  echo
  echo "== seed $s: $(($(wc -l <"$dir/jobs.sacct") - 1)) jobs, SchedulerParameters: ${BENCH_SCHED_PARAMS:-defaults}; waits in s (Slurm: StartTime - SubmitTime, 1 s resolution)"
  awk -F'|' -v policies="$policies" -v starter="$dir/starter" -v csv="$dir/sim-jobs.csv" '
    function ts(x,   c) { gsub(/[-T:]/, " ", x); return mktime(x) }
    function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
    function stats(a, n,   s, i) { s = 0; for (i = 1; i <= n; i++) s += a[i]; sortn(a, n)
      return sprintf("avg %6.1f  median %5.1f  p90 %5.1f  max %5.1f", n ? s / n : 0, n ? a[int((n + 1) / 2)] : 0, n ? a[int(n * 0.9 + 0.999)] : 0, n ? a[n] : 0) }
    BEGIN { np = split(policies, pol, " ")
      while ((getline line < starter) > 0) { split(line, f, " "); how[f[1]] = f[2] }
      FS = ","; while ((getline line < csv) > 0) { k = split(line, f, ",")
        if (hdr && k > hdr) { # the policy spec (first column) had commas: join them back
          x = k - hdr; for (i = 2; i <= x + 1; i++) f[1] = f[1] "," f[i]; for (i = 2; i <= hdr; i++) f[i] = f[i + x] } if (f[1] == "policy") { hdr = k; for (i = 1; i <= k; i++) col[f[i]] = i; continue }
        w[f[col["policy"]], f[col["job_id"]]] = f[col["wait_s"]] }
      FS = "|" }
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { id = $c["JobID"]; sub_ = ts($c["Submit"]); if (NR == 2) t0 = sub_; g = $c["AllocTRES"]; sub(/.*gres\/gpu=/, "", g); sub(/,.*/, "", g)
      n++; ids[n] = id; gp[n] = g + 0; sb[n] = sub_ - t0; sw[n] = ts($c["Start"]) - sub_; nl[n] = $c["NodeList"] }
    END {
      printf "%6s %4s %7s %7s", "job", "GPUs", "submit", "Slurm"; for (p = 1; p <= np; p++) printf " %14s %6s", pol[p], "diff"; printf "  %-8s %s\n", "started", "nodes"
      for (i = 1; i <= n; i++) { printf "%6s %4d %7.0f %7.0f", ids[i], gp[i], sb[i], sw[i]
        for (p = 1; p <= np; p++) { m = w[pol[p], ids[i]]; if (m == "") printf " %14s %6s", "-", "-"; else printf " %14.1f %+6.1f", m, m - sw[i] }
        printf "  %-8s %s\n", (ids[i] in how) ? how[ids[i]] : "?", nl[i] }
      for (i = 1; i <= n; i++) a[i] = sw[i]; printf "Slurm          %s\n", stats(a, n)
      for (p = 1; p <= np; p++) { k = 0; near = 0; for (i = 1; i <= n; i++) { m = w[pol[p], ids[i]]; if (m == "") continue; a[++k] = m + 0
          d = m - sw[i]; if (d < 0) d = -d; near += (d <= 5); dd[i] = d }
        printf "%-14s %s  within 5 s of Slurm: %d of %d\n", pol[p], stats(a, k), near, n
        # the three worst gaps
        printf "%-14s worst gaps:", ""; for (r = 1; r <= 3; r++) { b = 0; for (i = 1; i <= n; i++) if (!(i in used) && dd[i] > (b ? dd[b] : -1)) b = i
          if (b) { used[b] = 1; printf "  job %s (%d GPUs) Slurm %.0f model %.1f", ids[b], gp[b], sw[b], w[pol[p], ids[b]] } }
        print ""; delete used; delete dd }
    }' "$dir/jobs.sacct" | tee "$dir/table.txt"
  awk '{ print $2 }' "$dir/starter" | sort | uniq -c | awk '{ printf "%s%s %d", (NR > 1 ? ", " : "Slurm started jobs by: "), $2, $1 } END { print "" }'
done
echo
echo "results and logs: $out" >&2
