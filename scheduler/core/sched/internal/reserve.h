// Reservations, in a pass: for a job that cannot start now, the earliest time and the exact
// block (GPUs chosen by the Placer) at which it can run for its whole planned runtime, given the
// running jobs' planned releases and the reservations already made; then held as a promise
// (docs/scheduling.md, "Block-shaped reservations").
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <optional>

#include "core/sched/job.h"
#include "core/sched/scheduler.h"

namespace phalanx {

struct PassState;
struct SchedulerState;

// The earliest reservation for `job` at its smallest legal size, or nullopt (none before the
// last release time, or the nodes that are up could never hold it). Prefers, at each candidate
// time, the job's own block from the last pass, then a block that avoids those promised to jobs
// not scheduled yet in this pass, then any block. Changes nothing (clears the start blocks).
// kHide: the job's own block is not offered (a walk for a good block: the promised one may be
// the slow block), and counts as no other job's either.
enum class OwnBlock { kOffer, kHide };
std::optional<Reservation> Reserve(SchedulerState& s, PassState& pass, const JobRecord& job,
                                   OwnBlock own = OwnBlock::kOffer);

// Records `r` as made in this pass: the next jobs must leave its block alone.
void AddReservation(SchedulerState& s, PassState& pass, Reservation r);

}  // namespace phalanx
