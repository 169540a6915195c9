// Plans kept from pass to pass: a block a walk planned for a job (PlannedBlock) is used again,
// without a walk, for a few minutes (hours, for a held job's block planned days out) while it
// stays free for the job -- a held job's good block (placement under pressure, patience_replan
// and patience_far_keep) and the policy's reservations after the first of a pass (the starvation
// guard's, reserve_replan). A kept block may start later than a walk would find now (jobs ended
// early); the job still starts the moment it fits now.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <optional>
#include <vector>

#include "core/sched/job.h"
#include "core/sched/scheduler.h"

namespace phalanx {

struct PassState;
struct SchedulerState;

// Whether the block `gpus`, planned for job `id` from `start` (after now) for `w`, is still free
// for it: every GPU on a node that is up, free now or held by a job released by `start`, and none
// reserved in this pass over that time.
bool PlannedBlockFree(SchedulerState& s, PassState& pass, JobId id, Time start, const std::vector<GpuId>& gpus,
                      Duration w);

// `plan` as job `id`'s reservation of n GPUs for `w`, if a walk made it less than `replan` ago
// (0: never kept) for n GPUs and it is still free for the job; else nullopt.
std::optional<Reservation> KeptPlan(SchedulerState& s, PassState& pass, JobId id, const PlannedBlock& plan, uint32_t n,
                                    Duration w, Duration replan);

// The reservation the policy makes for `job` (EASY's, the starvation guard's): where `may_keep`,
// its kept plan (KeptPlan, reserve_replan), or none while a kept plan that is no longer free
// starts reserve_horizon or more out (the plan stays the job's: JobRecord::reserve_plan still
// set after nullopt says so); else Reserve's, noted as the job's plan for the passes to come. A
// job limited to some nodes or by its user's GPUs is planned anew: its walk reads more than the
// block. Changes nothing else (clears the start blocks).
std::optional<Reservation> ReserveOrKeep(SchedulerState& s, PassState& pass, JobRecord& job, bool may_keep);

}  // namespace phalanx
