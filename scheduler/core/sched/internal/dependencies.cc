#include "core/sched/internal/dependencies.h"

#include <algorithm>
#include <vector>

#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/spec_checks.h"

namespace phalanx {
namespace {

bool Failed(JobState st) { return st == JobState::kFailed || st == JobState::kCancelled || st == JobState::kKilled; }

// One job against one kind.
DependState OfJob(DependKind kind, const JobRecord& d) {
  switch (kind) {
    case DependKind::kAfter: return d.state != JobState::kPending ? DependState::kMet : DependState::kWaiting;
    case DependKind::kAfterAny: return IsFinal(d.state) ? DependState::kMet : DependState::kWaiting;
    case DependKind::kAfterOk:
      if (d.state == JobState::kCompleted) return DependState::kMet;
      return Failed(d.state) ? DependState::kNever : DependState::kWaiting;
    case DependKind::kAfterNotOk:
      if (Failed(d.state)) return DependState::kMet;
      return d.state == JobState::kCompleted ? DependState::kNever : DependState::kWaiting;
    case DependKind::kSingleton: break;
  }
  return DependState::kMet;
}

struct ItemCheck {
  DependState state;
  std::string why;  // for kNever: "job 12 failed"
};

ItemCheck OfItem(const SchedulerState& s, PassState& pass, const JobRecord& job, const DependItem& item) {
  if (item.kind == DependKind::kSingleton) {
    if (!pass.named_built) {  // on the first singleton of the pass
      for (const JobRecord* j : pass.named_jobs) pass.named_active.emplace(j->spec.user, j->spec.name);
      pass.named_jobs.clear();
      pass.named_built = true;
    }
    return {pass.named_active.contains({job.spec.user, job.spec.name}) ? DependState::kWaiting : DependState::kMet, {}};
  }
  const auto never = [](const JobRecord& d) {
    return ItemCheck{DependState::kNever,
                     "job " + std::to_string(d.spec.id) + " " + std::string(JobStateName(d.state))};
  };
  // A job, or one task of an array (an array's id is never a job's).
  JobId target = item.job;
  if (item.task) target = ArrayTaskJob(s, item.job, *item.task);
  if (auto d = s.jobs.find(target); target != kNoJob && d != s.jobs.end()) {
    const DependState st = OfJob(item.kind, d->second);
    return st == DependState::kNever ? never(d->second) : ItemCheck{st, {}};
  }
  auto it = s.arrays.find(item.job);
  if (it == s.arrays.end()) return {DependState::kMet, {}};  // gone (FinishRestore drops such items)
  // A whole array. afternotok: every task ended, at least one not ok.
  if (item.kind == DependKind::kAfterNotOk) {
    bool all_final = true, any_failed = false;
    for (JobId t : it->second) {
      const JobState st = s.jobs.at(t).state;
      all_final = all_final && IsFinal(st);
      any_failed = any_failed || Failed(st);
    }
    if (!all_final) return {DependState::kWaiting, {}};
    if (any_failed) return {DependState::kMet, {}};
    return {DependState::kNever, "every task of array " + std::to_string(item.job) + " completed"};
  }
  DependState out = DependState::kMet;
  for (JobId t : it->second) {
    const JobRecord& d = s.jobs.at(t);
    const DependState st = OfJob(item.kind, d);
    if (st == DependState::kNever) {
      return {DependState::kNever, "task " + std::to_string(d.spec.array_task) + " (job " + std::to_string(t) + ") " +
                                       std::string(JobStateName(d.state))};
    }
    if (st == DependState::kWaiting) out = DependState::kWaiting;
  }
  return {out, {}};
}

Status CheckTarget(const SchedulerState& s, const JobSpec& spec, const DependItem& item) {
  const std::string where = JobWhere(spec.id);
  const std::string what = FormatDependItem(item);
  if (item.kind == DependKind::kSingleton) return {};
  if (!item.task && item.job == spec.id) return Fail(where, "dependency " + what + ": a job cannot depend on itself");
  if (spec.array_id != kNoJob && item.job == spec.array_id)
    return Fail(where, "dependency " + what + ": a task cannot depend on its own array");
  if (item.task) {
    if (!s.arrays.contains(item.job))
      return Fail(ErrorCode::kNotFound, where,
                  "dependency " + what + ": " + std::to_string(item.job) + " is not an array");
    if (ArrayTaskJob(s, item.job, *item.task) == kNoJob)
      return Fail(
          ErrorCode::kNotFound, where,
          "dependency " + what + ": array " + std::to_string(item.job) + " has no task " + std::to_string(*item.task));
  } else if (!s.jobs.contains(item.job) && !s.arrays.contains(item.job)) {
    return Fail(ErrorCode::kNotFound, where,
                "dependency " + what + ": dependency on unknown job " + std::to_string(item.job));
  }
  return {};
}

}  // namespace

DependCheck CheckDependencies(const SchedulerState& s, PassState& pass, const JobRecord& job) {
  const JobSpec& spec = job.spec;
  if (spec.after_ok.empty() && spec.depends.empty()) return {};
  const bool any = spec.depends.any;
  bool waiting = false, all_never = true;
  std::string first_waiting, first_never;
  const auto take = [&](const DependItem& item) -> bool {  // true: decided
    const ItemCheck c = OfItem(s, pass, job, item);
    if (c.state == DependState::kMet) {
      all_never = false;
      return any;
    }
    if (c.state == DependState::kWaiting) {
      all_never = false;
      if (!waiting) first_waiting = FormatDependItem(item);
      waiting = true;
      return false;
    }
    if (first_never.empty()) first_never = FormatDependItem(item) + (c.why.empty() ? "" : " (" + c.why + ")");
    return !any;
  };
  for (JobId dep : spec.after_ok) {
    if (take(DependItem{DependKind::kAfterOk, dep, std::nullopt})) {
      return any ? DependCheck{} : DependCheck{DependState::kNever, first_never};
    }
  }
  for (const DependItem& item : spec.depends.items) {
    if (take(item)) return any ? DependCheck{} : DependCheck{DependState::kNever, first_never};
  }
  if (any && all_never) return {DependState::kNever, first_never};
  if (waiting) return {DependState::kWaiting, first_waiting};
  return {};
}

Status CheckDependencyTargets(const SchedulerState& s, const JobSpec& spec) {
  const std::string where = JobWhere(spec.id);
  if (spec.depends.any && !spec.after_ok.empty())
    return Fail(where, "after_ok: cannot be combined with a '?' (any of them) dependency");
  for (JobId dep : spec.after_ok) {
    if (dep == spec.id) return Fail(where, "after_ok: a job cannot depend on itself");
    if (!s.jobs.contains(dep) && !s.arrays.contains(dep))
      return Fail(ErrorCode::kNotFound, where, "after_ok: dependency on unknown job " + std::to_string(dep));
  }
  if (spec.depends.items.size() > kMaxDependItems)
    return Fail(where, "depends: " + std::to_string(spec.depends.items.size()) + " dependencies; at most " +
                           std::to_string(kMaxDependItems));
  for (const DependItem& item : spec.depends.items) PHX_RETURN_IF_ERROR(CheckTarget(s, spec, item));
  return {};
}

Status CheckArrayFields(const SchedulerState& s, const JobSpec& spec) {
  const std::string where = JobWhere(spec.id);
  if (s.arrays.contains(spec.id))
    return Fail(ErrorCode::kAlreadyExists, where, "id " + std::to_string(spec.id) + " is an array's id");
  if (spec.array_id == kNoJob) {
    if (spec.array_max_running != 0) return Fail(where, "array_max_running: set on a job that is not an array task");
    return {};
  }
  if (spec.array_id == spec.id || s.jobs.contains(spec.array_id))
    return Fail(where, "array_id " + std::to_string(spec.array_id) + ": a job's id, not an array's");
  if (spec.array_task >= s.config.max_array_size)
    return Fail(where, "array_task " + std::to_string(spec.array_task) + " is not below max_array_size " +
                           std::to_string(s.config.max_array_size));
  if (spec.array_id >= (uint64_t{1} << 62))
    return Fail(where, "array_id " + std::to_string(spec.array_id) + ": ids must be in 1..2^62-1");
  if (ArrayTaskJob(s, spec.array_id, spec.array_task) != kNoJob)
    return Fail(ErrorCode::kAlreadyExists, where,
                "array " + std::to_string(spec.array_id) + " already has task " + std::to_string(spec.array_task));
  return {};
}

void IndexArrayTask(SchedulerState& s, const JobRecord& job) {
  if (job.spec.array_id == kNoJob) return;
  std::vector<JobId>& tasks = s.arrays[job.spec.array_id];
  const uint32_t task = job.spec.array_task;
  // Tasks come in index order from a submission: appending is the common case.
  if (tasks.empty() || s.jobs.at(tasks.back()).spec.array_task < task) {
    tasks.push_back(job.spec.id);
    return;
  }
  auto it = std::lower_bound(tasks.begin(), tasks.end(), task,
                             [&](JobId id, uint32_t t) { return s.jobs.at(id).spec.array_task < t; });
  tasks.insert(it, job.spec.id);
}

JobId ArrayTaskJob(const SchedulerState& s, JobId array, uint32_t task) {
  auto a = s.arrays.find(array);
  if (a == s.arrays.end()) return kNoJob;
  const std::vector<JobId>& tasks = a->second;
  auto it = std::lower_bound(tasks.begin(), tasks.end(), task,
                             [&](JobId id, uint32_t t) { return s.jobs.at(id).spec.array_task < t; });
  return it != tasks.end() && s.jobs.at(*it).spec.array_task == task ? *it : kNoJob;
}

void NoteActiveJobs(const SchedulerState& s, PassState& pass) {
  for (const auto& [id, job] : s.active.Walk()) NoteStarted(pass, *job);
}

void NoteStarted(PassState& pass, const JobRecord& job) {
  if (job.spec.array_id != kNoJob) ++pass.array_active[job.spec.array_id];
  if (pass.named_built) pass.named_active.emplace(job.spec.user, job.spec.name);
  else pass.named_jobs.push_back(&job);
}

}  // namespace phalanx
