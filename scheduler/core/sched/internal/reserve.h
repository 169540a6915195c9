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
std::optional<Reservation> Reserve(SchedulerState& s, PassState& pass, const JobRecord& job);

// The reservation the policy makes for `job` (EASY's, the starvation guard's): where `may_keep`,
// the one its last walk planned, less than SchedulerConfig::reserve_replan ago, while that block
// is still free for it (PlannedBlockFree); else Reserve's, noted on the job (JobRecord::reserve_planned_at,
// reserve_start, reserve_gpus) for the passes to come. Changes nothing else (clears the start
// blocks).
std::optional<Reservation> ReserveOrKeep(SchedulerState& s, PassState& pass, JobRecord& job, bool may_keep);

// Whether the block `gpus`, planned for job `id` from `start` (after now) for `w`, is still free
// for it: every GPU on a node that is up, free now or held by a job released by `start`, and none
// reserved in this pass over that time.
bool PlannedBlockFree(SchedulerState& s, PassState& pass, JobId id, Time start, const std::vector<GpuId>& gpus,
                      Duration w);

// Records `r` as made in this pass: the next jobs must leave its block alone.
void AddReservation(SchedulerState& s, PassState& pass, Reservation r);

}  // namespace phalanx
