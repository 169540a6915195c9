// Placement under pressure: whether a multi-GPU job that could start now on a slower block
// should rather wait for a good one (docs/scheduling.md, "Placement under pressure").
//
// A good block is one as fast as the job's best placement in the empty cluster, within the
// tolerance (predicted bus bandwidth >= node_fit_tolerance x best: PlacementRequest::
// min_busbw_gbs), inside one domain of the level that placement spans (a node for 8 GPUs on
// 8-GPU nodes, a leaf for 64). Not that placement's shape: on mixed nodes the best shape is good
// on one kind of node only (Philly: four 2-GPU nodes are the best 8 GPUs, and the same shape on
// four 8-GPU nodes runs at a third of it).
// Starting now on a block of predicted bus bandwidth b stretches each step by
//     slowdown = (1 - c) + c x best / b      (c = SchedulerConfig::placement_comm_share)
// so the run takes (slowdown - 1) x estimate longer, and holds its n GPUs that much longer: under
// pressure, capacity the Q other pending jobs wait for, each about that lost GPU time / N (the
// cluster's GPUs). When b is below the block's own bandwidth in the empty cluster (its shape),
// the gap comes from links shared with running jobs' rings, which the job's ring slows about as
// much: that part of the slowdown, `imposed` = c x best / b - c x best / shape, counts again. The
// cost of starting now is therefore (slowdown - 1 + imposed) x estimate x (1 + Q n / N).
// The planner (Reserve, for a good block) finds the good block that frees up first; the job
// waits for it, with a reservation on that block, until the time it has waited for one reaches the cost (delay
// scheduling with a bound); then, or when no good block is planned at all, it starts now. The
// bound is the cost itself: no job waits for a good block longer than its slower run would
// have cost. Only the first SchedulerConfig::patience_depth such jobs of a pass, in queue order,
// have their block planned and reserved; the others wait to the same bound without one.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <optional>

#include "core/placement/placer.h"
#include "core/sched/job.h"
#include "core/sched/scheduler.h"

namespace phalanx {

struct PassState;
struct SchedulerState;

// The shape of a good block for `job` at n GPUs (its request, inside one domain of the level its
// best block spans, at least node_fit_tolerance x that block's bandwidth) when it would wait for
// one rather than start on a slower block; nullopt when it would not (off, 1 GPU, a shape of its
// own). A preemptor frees only such a block (preemption.cc): on a slower one it would wait anyway,
// holding the GPUs its victims gave up.
std::optional<PlacementRequest> GoodBlockFor(SchedulerState& s, const JobRecord& job, uint32_t n);

// What a job that could start now on `now_placement` does instead.
struct Patience {
  bool wait = false;  // false: start now (off, 1 GPU, the placement is good already, no good
                      // block is planned, or waiting costs more)
  // The good block it waits for, reserved (its start may be now: a good block is free, start
  // there); none for a job beyond the pass's patience_depth (it waits without one).
  std::optional<Reservation> block;
  Time until = kForever;  // the bound: it starts on a slower block then
};

// Changes nothing but the start blocks (like Reserve), the pass's count of planned good blocks
// and the job's patience fields (`deferred_since`, `patience_slower`, `patience_counted_at`: set
// when it waits, cleared when not).
Patience WaitForBetterBlock(SchedulerState& s, PassState& pass, JobRecord& job, const Placement& now_placement);

// A job held back for a good block whose bound was counted less than patience_replan ago and has
// not been reached: a good block free now (`good`: start it there; its own planned block first),
// else its wait as WaitForBetterBlock would give it (`patience`), without the search for the
// fastest block free now. The bound keeps the slower block's part as last counted (the queue's
// share is counted now); every patience_replan, and at the bound, WaitForBetterBlock counts it
// again on the block free then. Not such a job, or fewer GPUs free than it needs (no slower
// block either): nullopt, it is scheduled as any other job.
struct StillHeld {
  std::optional<Placement> good;
  Patience patience;
};
std::optional<StillHeld> WaitStillHeld(SchedulerState& s, PassState& pass, JobRecord& job, uint32_t n);

}  // namespace phalanx
