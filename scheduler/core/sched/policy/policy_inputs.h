// PolicyInputs: what a policy may read when it is made (MakePolicies): the configuration and the
// core's long-lived tables, which outlive every policy. Policies read them, never change them.
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <cstdint>

#include "core/queue/fairshare.h"
#include "core/queue/priority.h"
#include "core/sched/config.h"
#include "core/sched/policy/runtime_history.h"

namespace phalanx {

struct PolicyInputs {
  const SchedulerConfig& config;
  const PriorityClassTable& classes;
  const FairshareTracker& fairshare;  // current usage: changes as jobs run
  const RuntimeHistory& history;      // run times of ended jobs: grows as jobs end
  uint32_t cluster_gpus = 0;
};

}  // namespace phalanx
