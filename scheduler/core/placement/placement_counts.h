// Whether a placement request can fit, as far as free-GPU counts tell: a necessary condition for
// Placer::Place, cheap enough to ask at every step of a walk over time (Reserve asks it of the
// Topology's counters, and of counts it keeps itself before it changes the Topology).
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/common/ids.h"
#include "core/placement/placer.h"
#include "core/topology/level.h"
#include "core/topology/topology.h"

namespace phalanx {

// A request that must fit within one domain above the node: its counts are asked per domain of
// DomainsUpTo(request.level); any other's of the whole cluster.
inline bool WithinDomainAboveNode(const PlacementRequest& request) {
  return request.fit == FitMode::kRequire && request.level > Level::kNode;
}

// Requests the counts can refuse: node-shaped ones and those that must fit within one domain
// (for any other, the cluster's free GPUs are all the counts say).
inline bool CountsCanRefuse(const PlacementRequest& request) {
  return request.nodes > 0 || request.fit == FitMode::kRequire;
}

// The largest domains of level <= `level` (the root, or those whose parent is above it), into
// `out`: a placement that must fit within one domain of that level lies inside one of them.
void DomainsUpTo(const Topology& topology, Level level, std::vector<DomainId>& out);

// The rule, on any counts of `domains` domains (DomainsUpTo(request.level) when
// WithinDomainAboveNode(request), else one: the cluster): `nodes_with_free(i, f)`, the nodes of
// domain i with exactly f free GPUs (f <= max_gpus_per_node); `free_gpus(i)`. A request that must
// fit within one node (or a smaller domain) needs a node with that many free GPUs; a node-shaped
// one, that many nodes with `gpus_per_node` free each in one domain; any other that must fit
// within one domain, a domain with enough free GPUs. True for requests the counts cannot refuse.
template <class NodesWithFree, class FreeGpus>
bool CountsAllow(const PlacementRequest& request, uint32_t max_gpus_per_node, size_t domains,
                 const NodesWithFree& nodes_with_free, const FreeGpus& free_gpus) {
  if (!CountsCanRefuse(request)) return true;
  auto nodes_with_at_least = [&](size_t i, uint32_t per_node, uint32_t needed) {
    if (per_node > max_gpus_per_node) return false;
    uint32_t nodes = 0;
    for (uint32_t f = std::max(per_node, 1u); f <= max_gpus_per_node && nodes < needed; ++f)
      nodes += nodes_with_free(i, f);
    return nodes >= needed;
  };
  const uint32_t n = request.TotalGpus();
  const bool per_domain_gpus = request.nodes == 0 && WithinDomainAboveNode(request);
  for (size_t i = 0; i < domains; ++i) {
    if (request.nodes > 0 ? nodes_with_at_least(i, request.gpus_per_node, request.nodes)
        : per_domain_gpus ? free_gpus(i) >= n
                          : nodes_with_at_least(i, n, 1)) {
      return true;
    }
  }
  return false;
}

// CountsAllow on the Topology as it is now (free: on a node that is up, unowned, not held): false
// only when Placer::Place would place nothing. `tops`: DomainsUpTo(topology, request.level) when
// WithinDomainAboveNode(request) (else unread). O(|tops| x GPUs per node). For callers that try
// many states: skip the Placer when false.
bool CountsMayHold(const Topology& topology, const PlacementRequest& request, std::span<const DomainId> tops);

}  // namespace phalanx
