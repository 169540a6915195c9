// PreemptionPolicy: which running jobs may give their GPUs to a job that cannot start, and at
// what price. The pass does the rest (internal/preemption.h): it looks for the block to free,
// taking the victims of least cost per GPU freed first, and runs the checkpoint protocol.
// Chosen from SchedulerConfig::preemption by MakePolicies (policies.cc); off: no policy, and no
// job is preempted or shrunk for another.
//
// Contract:
//  1. Called by the pass only, about running jobs that are nobody's victim yet.
//  2. MayPreempt and Price depend only on the preemptor's class and service queue, the victim
//     and `now`: the pass asks them once per preemptor class, service queue and pass, and a
//     victim that may not be taken for one such job may not be taken for another. The
//     preemptor's size enters through the price's min_preemptor_gpus alone.
//  3. Price(preemptor, victim, shrink, now): the price of taking the victim's GPUs now, through
//     a checkpoint: all of them (shrink false), or those above its smallest legal size (shrink
//     true, asked only for elastic jobs that can shrink), and the fewest GPUs a preemptor must
//     need to be let take them. nullopt: not now. Lower goes first.
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/common/time.h"
#include "core/queue/priority.h"
#include "core/sched/job.h"
#include "core/sched/policy/policy_inputs.h"

namespace phalanx {

// The job that asks for GPUs: its class, its service queue (policy/service_queue.h; 0 unless
// the queue order is attained service) and the GPUs it needs (its smallest legal size).
struct Preemptor {
  PriorityClassId cls;
  uint32_t service_queue = 0;
  uint32_t gpus = 0;
};

// What a victim costs a preemptor (lost GPU-seconds), and the fewest GPUs the preemptor must
// need for it to be taken at all (0: any preemptor of its class and service queue).
struct PreemptionPrice {
  double cost = 0;
  uint32_t min_preemptor_gpus = 0;
};

class PreemptionPolicy {
 public:
  virtual ~PreemptionPolicy() = default;
  virtual bool MayPreempt(const Preemptor& preemptor, const JobRecord& victim, Time now) const = 0;
  // preemptor.gpus is not read.
  virtual std::optional<PreemptionPrice> Price(const Preemptor& preemptor, const JobRecord& victim, bool shrink,
                                               Time now) const = 0;
};

// preemption = on (preempt_checkpoint_cost.cc): the priority-class table says who may preempt
// whom (preemptible jobs, after the class's minimum runtime; shrinks always); the cost is the
// work lost, in GPU-seconds: GPUs x (time since the last checkpoint + restart cost), or
// GPUs x restart cost for a shrink. With order=attained a job may also take the GPUs of a job of
// its own class in a higher service queue (one that has had more service), once that job has run
// service_min_run in its current run (preemptible jobs; shrinks too), and, for a preemption, only
// if it holds no more GPUs than the preemptor needs.
std::unique_ptr<PreemptionPolicy> MakeCheckpointCostPreemption(const PolicyInputs& in);

}  // namespace phalanx
