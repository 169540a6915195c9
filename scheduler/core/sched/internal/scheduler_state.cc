#include "core/sched/internal/scheduler_state.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "core/placement/simple_placers.h"
#include "core/sched/internal/node_filter.h"
#include "core/sched/internal/timers.h"
#include "core/sched/internal/what_if.h"

namespace phalanx {

SchedulerState::SchedulerState(Topology topology, SchedulerConfig cfg, PriorityClassTable cls, FairshareTracker fs)
    : topo(std::make_unique<Topology>(std::move(topology))),
      placer(std::make_unique<Placer>(*topo, cfg.model)),
      config(std::move(cfg)),
      classes(std::move(cls)),
      fairshare(std::move(fs)),
      limits(config.limits),
      policies(MakePolicies({config, classes, fairshare, history, static_cast<uint32_t>(topo->gpu_count())})) {
  placer->set_best_fit(config.best_fit);
  placer->set_node_fit_tolerance(config.node_fit_tolerance);
}

std::optional<Placement> SchedulerState::PlaceNow(const PlacementRequest& request,
                                                  std::span<const DomainId> within) const {
  return PlaceOn(*topo, *placer, request, within);
}

std::optional<Placement> SchedulerState::PlaceNow(const JobRecord& job, const PlacementRequest& request,
                                                  std::span<const DomainId> within) const {
  return PlaceOn(*topo, *placer, job, request, within);
}

std::optional<Placement> SchedulerState::PlaceOn(Topology& t, Placer& placer_on, const PlacementRequest& request,
                                                 std::span<const DomainId> within) const {
  PlaceOutcome out;
  switch (config.placement) {
    case PlacementMode::kTopology:
      out = within.empty() ? placer_on.Place(request) : placer_on.PlaceWithin(request, within);
      break;
    case PlacementMode::kNodeBestFit: out = PlaceNodeBestFit(t, placer_on.model(), placer_on, request); break;
    case PlacementMode::kFirstFit: out = PlaceFirstFit(t, placer_on.model(), placer_on, request); break;
  }
  if (out.status != PlaceStatus::kPlaced) return std::nullopt;
  // The Placer honours the floor itself; the simple placers' one choice is checked here.
  if (out.placement.prediction.busbw_gbs < request.min_busbw_gbs) return std::nullopt;
  return std::move(out.placement);
}

std::optional<Placement> SchedulerState::PlaceOn(Topology& t, Placer& placer_on, const JobRecord& job,
                                                 const PlacementRequest& request,
                                                 std::span<const DomainId> within) const {
  const NodeFilter filter(t, job.forbidden_nodes);  // -w/-x/-C: only the allowed nodes
  for (uint32_t i : job.partition_ids) {
    const Partition& part = partitions.at(i);
    if (!StartsJobs(part.state) || !UnderUserLimit(job, i, request.gpus)) continue;
    if (part.all_nodes) {
      if (auto p = PlaceOn(t, placer_on, request, within)) return p;
      continue;
    }
    WhatIf fence(t);
    fence.Block(part.outside);
    if (auto p = PlaceOn(t, placer_on, request, within)) return p;
  }
  return std::nullopt;
}

uint32_t SchedulerState::UserGpusIn(const std::string& user, uint32_t part, JobId except) const {
  uint32_t n = 0;
  for (const auto& [id, jp] : active.Walk()) {
    if (id == except) continue;
    const JobRecord& j = *jp;
    if (j.spec.user != user || j.gpus.empty() || j.partition_ids.empty()) continue;
    if (partitions.Holding(j.partition_ids, j.gpus, *topo) == part) n += static_cast<uint32_t>(j.gpus.size());
  }
  return n;
}

std::string SchedulerState::UserLimitHit(const JobRecord& job, uint32_t n) const {
  std::string why;
  for (uint32_t i : job.partition_ids) {
    const Partition& p = partitions.at(i);
    if (!StartsJobs(p.state)) continue;
    if (UnderUserLimit(job, i, n)) return {};
    if (why.empty()) {
      why = "partition " + p.name + ": MaxGPUsPerUser " + std::to_string(p.max_gpus_per_user) + ", " + job.spec.user +
            " holds " + std::to_string(UserGpusIn(job.spec.user, i, job.spec.id));
    }
  }
  return why;
}

namespace {

// Whether `job`'s GPUs are counted by partition: none of its partitions is every node.
bool CountedByPartition(const SchedulerState& s, const JobRecord& job) {
  return !job.partition_ids.empty() && std::none_of(job.partition_ids.begin(), job.partition_ids.end(),
                                                    [&](uint32_t i) { return s.partitions.at(i).all_nodes; });
}

}  // namespace

uint32_t SchedulerState::FreeGpusFor(const JobRecord& job, StartBlocks& blocks) const {
  const bool fenced = CountedByPartition(*this, job);
  if (!fenced && job.forbidden_nodes.empty()) return FreeGpusNowFor(job) + static_cast<uint32_t>(blocks.blocked_gpus());
  if (fenced) blocks.Clear();
  return FreeGpusNowFor(job);
}

uint32_t SchedulerState::FreeGpusNowFor(const JobRecord& job) const {
  const std::vector<uint8_t>& forbidden = job.forbidden_nodes;
  const bool fenced = CountedByPartition(*this, job);
  if (!fenced) return forbidden.empty() ? topo->free_gpus(topo->root()) : FreeAllowedGpus(*topo, forbidden);
  uint32_t best = 0;
  for (uint32_t i : job.partition_ids) {
    const Partition& p = partitions.at(i);
    if (!StartsJobs(p.state)) continue;
    uint32_t free = 0;
    for (uint32_t node = 0; node < p.has_node.size(); ++node) {
      if (p.has_node[node] && (forbidden.empty() || !forbidden[node]))
        free += topo->free_gpus(topo->node_domain(NodeId(node)));
    }
    best = std::max(best, free);
  }
  return best;
}

bool SchedulerState::PartitionOpen(const JobRecord& job) const {
  return std::any_of(job.partition_ids.begin(), job.partition_ids.end(),
                     [&](uint32_t i) { return StartsJobs(partitions.at(i).state); });
}

const SchedulerState::BestBlock& SchedulerState::Best(uint32_t gpus) {
  auto it = best_blocks.find(gpus);
  if (it != best_blocks.end()) return it->second;
  if (!empty_topo) {
    empty_topo = std::make_unique<Topology>(*topo);
    for (const auto& [id, job] : jobs) {
      if (!job.gpus.empty()) (void)empty_topo->Release(id);
    }
    empty_placer = std::make_unique<Placer>(*empty_topo, config.model);
  }
  BestBlock b;
  PlacementRequest r;
  r.gpus = gpus;
  const PlaceOutcome o = empty_placer->Place(r);
  if (o.status == PlaceStatus::kPlaced && !o.placement.gpus.empty()) {
    b.busbw_gbs = o.placement.prediction.busbw_gbs;
    DomainId d = empty_topo->gpu_domain(o.placement.gpus.front());
    for (GpuId g : o.placement.gpus) d = empty_topo->lowest_common_ancestor(d, empty_topo->gpu_domain(g));
    b.level = std::max(empty_topo->domain(d).level, Level::kNode);
  }
  return best_blocks.emplace(gpus, b).first->second;
}

bool SchedulerState::DepthsByLevel(uint32_t gpus) {
  auto [it, added] = depths_by_level.try_emplace(gpus, true);
  if (added) {
    std::map<Level, uint32_t> depth;
    for (uint32_t i = 0; i < topo->domain_count() && it->second; ++i) {
      const Domain& d = topo->domain(DomainId(i));
      if (d.gpu_count >= gpus) it->second = depth.try_emplace(d.level, d.depth).first->second == d.depth;
    }
  }
  return it->second;
}

Time SchedulerState::ReleaseTime(const JobRecord& r) const {
  Time t = policies.runtime->End(r, now);
  if (r.state == JobState::kCheckpointing && r.after_checkpoint == JobRecord::After::kPreempt)
    t = std::min(t, r.checkpoint_deadline);
  return std::max(t, now);
}

void SchedulerState::NoteTimers(const JobRecord& job) { NoteTimer(NextTimer(config, job)); }

void SchedulerState::SetAllocation(JobRecord& job, std::vector<GpuId> gpus) {
  if (!job.gpus.empty()) (void)topo->Release(job.spec.id);
  std::sort(gpus.begin(), gpus.end());
  job.gpus = std::move(gpus);
  if (!job.gpus.empty()) {
    const double ring = placer->model().Predict(job.gpus).busbw_gbs;
    (void)topo->Restore(job.spec.id, job.gpus, ring);
  }
}

void SchedulerState::StopJob(JobRecord& job, Time at) {
  AccrueService(job, at);
  if (!job.gpus.empty()) {
    const double secs = static_cast<double>(at - charged_until[job.spec.id]) * static_cast<double>(job.gpus.size());
    if (secs > 0) (void)fairshare.Charge(job.spec.user, job.spec.account, secs, at);
    (void)limits.RemoveRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(job.gpus.size()));
    (void)topo->Release(job.spec.id);
    job.gpus.clear();
    last_freed = at;
  }
  charged_until.erase(job.spec.id);
  active.Erase(job.spec.id);
  // A preemptor that goes away frees its victims' claim; a victim that ends unblocks its preemptor.
  for (JobId v : job.victims) {
    if (JobRecord* victim = Find(v); victim && victim->preempted_for == job.spec.id) victim->preempted_for = kNoJob;
  }
  job.victims.clear();
  if (job.preempted_for != kNoJob) {
    if (JobRecord* p = Find(job.preempted_for)) std::erase(p->victims, job.spec.id);
    job.preempted_for = kNoJob;
  }
  job.after_checkpoint = JobRecord::After::kNothing;
  job.shrink_to.clear();
  job.spec.suspended = false;  // a run that ends (cancel, requeue, node failure) is not suspended any more
  job.spec.suspended_at = 0;
}

void SchedulerState::Requeue(JobRecord& job, Time at, std::string reason, std::vector<Decision>& out) {
  const JobId preemptor = job.preempted_for;
  const std::vector<GpuId> freed = job.gpus;
  job.gpu_seconds_lost += static_cast<double>(job.gpus.size()) * static_cast<double>(at - job.last_checkpoint);
  StopJob(job, at);
  if (preemptor != kNoJob) {
    if (JobRecord* p = Find(preemptor); p && p->state == JobState::kPending) {
      p->claim.insert(p->claim.end(), freed.begin(), freed.end());
    }
  }
  job.state = JobState::kPending;
  job.preemptions++;
  EnterPending(job);
  limits.AddPending(job.spec.user, job.spec.account);
  Decision d;
  d.kind = DecisionKind::kPreempt;
  d.job = job.spec.id;
  d.at = at;
  d.requeue = true;
  d.reason = std::move(reason);
  out.push_back(std::move(d));
}

void SchedulerState::Kill(JobRecord& job, Time at, std::string reason, std::vector<Decision>& out) {
  job.state = JobState::kKilled;
  job.end = at;
  Decision d;
  d.kind = DecisionKind::kKill;
  d.job = job.spec.id;
  d.at = at;
  d.reason = std::move(reason);
  out.push_back(std::move(d));
}

void SchedulerState::FinishShrink(JobRecord& job, Time at, std::vector<Decision>& out) {
  const std::vector<GpuId> before = job.gpus;
  std::vector<GpuId> keep = job.shrink_to;
  std::sort(keep.begin(), keep.end());
  Decision d;
  d.kind = DecisionKind::kResize;
  d.job = job.spec.id;
  d.at = at;
  std::set_difference(before.begin(), before.end(), keep.begin(), keep.end(), std::back_inserter(d.removed));
  // Charge usage up to now at the old size, then run on the smaller set.
  const double secs = static_cast<double>(at - charged_until[job.spec.id]) * static_cast<double>(before.size());
  if (secs > 0) (void)fairshare.Charge(job.spec.user, job.spec.account, secs, at);
  charged_until[job.spec.id] = at;
  (void)limits.RemoveRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(before.size() - keep.size()));
  const JobId preemptor = job.preempted_for;
  if (preemptor != kNoJob) {
    if (JobRecord* p = Find(preemptor)) {
      std::erase(p->victims, job.spec.id);
      if (p->state == JobState::kPending) p->claim.insert(p->claim.end(), d.removed.begin(), d.removed.end());
    }
  }
  job.preempted_for = kNoJob;
  last_freed = at;
  AccrueService(job, at);
  SetAllocation(job, keep);
  // The job restarts on the smaller set from its last checkpoint: a new run.
  job.start = at;
  job.last_checkpoint = at;
  job.last_checkpoint_request = at;
  job.run_walltime = RemainingWalltime(job);
  job.state = JobState::kRunning;
  job.after_checkpoint = JobRecord::After::kNothing;
  job.shrink_to.clear();
  NoteTimers(job);
  job.resizes++;
  d.gpus = job.gpus;
  d.reason = preemptor != kNoJob ? "shrunk for job " + std::to_string(preemptor) : "shrunk";
  out.push_back(std::move(d));
}

void SchedulerState::EnterPending(JobRecord& job) {
  pending.Insert(job.spec.id, &job);
  if (job.spec.top > 0) ++topped_pending;
  if (KeepsFifo()) fifo.insert({job.spec.submit, job.spec.id, &job});
  if (keys_valid) keys_entered.push_back(&job);
}

void SchedulerState::LeavePending(JobRecord& job) {
  pending.Erase(job.spec.id);
  if (job.spec.top > 0) --topped_pending;
  if (KeepsFifo()) fifo.erase({job.spec.submit, job.spec.id, nullptr});
  if (keys_valid) keys_left.push_back(job.spec.id);
}

const std::vector<JobId>& SchedulerState::Queue() {
  if (queue_stale) {
    queue.clear();
    for (const FifoEntry& e : fifo) {
      if (e.job->state == JobState::kPending) queue.push_back(e.id);
    }
    queue_stale = false;
  }
  return queue;
}

}  // namespace phalanx
