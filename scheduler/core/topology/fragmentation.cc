#include "core/topology/fragmentation.h"

#include <map>

namespace phalanx {

std::vector<std::pair<uint32_t, double>> ShapeMix(const std::vector<uint32_t>& sizes) {
  std::map<uint32_t, size_t> count;
  for (uint32_t s : sizes) count[s]++;
  std::vector<std::pair<uint32_t, double>> out;
  for (const auto& [g, c] : count) out.push_back({g, static_cast<double>(c) / static_cast<double>(sizes.size())});
  return out;
}

FragmentationProbe::FragmentationProbe(const Topology& topo, std::vector<std::pair<uint32_t, double>> mix) {
  const uint32_t total = static_cast<uint32_t>(topo.gpu_count());
  for (const auto& [g, w] : mix) {
    if (g == 0 || g > total) continue;  // can never run: not a fragmentation matter
    std::vector<DomainId> homes(topo.node_count());
    for (uint32_t n = 0; n < topo.node_count(); ++n) {
      DomainId d = topo.node_domain(NodeId(n));
      while (topo.domain(d).gpu_count < g && topo.domain(d).parent.valid()) d = topo.domain(d).parent;
      homes[n] = d;
    }
    mix_.push_back({g, w});
    home_.push_back(std::move(homes));
  }
}

double FragmentationProbe::FragmentedGpus(const Topology& topo) const {
  double f = 0;
  for (size_t s = 0; s < mix_.size(); ++s) {
    const uint32_t g = mix_[s].first;
    if (g == 1) continue;  // every idle GPU fits a 1-GPU job
    uint64_t frag = 0;
    for (uint32_t n = 0; n < home_[s].size(); ++n) {
      const uint32_t node_free = topo.free_gpus(topo.node_domain(NodeId(n)));
      if (node_free > 0 && topo.free_gpus(home_[s][n]) < g) frag += node_free;
    }
    f += mix_[s].second * static_cast<double>(frag);
  }
  return f;
}

}  // namespace phalanx
