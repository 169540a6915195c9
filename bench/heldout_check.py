#!/usr/bin/env python3
"""Issue 17's goals, checked on traces and topologies no policy was tuned on.

The held-out trace is not in the repository; bench/synth_trace.py writes stand-ins of its size
and shape (one per seed). This replays each seed on each topology at each load with the candidate
policy (default: the `phalanx` preset) and the baseline (`slurm-like`), and prints, per run, the
figures issue 17 asks for and what misses its goals:

- average JCT: baseline / candidate, goal >= 1.2x; average bounded slowdown better;
- no job size and no user worse off: the size buckets whose average wait or average JCT is longer,
  and the users whose average wait or bounded slowdown is worse, with the candidate's / the
  baseline's figure (only the misses are printed);
- the starvation guard: the longest wait of a job of >= 64 GPUs no longer than the baseline's;
- placement efficiency >= 0.95; replay time < 30 s (the candidate's user CPU seconds).

A load is given as for itp-1024 (1,024 GPUs: the stand-ins offer ~60% of it at 1x, so 2 queues
heavily) and scaled by the topology's GPUs, so every topology sees the same offered load
(on nvl72-8racks, 576 GPUs, load 2 replays at --load-scale 1.125).

  bench/heldout_check.py [--phalanx build/cli/phalanx] [--seeds 17,18,19]
      [--topologies itp-1024,superpod-4su,nvl72-8racks] [--loads 2,3]
      [--policy phalanx] [--baseline slurm-like] [--out DIR]

Minutes of CPU (about 15 s a run for the preset); progress on stderr. Not a test: a report.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout


def topology_gpus(phalanx, path):
    out = run([phalanx, "topology", "check", path])
    m = re.search(r"(\d+) GPUs", out)
    if not m:
        sys.exit(f"heldout_check.py: {path}: no GPU count in `phalanx topology check`: {out[:200]}")
    return int(m.group(1))


def simulate(phalanx, topology, trace, scale, policy, json_path):
    """Runs one replay; returns (the policy's result, user CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    run([phalanx, "sim", "--topology", topology, "--trace", trace, "--load-scale", str(scale), "--policy", policy,
         "--quiet", "--json", json_path])
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    with open(json_path) as f:
        return json.load(f)["policies"][0], cpu


def worse(cand, base, key, label, fmt):
    """The rows of `cand` whose `key` is larger than the same row's in `base`."""
    by = {label(r): r for r in base}
    out = []
    for r in cand:
        b = by.get(label(r))
        if b is not None and r[key] > b[key]:
            out.append(f"{label(r)} {fmt(r[key])}/{fmt(b[key])}")
    return out


def hours(s):
    return f"{s / 3600:.1f}h"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phalanx", default=os.path.join(ROOT, "build/cli/phalanx"))
    ap.add_argument("--seeds", default="17,18,19")
    ap.add_argument("--topologies", default="itp-1024,superpod-4su,nvl72-8racks")
    ap.add_argument("--loads", default="2,3")
    ap.add_argument("--policy", default="phalanx")
    ap.add_argument("--baseline", default="slurm-like")
    ap.add_argument("--out", help="keep the traces and result JSON here (default: a temporary directory)")
    a = ap.parse_args()
    if not os.access(a.phalanx, os.X_OK):
        sys.exit(f"heldout_check.py: no {a.phalanx} (cmake --build build --target phalanx)")
    seeds = [int(s) for s in a.seeds.split(",")]
    loads = [float(x) for x in a.loads.split(",")]
    topologies = [t for t in a.topologies.split(",")]
    tmp = None
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        out = a.out
    else:
        tmp = tempfile.TemporaryDirectory()
        out = tmp.name

    runs = [(s, t, x) for s in seeds for t in topologies for x in loads]
    goals = {"jct>=1.2x": 0, "bsd better": 0, "no size worse": 0, "no user worse": 0, "64+ max wait": 0,
             "efficiency>=0.95": 0, "time<30s": 0}
    print(f"{a.policy} against {a.baseline}; JCT and bounded slowdown: candidate (baseline); "
          "misses as candidate/baseline")
    for i, (seed, topo, load) in enumerate(runs, 1):
        trace = os.path.join(out, f"synth{seed}.csv")
        if not os.path.exists(trace):
            with open(trace, "w") as f:
                subprocess.run([sys.executable, os.path.join(ROOT, "bench/synth_trace.py"), "--seed", str(seed)],
                               check=True, stdout=f, stderr=subprocess.DEVNULL)
        path = os.path.join(ROOT, "config/topologies", topo + ".yaml")
        scale = round(load * topology_gpus(a.phalanx, path) / 1024, 4)
        name = f"s{seed} {topo} x{load:g}"
        print(f"[{i}/{len(runs)}] {name} (--load-scale {scale:g})", file=sys.stderr, flush=True)
        stem = os.path.join(out, f"{seed}-{topo}-{load:g}")
        c, cpu = simulate(a.phalanx, path, trace, scale, a.policy, stem + ".cand.json")
        b, _ = simulate(a.phalanx, path, trace, scale, a.baseline, stem + ".base.json")
        ratio = b["avg_jct_s"] / c["avg_jct_s"] if c["avg_jct_s"] > 0 else float("inf")
        sizes = worse(c["wait_by_size"], b["wait_by_size"], "avg_wait_s", lambda r: r["gpus"] + " wait", hours) + \
            worse(c["wait_by_size"], b["wait_by_size"], "avg_jct_s", lambda r: r["gpus"] + " JCT", hours)
        users = worse(c["by_user"], b["by_user"], "avg_wait_s", lambda r: r["user"] + " wait", hours) + \
            worse(c["by_user"], b["by_user"], "avg_bounded_slowdown", lambda r: r["user"] + " bsd", lambda v: f"{v:.2f}")
        met = {
            "jct>=1.2x": ratio >= 1.2,
            "bsd better": c["avg_bounded_slowdown"] < b["avg_bounded_slowdown"],
            "no size worse": not sizes,
            "no user worse": not users,
            "64+ max wait": c["max_wait_large_s"] <= b["max_wait_large_s"],
            "efficiency>=0.95": c["placement_efficiency"] >= 0.95,
            "time<30s": cpu < 30,
        }
        for k, v in met.items():
            goals[k] += v
        print(f"{name}: JCT {hours(c['avg_jct_s'])} ({hours(b['avg_jct_s'])}) = {ratio:.2f}x, "
              f"bsd {c['avg_bounded_slowdown']:.2f} ({b['avg_bounded_slowdown']:.2f}), "
              f"64+ max wait {hours(c['max_wait_large_s'])} ({hours(b['max_wait_large_s'])}), "
              f"efficiency {c['placement_efficiency']:.3f}, Jain {c['jain_slowdown']:.3f} ({b['jain_slowdown']:.3f}), "
              f"{cpu:.1f} s")
        missed = [k for k, v in met.items() if not v]
        if missed:
            print(f"  misses: {', '.join(missed)}")
        if sizes:
            print(f"  sizes: {'; '.join(sizes)}")
        if users:
            print(f"  users: {'; '.join(users)}")
        sys.stdout.flush()
    print("goals met, of " + str(len(runs)) + " runs: " + ", ".join(f"{k} {v}" for k, v in goals.items()))
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
