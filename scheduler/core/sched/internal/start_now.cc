#include "core/sched/internal/start_now.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/reserve_inputs.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/what_if.h"

namespace phalanx {

namespace {

// s.PlaceNow(job, request), answered from PassState::now_answers when a job of the pass asked the
// same of the same state (a search that depends on nothing of the job's own: no
// nodelist/exclude/constraint, no per-user limit). Only under placement under pressure, where
// held-back jobs leave the state as it was for the next: otherwise the first job asking either
// starts or fails for its shape (PassState::failed_shapes), and the fingerprint, once asked, is
// kept up to date at every Topology change of every pass (sched_bench's conservative pass: +12%).
std::optional<Placement> PlaceNowKept(SchedulerState& s, PassState& pass, const JobRecord& job,
                                      const PlacementRequest& request) {
  if (!s.config.keep_start_answers || s.config.placement_comm_share <= 0 || !job.forbidden_nodes.empty() ||
      pass.user_gpu_limits)
    return s.PlaceNow(job, request);
  const uint64_t partitions = PartitionMask(job.partition_ids);
  const uint64_t version = s.topo->version();
  const Topology::Fingerprint state = s.topo->fingerprint(s.topo->root());
  std::vector<PassState::NowAnswer>& kept = pass.now_answers;
  const auto same = std::find_if(kept.rbegin(), kept.rend(), [&](const PassState::NowAnswer& a) {
    return a.state == state && a.version == version && a.partitions == partitions && a.request == request;
  });
  if (same != kept.rend()) return same->placement;
  std::optional<Placement> p = s.PlaceNow(job, request);
  if (kept.size() == PassState::kKeptNowAnswers) kept.erase(kept.begin());
  kept.push_back({request, partitions, version, state, p});
  return p;
}

}  // namespace

std::optional<Placement> TryStartNow(SchedulerState& s, PassState& pass, const JobRecord& job) {
  pass.start_blocks.Set(s.reservations, pass.now + s.policies.runtime->Run(job), job.spec.id);
  const std::vector<uint32_t> sizes = s.LegalSizes(job);  // largest first
  const uint32_t min = sizes.back();
  // The block promised to this job in the previous pass, when it is all still free: starting
  // there keeps the promises made to the jobs after it.
  if (const PassState::Promise* own = pass.FindPromise(job.spec.id);
      own && !job.spec.shape.exclusive && own->gpus.size() == min &&
      std::all_of(own->gpus.begin(), own->gpus.end(), [&](GpuId g) { return s.topo->is_free(g); })) {
    Placement p;
    p.gpus = own->gpus;
    p.prediction = s.placer->model().Predict(p.gpus);
    if (p.prediction.busbw_gbs > 0 || p.gpus.size() == 1) return p;
  }
  auto smallest = PlaceNowKept(s, pass, job, SchedulerState::ShapeFor(job, min));
  if (!smallest || sizes.size() == 1) return smallest;
  // Larger elastic sizes are opportunistic: they may not take blocks promised to other jobs.
  // Feasibility is monotone in size, so binary search the sizes above the minimum.
  WhatIf promised(*s.topo);
  for (const PassState::Promise& other : pass.promised) {
    if (other.job != job.spec.id) promised.Block(other.gpus);
  }
  std::optional<Placement> best;
  size_t lo = 0, hi = sizes.size() - 1;  // candidates sizes[lo..hi), descending
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (auto p = s.PlaceNow(job, SchedulerState::ShapeFor(job, sizes[mid]))) {
      best = std::move(p);
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return best ? best : smallest;
}

std::optional<Placement> TryStartNowWithin(SchedulerState& s, PassState& pass, const JobRecord& job,
                                           const PlacementRequest& request) {
  pass.start_blocks.Set(s.reservations, pass.now + s.policies.runtime->Run(job), job.spec.id);
  // Its block from the last pass first, as TryStartNow: starting there keeps the promises made
  // to the jobs after it.
  if (const PassState::Promise* own = pass.FindPromise(job.spec.id);
      own && own->gpus.size() == request.TotalGpus() &&
      std::all_of(own->gpus.begin(), own->gpus.end(), [&](GpuId g) { return s.topo->is_free(g); })) {
    Placement p;
    p.gpus = own->gpus;
    p.prediction = s.placer->model().Predict(p.gpus);
    if (p.prediction.busbw_gbs >= request.min_busbw_gbs) return p;
  }
  return PlaceNowKept(s, pass, job, request);
}

void StartJob(SchedulerState& s, PassState& pass, JobRecord& job, const Placement& p, std::vector<Decision>& out) {
  const Time now = pass.now;
  std::vector<GpuId> all = p.gpus;
  all.insert(all.end(), p.held.begin(), p.held.end());
  std::sort(all.begin(), all.end());
  if (!s.topo->Allocate(job.spec.id, all, p.prediction.busbw_gbs)) return;  // cannot happen: placed on free GPUs
  const JobId id = job.spec.id;
  job.gpus = std::move(all);
  job.state = JobState::kRunning;
  job.start = now;
  job.service_until = now;
  job.last_checkpoint = now;
  job.last_checkpoint_request = now;
  job.run_walltime = RemainingWalltime(job);
  job.busbw_gbs = p.prediction.busbw_gbs;
  job.deferred_since = -1;
  job.patience_slower = -1;
  job.patience_plan.planned_at = -1;
  job.reserve_plan.planned_at = -1;
  job.claim.clear();
  job.victims.clear();
  job.wait = {};
  // Its claim (if it preempted) is no longer a reservation.
  if (const size_t erased =
          std::erase_if(s.reservations, [&](const Reservation& r) { return r.job == id && r.for_preemption; });
      erased > 0) {
    if (auto it = pass.reservations_of.find(id); it != pass.reservations_of.end() && (it->second -= erased) == 0)
      pass.reservations_of.erase(it);
    pass.start_blocks.Invalidate();
    ClearReservationWords(pass);  // the indexes moved
  }
  if (pass.gpu_bits_built) {
    for (GpuId g : job.gpus) pass.free_now_bits[g.value >> 6] &= ~(uint64_t{1} << (g.value & 63));
  }
  ++pass.release_gen;  // free now, and the release times (below)
  s.LeavePending(job);
  s.active.Insert(id, &job);
  if (!pass.ends_dirty) {
    const std::pair<Time, JobId> e{s.ReleaseTime(job), id};
    const auto at = std::upper_bound(pass.ends.begin(), pass.ends.end(), e);
    pass.ends_words.insert(pass.ends_words.begin() + (at - pass.ends.begin()), nullptr);
    pass.ends.insert(at, e);
  }
  (void)s.limits.RemovePending(job.spec.user, job.spec.account);
  s.limits.AddRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(job.gpus.size()));
  s.charged_until[id] = now;
  s.NoteTimers(job);
  Decision d;
  d.kind = DecisionKind::kStart;
  d.job = id;
  d.at = now;
  d.gpus = p.gpus;
  char buf[64];
  std::snprintf(buf, sizeof buf, "busbw %.1f GB/s", p.prediction.busbw_gbs);
  d.reason = buf;
  if (job.checkpoint_epoch > 0) d.reason += ", resume from checkpoint " + std::to_string(job.checkpoint_epoch);
  out.push_back(std::move(d));
}

}  // namespace phalanx
