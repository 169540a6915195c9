// Policies: the decisions of the scheduling core that are pluggable, made once from the
// SchedulerConfig when the Scheduler is created (after Fluxion's qmanager/policies and its
// policy factory). The pass asks them and never looks at the knobs that chose them.
//   queue       QueuePolicy       the order of the pending jobs        (config.order)
//   backfill    BackfillPolicy    passing a blocked job, reservations  (config.backfill)
//   preemption  PreemptionPolicy  victims and their cost; nullptr: off (config.preemption)
//   runtime     RuntimeEstimator  how long jobs are planned to run     (the walltime)
// A new policy is a file in this folder implementing one interface, its factory declared in the
// interface's header, and one line in the matching table of policies.cc (plus the config value
// that names it).
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <memory>

#include "core/sched/policy/backfill_policy.h"
#include "core/sched/policy/policy_inputs.h"
#include "core/sched/policy/preemption_policy.h"
#include "core/sched/policy/queue_policy.h"
#include "core/sched/policy/runtime_estimator.h"

namespace phalanx {

struct Policies {
  std::unique_ptr<QueuePolicy> queue;
  std::unique_ptr<BackfillPolicy> backfill;
  std::unique_ptr<PreemptionPolicy> preemption;  // nullptr: no preemption
  std::unique_ptr<RuntimeEstimator> runtime;
};

// Every enum value of the config has a policy (a test checks them all).
Policies MakePolicies(const PolicyInputs& in);

}  // namespace phalanx
