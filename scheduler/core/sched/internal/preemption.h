// Preemption, in a pass: when a job cannot start, find a block whose running jobs can make room
// for it (victims chosen by the PreemptionPolicy, cheapest per GPU freed first), and start the
// checkpoint protocol with them; until they have made room, the GPUs they hold and free are the
// preemptor's claim, a reservation at `now` (docs/scheduling.md, "Checkpoint-based preemption").
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <vector>

#include "core/sched/decision.h"
#include "core/sched/job.h"

namespace phalanx {

struct PassState;
struct SchedulerState;

// Turns the GPUs a waiting preemptor has been freed (its claim) and those its victims still
// hold into a reservation for it at `now`. A claim without victims left is trimmed to the GPUs
// the preemptor would use.
void ReserveClaim(SchedulerState& s, PassState& pass, JobRecord& preemptor);

// Chooses victims for `job` (which cannot start now) and sends them Checkpoint decisions;
// false, changing nothing, when preemption is off or no block can be freed for it.
bool TryPreempt(SchedulerState& s, PassState& pass, JobRecord& job, std::vector<Decision>& out);

}  // namespace phalanx
