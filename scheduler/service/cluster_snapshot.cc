#include "service/cluster_snapshot.h"

#include <algorithm>
#include <array>

#include "service/api_views.h"

namespace phalanx::service {

BestBusbw::BestBusbw(const Topology& cluster) : empty_(cluster) {
  std::vector<JobId> owners;
  for (uint32_t g = 0; g < empty_.gpu_count(); ++g) {
    const JobId o = empty_.owner(GpuId(g));
    if (o == Topology::kHeld) (void)empty_.Unhold(std::vector<GpuId>{GpuId(g)});
    else if (o != kNoJob) owners.push_back(o);
  }
  std::sort(owners.begin(), owners.end());
  owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
  for (JobId j : owners) (void)empty_.Release(j);
  for (uint32_t n = 0; n < empty_.node_count(); ++n) (void)empty_.SetNodeState(NodeId(n), NodeState::kUp);
  placer_ = std::make_unique<Placer>(empty_);
}

double BestBusbw::For(uint32_t gpus) {
  auto it = cache_.find(gpus);
  if (it != cache_.end()) return it->second;
  PlacementRequest r;
  r.gpus = gpus;
  const PlaceOutcome o = placer_->Place(r);
  const double b = o.status == PlaceStatus::kPlaced ? o.placement.prediction.busbw_gbs : 0;
  cache_[gpus] = b;
  return b;
}

std::string_view JobSizeBucket(uint32_t gpus) {
  if (gpus <= 1) return kJobSizeBuckets[0];
  if (gpus <= 8) return kJobSizeBuckets[1];
  if (gpus <= 64) return kJobSizeBuckets[2];
  return kJobSizeBuckets[3];
}

ClusterSnapshot TakeSnapshot(Controller& c, BestBusbw* best, std::map<JobId, Time>* first_predicted) {
  ClusterSnapshot s;
  s.now = c.Now();
  const Topology& topo = c.core().topology();
  s.gpus_total = static_cast<uint32_t>(topo.gpu_count());
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    const JobId owner = topo.owner(GpuId(g));
    const NodeState ns = topo.node_state(topo.node_of(GpuId(g)));
    if (owner != kNoJob && owner != Topology::kHeld) ++s.gpus_allocated;
    else if (ns == NodeState::kDown) ++s.gpus_down;
    else if (ns == NodeState::kDrain) ++s.gpus_drained;
    else ++s.gpus_idle;  // free, or held for a moment by a what-if (none between passes)
  }
  for (uint32_t n = 0; n < topo.node_count(); ++n) {
    switch (topo.node_state(NodeId(n))) {
      case NodeState::kUp: ++s.nodes_up; break;
      case NodeState::kDrain: ++s.nodes_drained; break;
      case NodeState::kDown: ++s.nodes_down; break;
    }
  }

  for (const char* st : {"pending", "running", "checkpointing"}) s.jobs_by_state[st] = 0;
  for (std::string_view b : kJobSizeBuckets) s.reservation_overdue_s[std::string(b)] = 0;
  double eff_weight = 0, eff_score = 0;
  std::map<JobId, Time> still_pending;
  for (const auto& [id, job] : c.core().jobs()) {
    s.job_losses[id] = {job.preemptions, job.gpu_seconds_lost};
    if (IsFinal(job.state)) continue;
    s.jobs_by_state[std::string(JobStateName(job.state))] += 1;
    if (job.state == JobState::kPending) {
      s.queue_by_reason[std::string(WaitKindName(job.wait.kind))] += 1;
      if (first_predicted != nullptr) {
        auto it = first_predicted->find(id);
        Time first = it != first_predicted->end() ? it->second : kForever;
        if (first == kForever && job.wait.predicted_start != kForever && job.wait.predicted_start > 0)
          first = job.wait.predicted_start;
        still_pending[id] = first;
        if (first != kForever && s.now > first) {
          double& late = s.reservation_overdue_s[std::string(JobSizeBucket(job.spec.shape.gpus))];
          late = std::max(late, static_cast<double>(s.now - first));
        }
      }
      continue;
    }
    const uint32_t held = static_cast<uint32_t>(job.gpus.size());
    s.user_gpus[job.spec.user] += held;
    s.account_gpus[job.spec.account] += held;
    if (job.state == JobState::kRunning && held > 1 && best != nullptr) {
      const double b = best->For(held);
      if (b > 0) {
        const double w = held;
        eff_weight += w;
        eff_score += w * std::min(1.0, job.busbw_gbs / b);
      }
    }
  }
  if (first_predicted != nullptr) *first_predicted = std::move(still_pending);
  if (eff_weight > 0) s.placement_efficiency = eff_score / eff_weight;

  v1::GetFragmentationResponse frag;
  (void)views::GetFragmentation(c, &frag);
  s.fgd = frag.fgd();
  // Idle GPUs inside wholly free domains, per level.
  std::array<uint64_t, kLevelCount> whole_free_gpus{};
  for (uint32_t d = 0; d < topo.domain_count(); ++d) {
    const Domain& dom = topo.domain(DomainId(d));
    if (topo.free_gpus(DomainId(d)) == dom.gpu_count) whole_free_gpus[static_cast<int>(dom.level)] += dom.gpu_count;
  }
  const uint32_t idle_up = topo.free_gpus(topo.root());
  for (const v1::LevelFragmentation& l : frag.levels()) {
    LevelSnapshot ls;
    ls.level = l.level();
    ls.domains = l.domains();
    ls.largest_free_block = l.largest_free_block();
    ls.whole_free_domains = l.whole_free();
    const std::optional<Level> lv = ParseLevel(l.level());
    if (lv && idle_up > 0) {
      const double whole = static_cast<double>(whole_free_gpus[static_cast<int>(*lv)]);
      ls.fragmentation = std::clamp(1.0 - whole / idle_up, 0.0, 1.0);
    }
    s.levels.push_back(std::move(ls));
  }
  return s;
}

}  // namespace phalanx::service
