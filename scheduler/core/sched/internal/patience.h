// Placement under pressure: whether a multi-GPU job that could start now on a slower block
// should rather wait for a good one (docs/scheduling.md, "Placement under pressure").
//
// A good block is one of the shape of the job's best placement in the empty cluster: inside one
// domain of the level that placement spans (a node for 8 GPUs on 8-GPU nodes, a leaf for 64).
// Starting now on a block of predicted bus bandwidth b stretches each step by
//     slowdown = (1 - c) + c x best / b      (c = SchedulerConfig::placement_comm_share)
// so the run takes (slowdown - 1) x estimate longer. The planner (Reserve, on the good shape)
// says when a good block frees up. The job waits for it, with a reservation on that block, when
// the time it has already waited for one plus the wait still predicted is less than that
// slowdown cost; otherwise it starts now. The bound is the cost itself: no job waits for a good
// block longer than its slower run would have lost.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <optional>

#include "core/placement/placer.h"
#include "core/sched/job.h"
#include "core/sched/scheduler.h"

namespace phalanx {

struct PassState;
struct SchedulerState;

// The reservation of a good block to wait for instead of starting `job` on `now_placement`
// now (its start may be now: a good block is free, start there), or nullopt: start now (off, 1 GPU, the placement is
// good already, no good block is planned, or waiting costs more). Changes nothing but the start blocks (like Reserve)
// and the job's `deferred_since` (set when it returns a reservation, cleared when not).
std::optional<Reservation> WaitForBetterBlock(SchedulerState& s, PassState& pass, JobRecord& job,
                                              const Placement& now_placement);

}  // namespace phalanx
