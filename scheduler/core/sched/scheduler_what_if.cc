// Scheduler::WhatIfStart: when a job of a given shape, submitted now behind every pending job,
// would start. It asks the pass's own parts (TryStartNow, Reserve) on a PassState of its own,
// with the reservations of the last pass in place: what the next pass at `now` does for a real
// job at the back of the queue, short of the jobs ahead of it changing their minds.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/internal/node_filter.h"
#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/reserve.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/spec_checks.h"
#include "core/sched/internal/start_now.h"
#include "core/sched/scheduler.h"

namespace phalanx {

namespace {

using Answer = Scheduler::WhatIfAnswer;

// The record Submit would make of `spec` (scheduler.cc), with no id: no reservation, claim or
// promise names it.
JobRecord Hypothetical(const SchedulerState& s, const JobSpec& spec, PriorityClassId cls, Time now,
                       std::vector<uint32_t> partition_ids, std::vector<uint8_t> forbidden) {
  JobRecord rec;
  rec.partition_ids = std::move(partition_ids);
  rec.forbidden_nodes = std::move(forbidden);
  rec.spec.partitions = spec.partitions;
  rec.spec.user = spec.user;  // its partitions' max_gpus_per_user
  rec.spec.account = spec.account;
  rec.spec.shape = NormalisedShape(spec.shape);
  rec.spec.min_gpus = spec.min_gpus;
  rec.spec.step_kind = spec.step_kind;
  rec.spec.step = spec.step;
  rec.spec.priority_class = spec.priority_class;
  rec.spec.walltime = spec.walltime;
  rec.spec.submit = now;
  rec.class_rank = static_cast<int>(cls.value);
  rec.preemptible = spec.preemptible.value_or(s.classes.preemptible_by_default(cls));
  rec.walltime = spec.walltime > 0 ? spec.walltime : DefaultWalltime(s, rec.partition_ids);
  return rec;
}

Answer Ask(SchedulerState& s, PassState& pass, const JobRecord& job) {
  Answer a;
  const uint32_t n = s.MinLegalSize(job);
  if (std::string why = s.placer->Unsatisfiable(SchedulerState::ShapeFor(job, n)); !why.empty()) {
    a.wait = WaitKind::kUnsatisfiable;
    a.reason = std::move(why);
    return a;
  }
  if (std::string why = PartitionsUnsatisfiable(s, job.spec, job.partition_ids, n); !why.empty()) {
    a.wait = WaitKind::kUnsatisfiable;
    a.reason = std::move(why);
    return a;
  }
  if (const uint32_t allowed = AllowedGpus(*s.topo, job.forbidden_nodes); allowed < n) {
    a.wait = WaitKind::kUnsatisfiable;
    a.reason = "the nodes it may use (nodelist/exclude/constraint) have " + std::to_string(allowed) +
               " GPUs, it needs " + std::to_string(n);
    return a;
  }
  if (!s.PartitionOpen(job)) {
    // Until an admin brings one of its partitions up: no time can be predicted.
    const Partition& p = s.partitions.at(job.partition_ids.front());
    a.wait = WaitKind::kPartitionDown;
    a.reason = "partition " + p.name + " is " + std::string(PartitionStateName(p.state));
    return a;
  }
  // As ScheduleJob: start now (avoiding every reservation it would overlap), else reserve.
  if (auto p = TryStartNow(s, pass, job)) {
    pass.start_blocks.Clear();
    a.gpus = std::move(p->gpus);
    std::sort(a.gpus.begin(), a.gpus.end());
    a.start = pass.now;
    a.promised = true;
    return a;
  }
  const Topology& topo = *s.topo;
  a.wait = s.FreeGpusFor(job, pass.start_blocks) < n ? WaitKind::kResources : WaitKind::kTopologyBlock;
  pass.start_blocks.Clear();
  if (std::string why = s.UserLimitHit(job, n); !why.empty()) {
    // As the pass: it waits UserLimit, whatever the GPUs; the start below is when GPUs free up.
    a.wait = WaitKind::kUserLimit;
    a.reason = std::move(why);
  }
  size_t made = 0;
  size_t reserved_max = 0;  // reserve_larger: the largest block the backfill policy reserved
  for (const Reservation& r : s.reservations) {
    made += !r.for_preemption;
    if (!r.for_preemption && !r.for_patience) reserved_max = std::max(reserved_max, r.gpus.size());
  }
  a.promised = s.policies.backfill->Reserves(job.spec.submit, n, made, pass.now) ||
               (s.config.reserve_larger && s.config.backfill == BackfillMode::kEasy && n > reserved_max);
  if (!a.promised) {
    // Beyond the reservations the policy makes: the pass says higher-priority jobs hold them.
    if (made > 0) a.wait = WaitKind::kPriority;
  } else if (a.wait == WaitKind::kUserLimit) {
    a.promised = false;  // no reservation is made for a job over its limit
  } else if (a.wait == WaitKind::kTopologyBlock && !s.reservations.empty() &&
             s.PlaceNow(job, SchedulerState::ShapeFor(job, n))) {
    // It would fit, but only on GPUs promised to others.
    const Duration w = s.policies.runtime->Run(job);
    for (const Reservation& r : s.reservations) {
      if (r.start < pass.now + w) {
        a.wait = WaitKind::kReservedFor;
        a.reason = "job " + std::to_string(r.job);
        break;
      }
    }
  }
  if (auto r = Reserve(s, pass, job)) {
    a.start = r->start;
    a.gpus = std::move(r->gpus);
    std::sort(a.gpus.begin(), a.gpus.end());
    return a;
  }
  a.promised = false;
  uint32_t up = 0;
  for (uint32_t i = 0; i < topo.node_count(); ++i) {
    if (topo.node_state(NodeId(i)) == NodeState::kUp) up += topo.node_gpu_count(NodeId(i));
  }
  a.reason = up < n ? "only " + std::to_string(up) + " GPUs are on nodes that are up"
                    : "no block of " + std::to_string(n) + " GPUs frees up before the last planned release";
  return a;
}

}  // namespace

Result<Scheduler::WhatIfAnswer> Scheduler::WhatIfStart(const JobSpec& spec, Time now) const {
  auto all = WhatIfStarts({spec}, now);
  return std::move(all.front());
}

std::vector<Result<Scheduler::WhatIfAnswer>> Scheduler::WhatIfStarts(const std::vector<JobSpec>& specs,
                                                                     Time now) const {
  // The parts of a pass take the state by reference; they change the Topology only through
  // WhatIfs, undone before they return, and nothing else here is written to.
  SchedulerState& s = *s_;
  std::vector<Result<WhatIfAnswer>> out;
  out.reserve(specs.size());
  if (s.restoring) {
    for (size_t i = 0; i < specs.size(); ++i)
      out.push_back(Fail(ErrorCode::kFailedPrecondition, "restore", "restore in progress: call FinishRestore first"));
    return out;
  }
  now = std::max(now, s.now);
  PassBuffers buffers;
  PassState pass(*s.topo, buffers, now);
  for (const JobSpec& spec : specs) {
    auto cls = CheckShape(s, spec);
    if (!cls) {
      out.push_back(std::unexpected(cls.error()));
      continue;
    }
    auto ids = CheckPartitions(s, spec);
    if (!ids) {
      out.push_back(std::unexpected(ids.error()));
      continue;
    }
    JobSpec shaped = spec;
    shaped.shape = NormalisedShape(spec.shape);
    auto forbidden = ForbiddenNodes(*s.topo, shaped);
    if (!forbidden) {
      out.push_back(std::unexpected(forbidden.error()));
      continue;
    }
    out.push_back(Ask(s, pass, Hypothetical(s, spec, *cls, now, std::move(*ids), std::move(*forbidden))));
  }
  pass.start_blocks.Clear();
  return out;
}

}  // namespace phalanx
