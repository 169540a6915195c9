// Dependencies and arrays in the core: whether a job's --dependency is met now, can still be
// met or never will be (Slurm's DependencyNeverSatisfied: the job stays pending), the checks a
// submission's dependencies and array fields pass, and the array index (SchedulerState::arrays).
//
// A target's state, per kind (an array target: every task; afternotok: every task ended and
// at least one not ok):
//   after       met once the job left pending (started, or ended: cancelled while pending too)
//   afterany    met once it ended, however
//   afterok     met once it completed; never when it failed, was cancelled or killed
//   afternotok  met once it failed, was cancelled or killed; never when it completed
//   singleton   met while no other job of the same user and name is running or checkpointing
// All of them (','): never if one is never, else waiting if one is not met. Any of them ('?'):
// met if one is met, never if all are never.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <string>

#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/sched/job.h"

namespace phalanx {

struct SchedulerState;
struct PassState;

enum class DependState : uint8_t { kMet, kWaiting, kNever };

struct DependCheck {
  DependState state = DependState::kMet;
  std::string detail;  // waiting: the first unmet item ("afterok:12"); never: why ("afterok:12 (job 12 failed)")
};

// The job's dependencies (spec.after_ok and spec.depends) at this point of `pass`.
DependCheck CheckDependencies(const SchedulerState& s, PassState& pass, const JobRecord& job);

// Submit's checks (where = "job N"): every target known (kNotFound: "dependency on unknown job
// 12", "array 12 has no task 7"), none the job itself or its own array, after_ok not mixed
// with '?'; an array task's array id is not a job's id, its index new in the array.
Status CheckDependencyTargets(const SchedulerState& s, const JobSpec& spec);
Status CheckArrayFields(const SchedulerState& s, const JobSpec& spec);

// Puts a (submitted or restored) array task into s.arrays, keeping its tasks by index.
void IndexArrayTask(SchedulerState& s, const JobRecord& job);

// The task's job id of array `array`, kNoJob if unknown. O(log tasks).
JobId ArrayTaskJob(const SchedulerState& s, JobId array, uint32_t task);

// Pass start: the active tasks per array and the active jobs' (user, name) into `pass`; and a
// job the pass starts.
void NoteActiveJobs(const SchedulerState& s, PassState& pass);
void NoteStarted(PassState& pass, const JobRecord& job);

}  // namespace phalanx
