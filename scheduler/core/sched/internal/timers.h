// Timers: the work a pass does first because time has passed. Running jobs' usage is charged to
// fairshare; a run past its walltime is killed; a checkpoint deadline that passed finishes the
// preemption or shrink without the checkpoint; a periodic checkpoint comes due.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <vector>

#include "core/common/time.h"
#include "core/sched/config.h"
#include "core/sched/decision.h"
#include "core/sched/job.h"

namespace phalanx {

struct SchedulerState;

// The earliest time a timer of this active job fires: the end of its run, its checkpoint
// deadline (checkpointing), its next periodic checkpoint (running, with an interval).
Time NextTimer(const SchedulerConfig& config, const JobRecord& job);

// Charges the running jobs' usage up to `now`, once per config.charge_period (Slurm's
// PriorityCalcPeriod); a job that stops is charged to its end exactly (StopJob).
void ChargeUsage(SchedulerState& s, Time now);

// Fires every timer due at `now` (nothing before s.next_timer): Kill, Preempt{requeue},
// Resize and Checkpoint decisions into `out`.
void FireTimers(SchedulerState& s, Time now, std::vector<Decision>& out);

}  // namespace phalanx
