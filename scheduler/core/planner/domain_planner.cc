#include "core/planner/domain_planner.h"

#include <algorithm>
#include <string>

namespace phalanx {

DomainPlanner::DomainPlanner(const Topology& topology, Time origin, DomainPlannerOptions options)
    : origin_(std::clamp<Time>(origin, -kForever, kForever)) {
  const size_t domains = topology.domain_count();
  parent_.reserve(domains);
  gpu_total_.reserve(domains);
  level_.reserve(domains);
  name_.reserve(domains);
  slot_.assign(domains, -1);
  for (size_t i = 0; i < domains; ++i) {
    const DomainId d(static_cast<uint32_t>(i));
    const Domain& dom = topology.domain(d);
    parent_.push_back(dom.parent);
    gpu_total_.push_back(dom.gpu_count);
    level_.push_back(dom.level);
    name_.push_back(dom.name);
    if (dom.level >= Level::kNode || (options.include_groups && dom.level == Level::kGroup)) {
      slot_[i] = static_cast<int32_t>(planners_.size());
      planners_.emplace_back(dom.gpu_count, origin_);
      planned_.push_back(d);
    }
  }
  gpu_domain_.reserve(topology.gpu_count());
  for (size_t g = 0; g < topology.gpu_count(); ++g) {
    gpu_domain_.push_back(topology.gpu_domain(GpuId(static_cast<uint32_t>(g))));
  }
  order_.resize(planners_.size());
  for (uint32_t p = 0; p < order_.size(); ++p) order_[p] = p;
  std::sort(order_.begin(), order_.end(),
            [&](uint32_t a, uint32_t b) { return OrderKey(planned_[a]) < OrderKey(planned_[b]); });
}

const Planner* DomainPlanner::planner(DomainId d) const {
  if (d.value >= slot_.size() || slot_[d.value] < 0) return nullptr;
  return &planners_[slot_[d.value]];
}

Result<AllocationId> DomainPlanner::AddAllocation(std::span<const GpuId> gpus, Time start, Time end) {
  if (gpus.empty()) return Fail("allocation", "no GPUs");
  if (end <= start) {
    return Fail("allocation", "end " + std::to_string(end) + " is not after start " + std::to_string(start));
  }
  if (start < origin_) {
    return Fail("allocation", "starts at " + std::to_string(start) + ", before the origin " + std::to_string(origin_));
  }
  if (end > kForever) return Fail("allocation", "ends after kForever");
  std::vector<GpuId> sorted(gpus.begin(), gpus.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.back().value >= gpu_domain_.size()) {
    return Fail("allocation", "unknown GPU " + std::to_string(sorted.back().value));
  }
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    return Fail("allocation", "GPU " + std::to_string(dup->value) + " given twice");
  }
  // GPUs below each planned domain above them, in planner order (deterministic).
  std::map<uint32_t, int64_t> counts;
  for (GpuId g : sorted) {
    for (DomainId d = gpu_domain_[g.value]; d.valid(); d = parent_[d.value]) {
      if (slot_[d.value] >= 0) ++counts[static_cast<uint32_t>(slot_[d.value])];
    }
  }
  // Check everything first so that a refusal changes nothing (not even span ids).
  for (const auto& [p, count] : counts) {
    const int64_t free = planners_[p].AvailDuring(start, end - start);
    if (free < count) {
      return Fail("allocation", "domain " + name_[planned_[p].value] + " has " + std::to_string(free) +
                                    " GPUs free during [" + std::to_string(start) + ", " + std::to_string(end) +
                                    "), needs " + std::to_string(count));
    }
  }
  Allocation alloc{.end = end, .spans = {}};
  for (const auto& [p, count] : counts) {
    auto span = planners_[p].AddSpan(start, end - start, count);
    if (!span) {  // unreachable after the check above; undo to keep the contract regardless
      for (const auto& [q, s] : alloc.spans) (void)planners_[q].RemoveSpan(s);
      return std::unexpected(span.error());
    }
    alloc.spans.emplace_back(p, *span);
  }
  const uint64_t id = next_allocation_++;
  allocations_.emplace(id, std::move(alloc));
  by_end_.emplace(end, id);
  return AllocationId{id};
}

Status DomainPlanner::Remove(AllocationId allocation) {
  auto it = allocations_.find(allocation.value);
  if (it == allocations_.end()) return Fail("allocation", "unknown allocation " + std::to_string(allocation.value));
  for (const auto& [p, span] : it->second.spans) {
    PHX_RETURN_IF_ERROR(planners_[p].RemoveSpan(span));  // cannot happen: spans live as long
  }
  by_end_.erase({it->second.end, allocation.value});
  allocations_.erase(it);
  return {};
}

void DomainPlanner::AdvanceTo(Time now) {
  now = std::min(now, kForever);
  if (now <= origin_) return;
  for (Planner& p : planners_) p.AdvanceTo(now);  // drops the same spans (end <= now)
  while (!by_end_.empty() && by_end_.begin()->first <= now) {
    allocations_.erase(by_end_.begin()->second);
    by_end_.erase(by_end_.begin());
  }
  origin_ = now;
}

bool DomainPlanner::Eligible(uint32_t p, Level min_level, Level max_level) const {
  const Level level = level_[planned_[p].value];
  return level >= min_level && level <= max_level;
}

std::optional<BlockCandidate> DomainPlanner::EarliestBlock(Level max_level, uint32_t gpus, Duration duration, Time at,
                                                           Level min_level) const {
  if (gpus == 0 || duration < 1) return std::nullopt;
  const Time earliest = std::max(at, origin_);
  std::optional<std::pair<Time, uint32_t>> best;
  auto it = std::lower_bound(order_.begin(), order_.end(), gpus,
                             [&](uint32_t p, uint32_t n) { return gpu_total_[planned_[p].value] < n; });
  for (; it != order_.end(); ++it) {
    if (!Eligible(*it, min_level, max_level)) continue;
    // Later domains in the order lose ties: only a strictly earlier time beats the best.
    const Time latest = best ? best->first - 1 : kForever;
    if (auto t = planners_[*it].AvailTimeFirst(earliest, duration, gpus, latest)) {
      best = {*t, *it};
      if (*t == earliest) break;  // nothing can start earlier, and later domains lose ties
    }
  }
  if (!best) return std::nullopt;
  return BlockCandidate{best->first, planned_[best->second]};
}

std::optional<BlockCandidate> DomainPlanner::NextBlock(Level max_level, uint32_t gpus, Duration duration, Time at,
                                                       BlockCandidate after, Level min_level) const {
  if (gpus == 0 || duration < 1) return std::nullopt;
  const Time earliest = std::max(at, origin_);
  const Time t0 = std::max(after.first, -kForever);
  const auto after_key =
      after.second.value < gpu_total_.size() ? OrderKey(after.second) : std::pair<uint32_t, uint32_t>{0, 0};
  std::optional<std::pair<Time, uint32_t>> best;
  auto it = std::lower_bound(order_.begin(), order_.end(), gpus,
                             [&](uint32_t p, uint32_t n) { return gpu_total_[planned_[p].value] < n; });
  for (; it != order_.end(); ++it) {
    if (!Eligible(*it, min_level, max_level)) continue;
    const Planner& planner = planners_[*it];
    const Time latest = best ? best->first - 1 : kForever;
    const auto first = planner.AvailTimeFirst(earliest, duration, gpus, latest);
    if (!first) continue;
    // Domains ordered after `after`'s may share its time; the others must come strictly later.
    const bool may_tie = OrderKey(planned_[*it]) > after_key;
    std::optional<Time> t;
    if (may_tie) {
      t = *first >= t0 ? first : planner.AvailTimeNext(t0 - 1, duration, gpus, latest);
    } else {
      t = *first > t0 ? first : planner.AvailTimeNext(t0, duration, gpus, latest);
    }
    if (t) best = {*t, *it};
  }
  if (!best) return std::nullopt;
  return BlockCandidate{best->first, planned_[best->second]};
}

}  // namespace phalanx
