#include "core/placement/bandwidth_model.h"

#include <algorithm>
#include <limits>

namespace phalanx {

BandwidthModel::BandwidthModel(const Topology& topology, ModelParams params)
    : topo_(topology),
      params_(params),
      count_(topology.domain_count(), 0),
      mask_(topology.domain_count(), 0),
      misaligned_(topology.domain_count(), 0) {}

double BandwidthModel::Efficiency(LinkType type) const {
  switch (type) {
    case LinkType::kNvlink: return params_.eff_nvlink;
    case LinkType::kPcie: return params_.eff_pcie;
    case LinkType::kSmp: return params_.eff_smp;
    case LinkType::kInfiniband: return params_.eff_infiniband;
    case LinkType::kEthernet: return params_.eff_ethernet;
    case LinkType::kNone: return 1.0;
  }
  return 1.0;
}

double BandwidthModel::StaticCutCapacity(DomainId d, uint32_t g) const {
  const Domain& dom = topo_.domain(d);
  if (!dom.parent.valid()) return 0;  // the root: nothing above it to cross
  const Link& link = dom.uplink;
  if (link.type == LinkType::kNone) return kUnlimited;
  double raw = link.gbs;
  if (link.lanes > 0) raw = std::min(raw, std::min(g, link.lanes) * link.lane_gbs);
  return raw * Efficiency(link.type);
}

double BandwidthModel::CutCapacity(DomainId d, uint32_t g) const {
  const double own = StaticCutCapacity(d, g);
  const uint32_t others = topo_.crossing_jobs(d);
  if (others == 0 || own <= 0 || own >= kUnlimited) return own;
  const Domain& dom = topo_.domain(d);
  const double link = dom.uplink.gbs * Efficiency(dom.uplink.type);
  const double load = topo_.crossing_gbs(d);
  if (load + own <= link) return own;  // room for everyone
  // Contended: what is left, but never less than a fair share of the link.
  double share = std::max(link - load, link / (others + 1));
  if (dom.oversubscription > 1.0) share *= params_.congestion;
  return std::min(own, share);
}

Prediction BandwidthModel::Predict(std::span<const GpuId> gpus) const {
  Prediction p;
  if (gpus.empty()) return p;
  if (gpus.size() == 1) {
    p.lca = topo_.gpu_domain(gpus[0]);
    p.busbw_gbs = StaticCutCapacity(p.lca, 1);
    return p;
  }
  const uint32_t n = static_cast<uint32_t>(gpus.size());
  touched_.clear();
  for (GpuId g : gpus) {
    for (DomainId a = topo_.gpu_domain(g); a.valid(); a = topo_.domain(a).parent) {
      if (count_[a.value]++ == 0) touched_.push_back(a);
    }
  }
  // Rail check: per node the set of local indices, compared within rail-optimized domains.
  const bool rails = topo_.max_gpus_per_node() <= 64;
  if (rails) {
    for (GpuId g : gpus) mask_[topo_.node_domain(topo_.node_of(g)).value] |= uint64_t{1} << topo_.local_index(g);
    for (DomainId d : touched_) {
      if (topo_.domain(d).level != Level::kNode) continue;
      const uint64_t m = mask_[d.value];
      for (DomainId a = topo_.domain(d).parent; a.valid(); a = topo_.domain(a).parent) {
        if (!topo_.domain(a).rail_optimized) continue;
        if (mask_[a.value] == 0) {
          mask_[a.value] = m;
        } else if (mask_[a.value] != m) {
          misaligned_[a.value] = 1;
        }
      }
    }
  }
  double best = std::numeric_limits<double>::infinity();
  for (DomainId d : touched_) {
    const uint32_t c = count_[d.value];
    const bool cut = c < n;
    const bool rail_cut = misaligned_[d.value] && topo_.domain(d).parent.valid();
    if (misaligned_[d.value]) p.rail_aligned = false;
    if (!cut && !p.lca.valid()) p.lca = d;  // touched_ lists each GPU's path bottom-up
    if (cut || rail_cut) {
      const double cap = CutCapacity(d, c);
      if (cap < best) {
        best = cap;
        p.bottleneck = d;
      }
    }
  }
  // The LCA is the deepest domain holding all n GPUs.
  for (DomainId d : touched_) {
    if (count_[d.value] == n && (!p.lca.valid() || topo_.domain(d).depth > topo_.domain(p.lca).depth)) p.lca = d;
  }
  for (DomainId d : touched_) {
    count_[d.value] = 0;
    mask_[d.value] = 0;
    misaligned_[d.value] = 0;
  }
  p.busbw_gbs = best == std::numeric_limits<double>::infinity() ? 0 : best;
  return p;
}

}  // namespace phalanx
