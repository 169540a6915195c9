// Starting a pending job now, in a pass: where it may start without breaking a promise
// (TryStartNow), and the start itself (StartJob).
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <optional>
#include <vector>

#include "core/placement/placer.h"
#include "core/sched/decision.h"
#include "core/sched/job.h"

namespace phalanx {

struct PassState;
struct SchedulerState;

// Where `job` can start now, with the GPUs of every reservation that begins before it would end
// blocked (StartBlocks; a preemptor's own claim is not). Its block from the last pass comes first
// when it is all still free. An elastic job gets its largest legal size that fits, but sizes
// above its smallest may not take blocks promised to other jobs. Leaves the blocks applied.
std::optional<Placement> TryStartNow(SchedulerState& s, PassState& pass, const JobRecord& job);

// As TryStartNow for a non-elastic job, but on a block that meets `request` (its level and
// bandwidth floor: a good block, placement under pressure), nothing else, and without the
// promised block first. Leaves the blocks applied.
std::optional<Placement> TryStartNowWithin(SchedulerState& s, PassState& pass, const JobRecord& job,
                                           const PlacementRequest& request);

// Starts the pending `job` on `placement` now: its GPUs, counters and timers; its preemption
// claim stops being a reservation. A Start decision into `out`.
void StartJob(SchedulerState& s, PassState& pass, JobRecord& job, const Placement& placement,
              std::vector<Decision>& out);

}  // namespace phalanx
