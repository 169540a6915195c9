// Scheduler: restart recovery. The daemon puts back every job its store saved (Restore), then
// ends the restore (FinishRestore): see scheduler.h for the protocol and docs/scheduling.md,
// "Restoring after a restart".
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/scheduler.h"

namespace phalanx {

namespace {

std::string JobWhere(JobId id) { return "job " + std::to_string(id); }

bool IsActive(JobState s) { return s == JobState::kRunning || s == JobState::kCheckpointing; }

// "GPU 17 (n2:1)": the index the store saved and where it is.
std::string DescribeGpu(const Topology& t, GpuId g) { return "GPU " + std::to_string(g.value) + " (" + FormatGpus({g}, t) + ")"; }

}  // namespace

Status Scheduler::Restore(JobRecord record, Time now) {
  JobSpec& spec = record.spec;
  const std::string where = JobWhere(spec.id);
  if (auto s = CheckNewId(spec.id); !s) return s;
  auto cls = CheckShape(spec);
  if (!cls) return std::unexpected(cls.error());
  if (now < now_) return Fail("time", "restore must not go back in time (" + std::to_string(now) + " < " + std::to_string(now_) + ")");
  if (record.state > JobState::kKilled) return Fail(where, "state: unknown value " + std::to_string(static_cast<int>(record.state)));

  // Resources: checked in full before anything changes.
  const bool active = IsActive(record.state);
  const std::string state(JobStateName(record.state));
  std::vector<GpuId>& gpus = record.gpus;
  std::sort(gpus.begin(), gpus.end());
  const uint32_t cluster = static_cast<uint32_t>(topo_->gpu_count());
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuId g = gpus[i];
    if (g.value >= cluster) {
      return Fail(where, "gpus: unknown GPU " + std::to_string(g.value) + " (the cluster has " + std::to_string(cluster) + ")");
    }
    if (i > 0 && gpus[i - 1] == g) return Fail(where, "gpus: " + DescribeGpu(*topo_, g) + " listed twice");
  }
  if (!active && !gpus.empty()) {
    return Fail(where, "gpus: a " + state + " job holds no GPUs, the record lists " + FormatGpus(gpus, *topo_));
  }
  if (active && gpus.empty()) return Fail(where, "gpus: a " + state + " job holds GPUs, the record lists none");
  for (GpuId g : gpus) {
    if (const JobId owner = topo_->owner(g); owner != kNoJob) {
      return Fail(where, "gpus: " + DescribeGpu(*topo_, g) + " is already owned by job " + std::to_string(owner));
    }
    const NodeId node = topo_->node_of(g);
    if (topo_->node_state(node) == NodeState::kDown) {
      return Fail(where, "gpus: " + DescribeGpu(*topo_, g) + " is on node " + topo_->domain(topo_->node_domain(node)).name + ", which is down");
    }
  }
  for (GpuId g : record.shrink_to) {
    if (!std::binary_search(gpus.begin(), gpus.end(), g)) {
      return Fail(where, "shrink_to: GPU " + std::to_string(g.value) + " is not one of the job's GPUs");
    }
  }
  for (GpuId g : record.claim) {
    if (g.value >= cluster) {
      return Fail(where, "claim: unknown GPU " + std::to_string(g.value) + " (the cluster has " + std::to_string(cluster) + ")");
    }
  }
  if (record.after_checkpoint != JobRecord::After::kNothing && record.state != JobState::kCheckpointing) {
    return Fail(where, "after_checkpoint: set on a " + state + " job (only a checkpointing job has a checkpoint protocol in progress)");
  }
  double ring = 0;
  if (active) {
    // Provisional: FinishRestore recomputes every restored job's traffic in start order.
    ring = placer_->model().Predict(gpus).busbw_gbs;
    if (auto s = topo_->Restore(spec.id, gpus, ring); !s) return Fail(where, "gpus: " + s.error().ToString());
  }

  // Nothing fails from here on.
  spec.shape = NormalisedShape(spec.shape);
  record.class_rank = static_cast<int>(cls->value);
  record.preemptible = spec.preemptible.value_or(classes_.preemptible_by_default(*cls));
  record.priority = 0;
  record.wait = {};
  record.busbw_gbs = ring;
  // A record without its effective walltime gets it as Submit would.
  if (record.walltime <= 0) record.walltime = spec.walltime > 0 ? spec.walltime : config_.default_walltime;
  const JobId id = spec.id;
  JobRecord& job = jobs_.emplace(id, std::move(record)).first->second;
  if (job.state == JobState::kPending) {
    pending_.Insert(id, &job);
    limits_.AddPending(job.spec.user, job.spec.account);
  } else if (active) {
    active_.insert(id);
    limits_.AddRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(job.gpus.size()));
    charged_until_[id] = now;  // usage before the restart is not the core's to know
    ends_dirty_ = true;
    NoteTimer(NextTimer(job));
  }
  now_ = now;
  restoring_ = true;
  restored_.push_back(id);
  return {};
}

Result<std::vector<std::string>> Scheduler::FinishRestore(Time now) {
  if (!restoring_) return Fail("restore", "no restore in progress");
  if (now < now_) return Fail("time", "restore must not go back in time (" + std::to_string(now) + " < " + std::to_string(now_) + ")");
  std::sort(restored_.begin(), restored_.end());

  // Links to jobs that never came back are dropped; links between known jobs stay as saved.
  std::vector<std::string> notes;
  for (JobId id : restored_) {
    JobRecord& job = jobs_.at(id);
    const auto who = [&] { return JobWhere(id) + ": "; };  // rarely needed: not built per job
    std::erase_if(job.spec.after_ok, [&](JobId dep) {
      if (dep == id) {
        notes.push_back(who() + "dependency on itself dropped");
        return true;
      }
      if (jobs_.contains(dep)) return false;
      notes.push_back(who() + "dependency on unknown job " + std::to_string(dep) + " lifted");
      return true;
    });
    std::erase_if(job.victims, [&](JobId v) {
      if (jobs_.contains(v)) return false;
      notes.push_back(who() + "unknown victim " + std::to_string(v) + " dropped");
      return true;
    });
    if (job.preempted_for != kNoJob && !jobs_.contains(job.preempted_for)) {
      // As when the preemptor is cancelled: the victim keeps running.
      notes.push_back(who() + "preempted for unknown job " + std::to_string(job.preempted_for) + ": keeps running");
      job.preempted_for = kNoJob;
      job.after_checkpoint = JobRecord::After::kNothing;
      job.shrink_to.clear();
    }
  }

  // Traffic as if the running jobs had started in order: each predicted on the fabric as loaded
  // by those that started before it (and are still running), whatever the order of Restore.
  std::vector<std::pair<Time, JobId>> order;
  for (JobId id : restored_) {
    if (IsActive(jobs_.at(id).state)) order.push_back({jobs_.at(id).start, id});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [start, id] : order) (void)topo_->Release(id);
  for (const auto& [start, id] : order) {
    JobRecord& job = jobs_.at(id);
    job.busbw_gbs = placer_->model().Predict(job.gpus).busbw_gbs;
    (void)topo_->Restore(id, job.gpus, job.busbw_gbs);  // cannot fail: the same GPUs, nobody took them
  }
  ends_dirty_ = true;
  idle_since_ = std::max(idle_since_, now);  // elastic growth waits grow_after_idle after a restart
  now_ = now;
  restoring_ = false;
  restored_.clear();
  return notes;
}

}  // namespace phalanx
