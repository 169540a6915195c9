// Trace jobs -> the JobSpecs the simulator submits: the walltime model (what a job asks for as
// walltime) and the class rules (sim/class_rule.h) applied. docs/simulator.md#walltimes.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "core/common/time.h"
#include "core/sched/job.h"
#include "sim/class_rule.h"
#include "sim/trace.h"

namespace phalanx {

// What a job asks for as walltime (the core kills a job at its walltime and plans backfill on it).
struct WalltimeModel {
  enum class Mode : uint8_t {
    kExact,   // walltime = duration
    kFactor,  // walltime = ceil(duration x factor)
    kRandom,  // walltime = ceil(duration x u), u uniform in [1, factor], seeded per job
    kTrace,   // the trace's Timelimit where known (at least the duration), else exact
    kModel,   // users' estimates (EstimateWalltime): overestimated, rounded up to round values
  };
  Mode mode = Mode::kExact;
  double factor = 2.0;
  Duration minimum = 60;  // no job asks for less (short jobs round up)
  // kModel: the site's walltime limit, the estimate of the jobs that ask for the most allowed
  // (0: the simulator sets max(7 days, the longest duration rounded up to a day)).
  Duration limit = 0;
  double share_at_limit = 0.10;  // kModel: the share of jobs that ask for the limit
};

// A user's walltime request for a job that runs `duration` seconds (kModel), after the shape of
// Tsafrir, Etsion and Feitelson, "Modeling User Runtime Estimates" (JSSPP 2005): estimates are
// modal, a few round values (minutes, hours, days) cover most requests, the site's limit is a
// popular single value (the most popular in several of their logs), and accuracy (runtime / estimate) is spread widely
// over (0, 1]. Here: with probability share_at_limit the request is the limit; otherwise the runtime divided by an
// accuracy drawn uniformly in [0.05, 1], rounded up to the next round value (1, 2, 5, 10, 15, 20, 30, 45 min; 1, 1.5,
// 2, 3, 4, 6, 8, 10, 12, 16, 20 h; 1, 1.5, 2, 3, 4, 5, 6, 7 days, then whole weeks), at most the limit. Never below the
// runtime (the traces' jobs finished) nor below `minimum`. `u1`, `u2` are uniform draws in [0, 1).
Duration EstimateWalltime(Duration duration, const WalltimeModel& model, double u1, double u2);

struct MappedJob {
  JobSpec spec;
  // How often the job checkpoints on its own (class rule `ckpt`; 0: never). Not part of the
  // spec: the simulated job checkpoints, and the core is told with CheckpointDone.
  Duration checkpoint_interval = 0;
};

// Trace job `index` (its id is index + 1) under `walltime` and `rules`; random choices are
// drawn from `seed`. A seeded `elastic_share` of the multi-GPU jobs is elastic down to half its
// size (as the rule `gpus>=2,share=F:elastic=0.5`, drawn apart from the rules' shares), before
// the rules, which override it.
MappedJob MapTraceJob(const TraceJob& job, size_t index, uint64_t seed, const WalltimeModel& walltime,
                      std::span<const ClassRule> rules, double elastic_share = 0);

}  // namespace phalanx
