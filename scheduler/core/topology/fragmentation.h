// Shape-aware fragmentation of a cluster, FGD-style (after Alibaba's FGD, ATC'23): how many idle
// GPUs the expected job mix cannot use. The simulator samples it over a run; phalanxd reports it
// (GetFragmentation, ginfo --frag). Definition: docs/simulator.md#metrics.
//
// For a job shape of g GPUs, each node's idle GPUs are usable when the node's "home domain" for
// g (the node itself, or its lowest ancestor that holds at least g GPUs in the empty cluster)
// has at least g free GPUs; otherwise they are fragments for that shape. F = sum over shapes of
// weight x fragments(shape), in GPUs.
// Thread-safety: ShapeMix is a pure function; a FragmentationProbe is read-only after
// construction (concurrent FragmentedGpus calls are safe while the topology does not change).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/common/ids.h"
#include "core/topology/topology.h"

namespace phalanx {

// Popular job shapes (GPU counts) and their weights (sum 1), from a list of job sizes.
std::vector<std::pair<uint32_t, double>> ShapeMix(const std::vector<uint32_t>& sizes);

class FragmentationProbe {
 public:
  // `mix`: shapes and weights (ShapeMix). Shapes of 0 GPUs or larger than the cluster are
  // ignored (they can never run: not a fragmentation matter). `topo` fixes the structure only.
  FragmentationProbe(const Topology& topo, std::vector<std::pair<uint32_t, double>> mix);
  // F for the current free GPUs of `topo` (the topology given to the constructor).
  double FragmentedGpus(const Topology& topo) const;

 private:
  std::vector<std::pair<uint32_t, double>> mix_;
  std::vector<std::vector<DomainId>> home_;  // [shape][node]
};

}  // namespace phalanx
