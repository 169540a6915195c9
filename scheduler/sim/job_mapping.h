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
  };
  Mode mode = Mode::kExact;
  double factor = 2.0;
  Duration minimum = 60;  // no job asks for less (short jobs round up)
};

struct MappedJob {
  JobSpec spec;
  // How often the job checkpoints on its own (class rule `ckpt`; 0: never). Not part of the
  // spec: the simulated job checkpoints, and the core is told with CheckpointDone.
  Duration checkpoint_interval = 0;
};

// Trace job `index` (its id is index + 1) under `walltime` and `rules`; random choices are
// drawn from `seed`.
MappedJob MapTraceJob(const TraceJob& job, size_t index, uint64_t seed, const WalltimeModel& walltime,
                      std::span<const ClassRule> rules);

}  // namespace phalanx
