// RuntimeEstimator: how long jobs are planned to hold their GPUs. Backfill plans with it (a
// job may start now if it ends before the reservations it would touch; reservations start when
// running jobs are planned to end), and so do preemptors' claims. Limits never use it: a run is
// killed at its walltime whatever the estimate.
// Made by MakePolicies (policies.cc).
//
// Contract:
//  1. Run(job) >= 1: the seconds a job that starts now is planned to run.
//  2. End(running, now) is when the running job's current run is planned to end; the pass itself
//     plans a job being preempted to end by its checkpoint deadline, and a run past its planned
//     end to end now.
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <memory>

#include "core/common/time.h"
#include "core/sched/job.h"
#include "core/sched/policy/policy_inputs.h"

namespace phalanx {

class RuntimeEstimator {
 public:
  virtual ~RuntimeEstimator() = default;
  virtual Duration Run(const JobRecord& job) const = 0;
  virtual Time End(const JobRecord& running, Time now) const = 0;
};

// The walltime (runtime_walltime.cc): a job runs its walltime, less the work its checkpoints
// saved (JobRecord::run_walltime once started).
std::unique_ptr<RuntimeEstimator> MakeWalltimeEstimator(const PolicyInputs& in);
// Predicted (runtime_predicted.cc): the mean run time of the last two jobs of the same user,
// name and size (RuntimeHistory), at most the walltime; the walltime without history or once a
// run passes its prediction.
std::unique_ptr<RuntimeEstimator> MakePredictedEstimator(const PolicyInputs& in);

}  // namespace phalanx
