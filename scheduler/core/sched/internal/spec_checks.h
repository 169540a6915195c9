// The checks a job spec must pass, shared by Submit, ValidateSpec (scheduler.cc) and Restore
// (scheduler_restore.cc). Errors name the job (where = "job N") and the field and value; codes
// as scheduler.h's contract says.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <string>
#include <vector>

#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/placement/placer.h"
#include "core/queue/priority.h"
#include "core/sched/job.h"

namespace phalanx {

struct SchedulerState;

std::string JobWhere(JobId id);  // "job 7"

// Node-shaped jobs may leave shape.gpus 0: it is nodes x gpus_per_node (CheckShape first).
PlacementRequest NormalisedShape(PlacementRequest shape);

// The id is in 1..2^62-1 (kInvalidArgument) and not known (kAlreadyExists).
Status CheckNewId(const SchedulerState& s, JobId id);
// Class known, shape, elastic sizes, no negative durations; returns the class.
Result<PriorityClassId> CheckShape(const SchedulerState& s, const JobSpec& spec);
// Name, user, account and class as labels (util/job_fields.h: no control characters, valid
// UTF-8, bounded), whoever the caller.
Status CheckSubmittedText(const JobSpec& spec);
// The elastic sizes are consistent (util/job_fields.h's CheckElastic): a step kind only for an
// elastic job, a multiple's step within 1..gpus, at least one legal size in [min, max].
Status CheckElasticSizes(const JobSpec& spec);
// All of Submit's checks on a spec: no restore in progress, CheckNewId, CheckSubmittedText, CheckShape,
// CheckElasticSizes, walltime
// within the maximum, array fields (dependencies.h), dependencies known (kNotFound), the pending-job limits
// (kResourceExhausted); returns the class.
Result<PriorityClassId> CheckSubmit(const SchedulerState& s, const JobSpec& spec);
// The job's partitions (spec.partitions resolved), each accepting new jobs (UP or DOWN, not
// DRAIN or INACTIVE), each with the walltime (0: the partition's default) within its maximum
// and the GPUs within its max_gpus_per_job. Errors name the partition and the limit.
Result<std::vector<uint32_t>> CheckPartitions(const SchedulerState& s, const JobSpec& spec);
// Why a job of `n` GPUs (shape as in `spec`) can never run in any of `ids`: too few GPUs in
// the partition, or no node of it with gpus_per_node GPUs. Empty when one of them may hold it.
std::string PartitionsUnsatisfiable(const SchedulerState& s, const JobSpec& spec, const std::vector<uint32_t>& ids,
                                    uint32_t n);
// The walltime a job gets when it states none (the first partition's default_walltime), and
// the most it may state (the smallest max_walltime of its partitions).
Duration DefaultWalltime(const SchedulerState& s, const std::vector<uint32_t>& ids);
Duration MaxWalltime(const SchedulerState& s, const std::vector<uint32_t>& ids);

}  // namespace phalanx
