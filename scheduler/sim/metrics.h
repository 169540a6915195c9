// Metrics of a simulated run: per-job outcomes, the run's counters, time-series samples of the
// cluster (with the core's shape-aware fragmentation, core/topology/fragmentation.h), and the
// summary the reports print. Definitions: docs/simulator.md#metrics.
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/common/time.h"
#include "core/sched/job.h"
#include "core/topology/level.h"
#include "core/topology/topology.h"

namespace phalanx {

struct JobOutcome {
  std::string id;
  uint32_t gpus = 0;  // as in the trace (the maximum for elastic jobs)
  Time submit = 0;
  Duration duration = 0;  // from the trace
  Time first_start = -1;  // -1: never started
  Time end = -1;          // -1: not finished when the simulation ended
  JobState state = JobState::kPending;
  bool rejected = false;  // the core refused the submit
  bool elastic = false, preemptible = false;
  std::string priority_class;
  std::string user;  // as in the trace
  uint32_t preemptions = 0, resizes = 0;
  double lost_gpu_s = 0;  // work lost by preemptions/failures (GPU-seconds, the core's count)
  // Its share of the placement efficiency: GPU-seconds x busbw / best over its multi-GPU
  // segments (placement_score) and their GPU-seconds (placement_weight); 0 weight: none.
  double placement_score = 0, placement_weight = 0;

  bool finished() const { return end >= 0; }
  Duration wait() const { return first_start >= 0 ? first_start - submit : -1; }
  Duration jct() const { return end >= 0 ? end - submit : -1; }
};

struct Sample {
  Time t = 0;
  uint32_t busy_gpus = 0;  // held by jobs (running or checkpointing)
  uint32_t free_gpus = 0;  // free and on Up nodes
  uint32_t running_jobs = 0;
  uint32_t pending_jobs = 0;
  uint64_t pending_gpus = 0;
  double frag_gpus = 0;                              // FGD-style: expected idle GPUs the job mix cannot use
  std::array<uint32_t, kLevelCount> largest_free{};  // per level; 0 where the level is absent
};

struct RunCounters {
  uint64_t passes = 0;               // Schedule() calls
  uint64_t idle_cycles_skipped = 0;  // of them, backfill cycles taken without a pass (Scheduler::idle_cycles_skipped)
  uint64_t floored_walks = 0;        // Reserve walks begun where an earlier one ended (Scheduler::floored_walks)
  uint64_t floor_jumps = 0, floor_releases_kept = 0;  // of them (Scheduler::floor_jumps, floor_releases_kept)
  uint64_t floor_tops_kept = 0;        // of the last, walks for a good block (Scheduler::floor_tops_kept)
  uint64_t walk_known_tops = 0;        // domains walks left out by fingerprint alone (Scheduler::walk_known_tops)
  uint64_t walk_print_mismatches = 0;  // kept fingerprints the Topology disagreed with: 0 (a fault otherwise)
  uint64_t kept_order_passes = 0;      // passes that read the kept FIFO order (Scheduler::kept_order_passes)
  uint64_t keyed_skips = 0;            // jobs decided without reading their records (Scheduler::keyed_skips)
  uint64_t events = 0;                 // events delivered to the core
  uint64_t starts = 0, preemptions = 0, resizes = 0, kills = 0, checkpoints_requested = 0;
  uint64_t node_events = 0;
  double busy_gpu_s = 0;  // integral of GPUs held over time
  double work_gpu_s = 0;  // sum of gpus x duration over the trace (the offered work)
  // Placement efficiency: sum over placements of weight x busbw/best, weight = GPU-seconds held
  // in that placement. Jobs of 1 GPU are left out (no all-reduce).
  double placement_weight = 0, placement_score = 0, placement_score_static = 0;
  // Runtime model (SimOptions::comm_share): GPU-seconds held beyond what the same work takes at
  // the best placement, and walltimes extended for it.
  double slow_gpu_s = 0;
  uint64_t walltime_extensions = 0;
  // Costs of preemption, in GPU-seconds of work (SimOptions): work lost back to the last save
  // (a job that did not answer the checkpoint signal, a node failure), and overhead (writing
  // an answered checkpoint, restarting).
  double lost_work_gpu_s = 0, overhead_gpu_s = 0;
  Time end = 0;  // last event time
};

// Per level, the most free GPUs inside one domain of that level (0 where the level is absent).
std::array<uint32_t, kLevelCount> LargestFreeByLevel(const Topology& topo);

// Fraction of the cluster that the trace asks for at each sample time if every job ran from its
// submit time for its duration (not capped at 1): the offered load, an upper bound on use.
std::vector<double> OfferedLoad(const std::vector<JobOutcome>& jobs, const std::vector<Sample>& series,
                                uint32_t cluster_gpus);

struct SizeBucket {
  std::string label;  // "1", "2-4", "5-8", "9-16", "17-32", "33-64", ">64"
  uint32_t lo = 0, hi = 0;
  size_t jobs = 0;
  double avg_wait = 0, max_wait = 0;
  double p99_wait = 0;
  size_t finished = 0;
  double avg_jct = 0;  // over the bucket's finished jobs
  double p99_jct = 0, max_jct = 0;
};
std::vector<SizeBucket> DefaultSizeBuckets();

// One user's jobs (or the rest's, user "others"): GPU-hours asked (gpus x trace duration), the
// average wait (jobs still waiting count with the time waited so far) and the average bounded
// slowdown of the finished jobs.
struct UserRow {
  std::string user;
  size_t jobs = 0, finished = 0;
  double gpu_h = 0, avg_wait = 0, avg_bounded_slowdown = 0;
  double p99_wait = 0, max_wait = 0;  // over all their jobs, as avg_wait (p99: nearest rank)
};

struct Summary {
  std::string policy;
  size_t jobs = 0, finished = 0, unfinished = 0, never_started = 0, rejected = 0, killed = 0;
  double avg_jct = 0, p50_jct = 0, p99_jct = 0;
  double avg_wait = 0, p50_wait = 0, p99_wait = 0;
  double avg_bounded_slowdown = 0;  // max(1, jct / max(duration, 10 s)), finished jobs
  double makespan = 0;              // last job end (all submit times start at 0)
  size_t large_jobs = 0;            // >= 64 GPUs
  double max_wait_large = 0;        // started large jobs, or the time waited so far
  double utilization = 0;           // GPU-seconds held / (GPUs x makespan)
  double offered_load = 0;          // work GPU-seconds / (GPUs x makespan)
  double avg_frag_rate = 0;         // mean over samples of frag_gpus / free GPUs (idle > 0)
  double avg_frag_gpus = 0;
  std::array<double, kLevelCount> avg_largest_free{};
  double placement_eff = 0, placement_eff_static = 0;  // 1 when nothing multi-GPU ran
  uint64_t preemptions = 0, resizes = 0, passes = 0;
  double ckpt_lost_gpu_h = 0;
  double lost_work_gpu_h = 0, overhead_gpu_h = 0;  // RunCounters' costs of preemption
  double placement_lost_gpu_h = 0;                 // runtime model: GPU-hours lost to slower placements
  std::vector<SizeBucket> wait_by_size;
  // The `top_users` users with the most GPU-hours asked (ties: by name), then "others" (all the
  // rest, when there are any); the same users under every policy (the trace decides).
  std::vector<UserRow> by_user;
  size_t users = 0;  // users with a job
  // Jain's fairness index over the users' average bounded slowdowns (users with a finished
  // job): (sum x)^2 / (n sum x^2), 1 = all equal, 1/n = one user takes all; 1 with no user.
  double jain_slowdown = 1;
};

Summary Summarize(const std::string& policy, const std::vector<JobOutcome>& jobs, const std::vector<Sample>& series,
                  const RunCounters& counters, uint32_t cluster_gpus, size_t top_users = 10);

// Quantile q in [0, 1] of `v` (sorted in place; nearest rank). 0 for an empty vector.
double Quantile(std::vector<double>& v, double q);

}  // namespace phalanx
