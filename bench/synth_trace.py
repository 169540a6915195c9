#!/usr/bin/env python3
"""A seeded synthetic GPU-job trace: the stand-in for issue 17's held-out trace.

The held-out trace is not in the repository (about 11k jobs of 1 to 160 GPUs, replayed at 2x
load on config/topologies/itp-1024.yaml). This writes a trace of the same size and shape so the
replay speed can be measured on it (bench/sim_speed.sh). It is not a model of any real cluster.

Shape (all drawn from Python's `random.Random(seed)`, so a seed gives the same file everywhere):
- jobs: --jobs (11,000); users: --users (60), picked with Zipf-like weights 1/(rank^1.1).
- sizes (GPUs): 1 (62%), 2 (5%), 4 (8%), 8 (15%), 16 (4%), 24 (1%), 32 (2.5%), 48 (0.5%),
  64 (1%), 96 (0.4%), 128 (0.4%), 160 (0.2%): a heavy 1-GPU share and a tail of multi-node jobs
  up to 160 GPUs; multi-node sizes are multiples of 8.
- durations: lognormal, median 1 h, sigma 1.5 (mean ~3 h), clamped to [60 s, 14 days]; a
  job of more than 8 GPUs gets a duration drawn with median 3 h instead (large jobs run longer).
- arrivals: a Poisson process over --days (30) whose rate follows the day (peak at 14:00,
  trough at 02:00, peak/trough ~4) and the week (Saturday and Sunday at 40%); the mean rate is
  set so the count comes out near --jobs.
- mean offered load: ~60% of 1,024 GPUs (614 GPUs with the defaults; printed on stderr) at native
  load, so --load-scale 2
  on itp-1024 queues heavily.
Columns: job_id,submit_s,gpus,duration_s,user,status (the simulator's native CSV).

  bench/synth_trace.py [--seed 17] [--jobs 11000] [--days 30] [--users 60] > synth.csv
"""
import argparse
import math
import random
import sys

SIZES = [(1, 62.0), (2, 5.0), (4, 8.0), (8, 15.0), (16, 4.0), (24, 1.0), (32, 2.5), (48, 0.5),
         (64, 1.0), (96, 0.4), (128, 0.4), (160, 0.2)]


def rate_shape(t):
    """Relative arrival rate at second t (mean over a week ~ 1 after normalisation below)."""
    day = (t % 86400) / 86400.0
    diurnal = 1.0 + 0.6 * math.cos(2 * math.pi * (day - 14.0 / 24.0))
    weekday = int(t // 86400) % 7
    return diurnal * (0.4 if weekday >= 5 else 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--jobs", type=int, default=11000)
    ap.add_argument("--days", type=float, default=30)
    ap.add_argument("--users", type=int, default=60)
    a = ap.parse_args()
    if a.jobs < 1 or a.days <= 0 or a.users < 1:
        sys.exit("synth_trace.py: --jobs, --days and --users must be positive")
    rng = random.Random(a.seed)
    span = a.days * 86400
    # Mean of rate_shape over a week: 1.0 (diurnal mean) * (5 + 2 * 0.4) / 7.
    mean_shape = (5 + 2 * 0.4) / 7
    peak = 1.6
    base = a.jobs / span / mean_shape
    sizes = [s for s, _ in SIZES]
    weights = [w for _, w in SIZES]
    uweights = [1.0 / (r + 1) ** 1.1 for r in range(a.users)]
    out = ["job_id,submit_s,gpus,duration_s,user,status"]
    t = 0.0
    n = 0
    gpu_s = 0.0
    # Thinning (Lewis-Shedler): candidates at the peak rate, kept with probability shape/peak.
    while n < a.jobs:
        t += rng.expovariate(base * peak)
        if t >= span:
            t = span  # the count fell short: the rest arrive at the end of the span
        elif rng.random() * peak > rate_shape(t):
            continue
        g = rng.choices(sizes, weights)[0]
        median = 3 * 3600 if g > 8 else 3600
        d = int(min(14 * 86400, max(60, rng.lognormvariate(math.log(median), 1.5))))
        u = rng.choices(range(a.users), uweights)[0]
        out.append(f"synth-{n:05d},{int(t)},{g},{d},user{u:02d},NA")
        gpu_s += g * d
        n += 1
    sys.stdout.write("\n".join(out) + "\n")
    print(f"synth_trace.py: {n} jobs over {a.days:g} days, {gpu_s / 3600:,.0f} GPU-hours, "
          f"mean offered load {gpu_s / span:,.0f} GPUs", file=sys.stderr)


if __name__ == "__main__":
    main()
