#include "core/placement/placement_counts.h"

namespace phalanx {

void DomainsUpTo(const Topology& topology, Level level, std::vector<DomainId>& out) {
  out.clear();
  std::vector<DomainId> stack{topology.root()};
  while (!stack.empty()) {
    const DomainId d = stack.back();
    stack.pop_back();
    if (topology.domain(d).level <= level) {
      out.push_back(d);
      continue;
    }
    for (DomainId c : topology.children(d)) stack.push_back(c);
  }
}

bool CountsMayHold(const Topology& topology, const PlacementRequest& request, std::span<const DomainId> tops) {
  const bool per_top = WithinDomainAboveNode(request);
  auto domain = [&](size_t i) { return per_top ? tops[i] : topology.root(); };
  return CountsAllow(
      request, topology.max_gpus_per_node(), per_top ? tops.size() : 1,
      [&](size_t i, uint32_t f) { return topology.nodes_with_free(domain(i), f); },
      [&](size_t i) { return topology.free_gpus(domain(i)); });
}

}  // namespace phalanx
