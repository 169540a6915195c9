#include "core/sched/internal/elastic_growth.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/what_if.h"

namespace phalanx {

void GrowElastic(SchedulerState& s, const PassState& pass, std::vector<Decision>& out) {
  const Time now = pass.now;
  if (!s.config.elastic) return;
  if (pass.blocked || s.topo->free_gpus(s.topo->root()) == 0) {
    s.idle_since = now;
    return;
  }
  if (s.idle_since < s.last_freed) s.idle_since = s.last_freed;  // GPUs freed since: idle from then
  if (now - s.idle_since < s.config.grow_after_idle) return;
  for (const auto& [id, jp] : std::vector<JobSet::Entry>(s.active.Walk())) {  // a copy: jobs resize
    JobRecord& job = *jp;
    if (job.state != JobState::kRunning || job.spec.suspended || !job.spec.elastic() || job.spec.shape.exclusive)
      continue;
    const std::vector<uint32_t> sizes = s.LegalSizes(job);
    std::optional<Placement> grown;
    {
      WhatIf what_if(*s.topo);
      what_if.ReleaseJob(id);
      for (uint32_t size : sizes) {
        if (size <= job.gpus.size()) break;
        if ((grown = s.PlaceNow(job, SchedulerState::ShapeFor(job, size)))) break;
      }
    }
    if (!grown) continue;
    std::vector<GpuId> before = job.gpus;
    Decision d;
    d.kind = DecisionKind::kResize;
    d.job = id;
    d.at = now;
    std::vector<GpuId> after = grown->gpus;
    std::sort(after.begin(), after.end());
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(d.added));
    std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(d.removed));
    (void)s.limits.RemoveRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(before.size()));
    s.limits.AddRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(after.size()));
    SchedulerState::AccrueService(job, now);
    s.SetAllocation(job, after);
    job.busbw_gbs = grown->prediction.busbw_gbs;
    job.resizes++;
    d.gpus = job.gpus;
    d.reason = "grow: GPUs idle for " + std::to_string(now - s.idle_since) + "s";
    out.push_back(std::move(d));
  }
}

}  // namespace phalanx
