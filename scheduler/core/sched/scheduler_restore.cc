// Scheduler: restart recovery. The daemon puts back every job its store saved (Restore), then
// ends the restore (FinishRestore): see scheduler.h for the protocol and docs/scheduling.md,
// "Restoring after a restart".
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/internal/dependencies.h"
#include "core/sched/internal/node_filter.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/spec_checks.h"
#include "core/sched/scheduler.h"

namespace phalanx {

namespace {

// "GPU 17 (n2:1)": the index the store saved and where it is.
std::string DescribeGpu(const Topology& t, GpuId g) {
  return "GPU " + std::to_string(g.value) + " (" + FormatGpus({g}, t) + ")";
}

}  // namespace

Status Scheduler::Restore(JobRecord record, Time now) {
  SchedulerState& s = *s_;
  const Topology& topo = *s.topo;
  JobSpec& spec = record.spec;
  const std::string where = JobWhere(spec.id);
  PHX_RETURN_IF_ERROR(CheckNewId(s, spec.id));
  PHX_RETURN_IF_ERROR(CheckArrayFields(s, spec));
  auto cls = CheckShape(s, spec);
  PHX_RETURN_IF_ERROR(cls);
  // -w/-x/-C naming a node gone from the topology since (or allowing none now): every node is
  // forbidden, so the job waits Unsatisfiable, saying so, rather than failing the restore.
  auto forbidden = ForbiddenNodes(topo, spec);
  record.forbidden_nodes = forbidden ? std::move(*forbidden) : std::vector<uint8_t>(topo.node_count(), 1);
  if (now < s.now)
    return Fail("time",
                "restore must not go back in time (" + std::to_string(now) + " < " + std::to_string(s.now) + ")");
  if (record.state > JobState::kKilled)
    return Fail(where, "state: unknown value " + std::to_string(static_cast<int>(record.state)));

  // Resources: checked in full before anything changes.
  const bool active = HoldsGpus(record.state);
  const std::string state(JobStateName(record.state));
  std::vector<GpuId>& gpus = record.gpus;
  std::sort(gpus.begin(), gpus.end());
  const uint32_t cluster = static_cast<uint32_t>(topo.gpu_count());
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuId g = gpus[i];
    if (g.value >= cluster) {
      return Fail(
          where, "gpus: unknown GPU " + std::to_string(g.value) + " (the cluster has " + std::to_string(cluster) + ")");
    }
    if (i > 0 && gpus[i - 1] == g) return Fail(where, "gpus: " + DescribeGpu(topo, g) + " listed twice");
  }
  if (!active && !gpus.empty()) {
    return Fail(where, "gpus: a " + state + " job holds no GPUs, the record lists " + FormatGpus(gpus, topo));
  }
  if (active && gpus.empty()) return Fail(where, "gpus: a " + state + " job holds GPUs, the record lists none");
  for (GpuId g : gpus) {
    if (const JobId owner = topo.owner(g); owner != kNoJob) {
      return Fail(where, "gpus: " + DescribeGpu(topo, g) + " is already owned by job " + std::to_string(owner));
    }
    const NodeId node = topo.node_of(g);
    if (topo.node_state(node) == NodeState::kDown) {
      return Fail(where, "gpus: " + DescribeGpu(topo, g) + " is on node " + topo.domain(topo.node_domain(node)).name +
                             ", which is down");
    }
  }
  for (GpuId g : record.shrink_to) {
    if (!std::binary_search(gpus.begin(), gpus.end(), g)) {
      return Fail(where, "shrink_to: GPU " + std::to_string(g.value) + " is not one of the job's GPUs");
    }
  }
  for (GpuId g : record.claim) {
    if (g.value >= cluster) {
      return Fail(where, "claim: unknown GPU " + std::to_string(g.value) + " (the cluster has " +
                             std::to_string(cluster) + ")");
    }
  }
  if (record.after_checkpoint != JobRecord::After::kNothing && record.state != JobState::kCheckpointing) {
    return Fail(where, "after_checkpoint: set on a " + state +
                           " job (only a checkpointing job has a checkpoint protocol in progress)");
  }
  if (record.spec.suspended && record.state != JobState::kRunning)
    return Fail(where, "spec.suspended: set on a " + state + " job (only a running job can be suspended)");
  double ring = 0;
  if (active) {
    // Provisional: FinishRestore recomputes every restored job's traffic in start order.
    ring = s.placer->model().Predict(gpus).busbw_gbs;
    if (auto restored = s.topo->Restore(spec.id, gpus, ring); !restored)
      return Fail(where, "gpus: " + restored.error().ToString());
  }

  // Nothing fails from here on.
  spec.shape = NormalisedShape(spec.shape);
  record.class_rank = static_cast<int>(cls->value);
  record.preemptible = spec.preemptible.value_or(s.classes.preemptible_by_default(*cls));
  record.priority = 0;
  record.wait = {};
  record.busbw_gbs = ring;
  // A record without its effective walltime gets it as Submit would.
  // A partition no longer configured: the job keeps its names and waits Unsatisfiable.
  auto ids = s.partitions.Resolve(spec.partitions);
  record.partition_ids = ids ? *ids : std::vector<uint32_t>{};
  if (record.walltime <= 0)
    record.walltime = spec.walltime > 0 ? spec.walltime : DefaultWalltime(s, record.partition_ids);
  const JobId id = spec.id;
  JobRecord& job = s.jobs.emplace(id, std::move(record)).first->second;
  IndexArrayTask(s, job);
  if (job.state == JobState::kPending) {
    s.EnterPending(job);
    // A claim made under preemption before the restart: the kept FIFO order does not reserve
    // claims (scheduler_pass.cc, KeptOrder).
    if (!job.claim.empty() || !job.victims.empty()) s.pending_claims = true;
    s.limits.AddPending(job.spec.user, job.spec.account);
  } else if (active) {
    s.active.Insert(id, &job);
    s.limits.AddRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(job.gpus.size()));
    s.charged_until[id] = now;  // usage before the restart is not the core's to know
    // A record without a service time (a store that does not keep it) accrues from now.
    if (job.service_until < job.start || job.service_until > now) job.service_until = now;
    s.NoteTimers(job);
  }
  s.now = now;
  s.restoring = true;
  s.backfill_idle = false;
  s.restored.push_back(id);
  return {};
}

Result<std::vector<std::string>> Scheduler::FinishRestore(Time now) {
  SchedulerState& s = *s_;
  if (!s.restoring) return Fail(ErrorCode::kFailedPrecondition, "restore", "no restore in progress");
  if (now < s.now)
    return Fail("time",
                "restore must not go back in time (" + std::to_string(now) + " < " + std::to_string(s.now) + ")");
  std::sort(s.restored.begin(), s.restored.end());

  // Links to jobs that never came back are dropped; links between known jobs stay as saved.
  std::vector<std::string> notes;
  for (JobId id : s.restored) {
    JobRecord& job = s.jobs.at(id);
    const auto who = [&] { return JobWhere(id) + ": "; };  // rarely needed: not built per job
    std::erase_if(job.spec.after_ok, [&](JobId dep) {
      if (dep == id) {
        notes.push_back(who() + "dependency on itself dropped");
        return true;
      }
      if (s.jobs.contains(dep) || s.arrays.contains(dep)) return false;
      notes.push_back(who() + "dependency on unknown job " + std::to_string(dep) + " lifted");
      return true;
    });
    std::erase_if(job.spec.depends.items, [&](const DependItem& d) {
      if (d.kind == DependKind::kSingleton) return false;
      const bool known =
          d.task ? ArrayTaskJob(s, d.job, *d.task) != kNoJob : s.jobs.contains(d.job) || s.arrays.contains(d.job);
      if (known && !(d.job == id && !d.task)) return false;
      notes.push_back(who() + "dependency " + FormatDependItem(d) +
                      (known ? " on itself dropped" : " on an unknown job lifted"));
      return true;
    });
    std::erase_if(job.victims, [&](JobId v) {
      if (s.jobs.contains(v)) return false;
      notes.push_back(who() + "unknown victim " + std::to_string(v) + " dropped");
      return true;
    });
    if (job.preempted_for != kNoJob && !s.jobs.contains(job.preempted_for)) {
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
  for (JobId id : s.restored) {
    if (HoldsGpus(s.jobs.at(id).state)) order.push_back({s.jobs.at(id).start, id});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [start, id] : order) (void)s.topo->Release(id);
  for (const auto& [start, id] : order) {
    JobRecord& job = s.jobs.at(id);
    job.busbw_gbs = s.placer->model().Predict(job.gpus).busbw_gbs;
    (void)s.topo->Restore(id, job.gpus, job.busbw_gbs);  // cannot fail: the same GPUs, nobody took them
  }
  s.idle_since = std::max(s.idle_since, now);  // elastic growth waits grow_after_idle after a restart
  s.now = now;
  s.restoring = false;
  s.restored.clear();
  return notes;
}

}  // namespace phalanx
