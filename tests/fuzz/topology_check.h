// Shared by the topology fuzz targets: whatever a reader accepts, Topology::Build either builds
// it with consistent counts or refuses it with a message.
#pragma once

#include <cstdint>

#include "core/topology/limits.h"
#include "core/topology/topology.h"
#include "fuzz_check.h"

namespace phalanx::fuzz {

inline void CheckBuild(const TopologySpec& spec) {
  auto t = Topology::Build(spec);
  if (!t) return CheckError(t.error());
  FUZZ_CHECK(t->node_count() == spec.nodes.size());
  int64_t gpus = 0;
  for (const NodeSpec& n : spec.nodes) gpus += spec.models.at(static_cast<size_t>(n.model)).gpus;
  FUZZ_CHECK(static_cast<int64_t>(t->gpu_count()) == gpus);
  FUZZ_CHECK(gpus <= kMaxTopologyGpus);
  FUZZ_CHECK(static_cast<int64_t>(t->node_count()) <= kMaxTopologyNodes);
}

// A one-node cluster around `model` (what the loader makes of nvsmi and hwloc files).
inline void CheckOneNode(const NodeModel& model) {
  FUZZ_CHECK(model.gpus > 0 && model.gpus <= kMaxGpusPerNode);
  TopologySpec spec;
  spec.name = "n";
  spec.models.push_back(model);
  spec.nodes.push_back(NodeSpec{"n", "", 0, "fuzz"});
  CheckBuild(spec);
}

}  // namespace phalanx::fuzz
