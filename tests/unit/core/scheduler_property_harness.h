// The harness of the scheduler property tests: a seeded workload (mt19937 with our own range
// helpers, so a seed means the same workload with any standard library) played on a generated
// fabric the way a simulator or the daemon drives the Scheduler: submits, job ends at their exact
// runtime, checkpoint reports, cancels, node down/drain/up. After every batch of events at one
// time it calls Schedule(now) and acts on the decisions as a glue would, and checks every pass
// against an independent ledger built only from decisions and events (the first violation ends
// the run: SimResult::error). Each run also writes the events it played as a scenario script
// (tests/scenarios/*.scn format), so a failing seed becomes a reproducer for the golden tests.
// PHALANX_SIM_TRACE=1 adds every pass's reservations to the decision log.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/scheduler.h"

namespace phalanx::scheduler_property {

struct SimOptions {
  std::string fabric = "demo";
  uint32_t seed = 1;
  BackfillMode backfill = BackfillMode::kConservative;
  PlacementMode placement = PlacementMode::kTopology;
  bool best_fit = true;
  uint32_t reserve_depth = 100;
  bool preemption = true;
  bool elastic = true;
  int jobs = 150;
  Duration mean_interarrival = 60;  // 0: every job is submitted at t=0
  bool exact_walltime = false;      // walltime = runtime (else over-estimates, some too short)
  bool failures = false;            // node down/drain/up events
  bool cancels = false;
  bool checkpoints = false;  // some jobs ask for periodic checkpoints
  bool one_user = false;     // one user and account: queue order never changes
  bool shapes = true;        // node-shaped, level=leaf and elastic jobs
  uint32_t max_gpus = 64;
  Duration tick = 60;  // a pass at least this often while jobs run
  // When the scripted events run out with jobs still pending (nothing runs, so nothing else
  // would happen), keep passing every `tick` for up to this long, so a job that is never
  // started shows up as not done instead of the run just stopping.
  Duration drain = 24 * 3600;
};

class Rng {
 public:
  explicit Rng(uint32_t seed) : g_(seed) {}
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(g_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(double p) { return static_cast<double>(g_()) < p * 4294967296.0; }
  // Exponential with the given mean, in whole seconds (>= 1).
  int64_t Exp(double mean) {
    const double u = (static_cast<double>(g_()) + 0.5) / 4294967296.0;
    return std::max<int64_t>(1, static_cast<int64_t>(-mean * std::log(u)));
  }

 private:
  std::mt19937 g_;
};

struct SimJob {
  JobSpec spec;
  Duration runtime = 0;
  enum class St { kPending, kRunning, kCheckpointing, kDone } st = St::kPending;
  bool cancelled = false;      // done by a cancel (the others ended or were killed at walltime)
  bool preempt_asked = false;  // told to checkpoint for a preemption
  uint64_t gen = 0;            // run generation: events of an older run are dropped
  uint64_t epoch = 0;
  Duration saved = 0;  // work saved by checkpoints
  Time run_start = 0, last_ckpt = 0;
  Time first_start = -1;
  double busbw = 0;             // predicted ring bandwidth of the first start
  Time ckpt_request = -1;       // last checkpoint request for a shrink
  Time started_at = 0;          // the Start decision of the current run
  Duration saved_at_start = 0;  // `saved` then: the core's walltime budget is walltime - this
  Time min_promise = kForever;  // earliest predicted start of a reservation it held
  Time first_promise = kForever;
};

struct SimResult {
  std::string error;     // first violated check, with the time; empty when all held
  std::string log;       // every decision, FormatDecision lines
  std::string scenario;  // the run as a scenario script
  std::map<JobId, SimJob> jobs;
  Time end = 0;
  int passes = 0;
  // Time integrals (GPU-seconds) for utilization and fragmentation.
  double busy_gpu_seconds = 0;
  std::map<Level, double> largest_free_block_seconds;  // per level: max over its domains of free GPUs
  size_t gpus = 0;
};

// Plays one run. `fixed` (submit time and spec of each job, with its `runtimes`) replaces the
// generated workload.
SimResult RunSim(const SimOptions& o, std::vector<std::pair<Time, JobSpec>> fixed = {},
                 std::vector<Duration> runtimes = {});

// On failure: the run's error, and its scenario script written to a file named after `name`.
std::string Dump(const SimResult& r, const std::string& name);

std::string ModeName(BackfillMode m);

}  // namespace phalanx::scheduler_property
