// BackfillPolicy: what a scheduling pass does about the jobs behind one that cannot start (the
// queue policies of Fluxion's qmanager: fcfs, easy, conservative). Whether a later job may start
// before it, and which waiting jobs get a reservation: the earliest block each can have, which
// the jobs after it must leave alone (docs/scheduling.md, "Block-shaped reservations").
// Chosen from SchedulerConfig::backfill by MakePolicies (policies.cc).
//
// Contract:
//  1. Called by the pass only, for jobs in queue order.
//  2. Answers depend only on the arguments and the configuration the policy was made with.
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/common/time.h"
#include "core/sched/config.h"
#include "core/sched/job.h"
#include "core/sched/policy/policy_inputs.h"

namespace phalanx {

class BackfillPolicy {
 public:
  virtual ~BackfillPolicy() = default;
  // May a job start now while a job ahead of it in the queue cannot? (No: strict order; the job
  // waits with Priority "behind job N".)
  virtual bool Backfills() const = 0;
  // Does a job that has waited since `waiting_since` (WaitingSince, job.h: its submission, or
  // the end of its last run), which cannot start now at its smallest size `gpus`, get a
  // reservation, when the jobs ahead of it got `made` in this pass (preemptors' claims not
  // counted)? (Nothing else of the job: a pass may ask without reading its record.)
  virtual bool Reserves(Time waiting_since, uint32_t gpus, size_t made, Time now) const = 0;
};

// The starvation guard every backfill policy applies beyond its own depth: a job of at least
// reserve_large_gpus GPUs, or that has waited reserve_after_wait, gets a reservation too, while
// fewer than reserve_depth (0: no bound) were made. Both thresholds 0: off.
class StarvationGuard {
 public:
  explicit StarvationGuard(const SchedulerConfig& config);
  bool Reserves(Time waiting_since, uint32_t gpus, size_t made, Time now) const;

 private:
  uint32_t large_gpus_;
  Duration after_wait_;
  size_t cap_;
};

// BackfillMode::kNone (backfill_none.cc): strict order; no reservations but the guard's.
std::unique_ptr<BackfillPolicy> MakeNoBackfill(const PolicyInputs& in);
// BackfillMode::kEasy (backfill_easy.cc): a reservation for the first blocked job only.
std::unique_ptr<BackfillPolicy> MakeEasyBackfill(const PolicyInputs& in);
// BackfillMode::kConservative (backfill_conservative.cc): reservations for the first
// reserve_depth blocked jobs (0: all).
std::unique_ptr<BackfillPolicy> MakeConservativeBackfill(const PolicyInputs& in);

}  // namespace phalanx
