// WalkCounts: what a Reserve walk counts, before it brings the Topology to its time t, to tell
// whether the Placer could find a block there: each node's GPUs free at t and not held (what the
// Topology will count at t), and per domain the walk may search (the largest domains a job that
// must fit in one may use; the root alone for a job that may go anywhere) how many of its nodes
// have each such count, and its GPUs so counted. Allow and AllowIn apply CountsAllow, the rule
// CountsMayHold applies to the Topology, to these counts.
// The storage is kept from walk to walk of a pass. Pure; no thread-safety.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/placement/placement_counts.h"
#include "core/topology/topology.h"

namespace phalanx {

class WalkCounts {
 public:
  // A walk's start over `domains` (disjoint, covering every node): every node at 0 GPUs.
  void Begin(const Topology& topo, std::span<const DomainId> domains) {
    max_per_node_ = topo.max_gpus_per_node();
    stride_ = max_per_node_ + 1;
    node_free_.assign(topo.node_count(), 0);
    node_domain_.assign(topo.node_count(), 0);
    hist_.assign(domains.size() * stride_, 0);
    free_.assign(domains.size(), 0);
    for (size_t i = 0; i < domains.size(); ++i) {
      const Domain& d = topo.domain(domains[i]);
      std::fill_n(node_domain_.begin() + d.first_node, d.node_count, static_cast<uint32_t>(i));
      hist_[i * stride_] = d.node_count;
    }
  }

  // The index, among the walk's domains, of the one that holds node `node`.
  uint32_t DomainOf(uint32_t node) const { return node_domain_[node]; }

  // One GPU of node `node` free at t and not held (`freed`), or no longer.
  void Change(uint32_t node, bool freed) {
    uint32_t& c = node_free_[node];
    uint32_t* hist = hist_.data() + size_t{node_domain_[node]} * stride_;
    --hist[c];
    c = freed ? c + 1 : c - 1;
    ++hist[c];
    free_[node_domain_[node]] += freed ? 1u : -1u;
  }

  // Whether the counts allow `request` in some domain / in domain i.
  bool Allow(const PlacementRequest& request) const {
    return CountsAllow(
        request, max_per_node_, free_.size(), [&](size_t i, uint32_t f) { return hist_[i * stride_ + f]; },
        [&](size_t i) { return free_[i]; });
  }
  bool AllowIn(uint32_t i, const PlacementRequest& request) const {
    return CountsAllow(
        request, max_per_node_, 1, [&](size_t, uint32_t f) { return hist_[size_t{i} * stride_ + f]; },
        [&](size_t) { return free_[i]; });
  }

 private:
  uint32_t max_per_node_ = 0, stride_ = 1;
  std::vector<uint32_t> node_free_;    // by node: GPUs free at t and not held
  std::vector<uint32_t> node_domain_;  // by node: the index of its domain
  std::vector<uint32_t> hist_;         // [domain * stride_ + f]: the domain's nodes with f such GPUs
  std::vector<uint32_t> free_;         // by domain: its GPUs free at t and not held
};

}  // namespace phalanx
