// Decisions: what the core asks the glue (daemon, simulator, Slurm mode) to carry out.
// Every scheduling pass returns a list of these; the core has already updated its own state as
// if they were carried out (HiveD-style), and the glue reports what really happened back as
// events (job ended, checkpoint done, launch failed = job ended with failure).
// Thread-safety: plain values.
#pragma once

#include <string>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/sched/job.h"

namespace phalanx {

enum class DecisionKind : uint8_t {
  kStart,       // launch the job on `gpus`
  kCheckpoint,  // send the job its checkpoint signal; it must report by `deadline`
  kPreempt,     // stop the job; `requeue`: it is pending again and resumes from its checkpoint
  kResize,      // elastic job now runs on `gpus` (`added` / `removed` relative to before)
  kKill,        // stop the job for good (`reason`: walltime, ...)
  kWait,        // the job stays pending: `wait` says why and when it is predicted to start
};
std::string_view DecisionKindName(DecisionKind kind);

struct Decision {
  DecisionKind kind = DecisionKind::kWait;
  JobId job = kNoJob;
  Time at = 0;
  std::vector<GpuId> gpus;
  std::vector<GpuId> added, removed;
  Time deadline = 0;
  bool requeue = true;
  std::string reason;
  WaitReason wait;
};

class Topology;
// One line, stable and readable: "t=120 start job=7 gpus=n0:0-7,n1:0-7 (busbw 360.0)".
// Used by golden scenario files and logs.
std::string FormatDecision(const Decision& d, const Topology& topology);
// "n0:0-3,n1:4-7": GPUs grouped by node, local index ranges.
std::string FormatGpus(const std::vector<GpuId>& gpus, const Topology& topology);

}  // namespace phalanx
