// The size limits of a cluster topology: what every reader and generator accepts, checked before
// anything of that size is allocated. Justified in docs/topology-formats.md ("Size limits").
// Thread-safety: constants.
#pragma once

#include <cstdint>
#include <string>

namespace phalanx {

// Nodes in one cluster: 4x the largest GPU clusters built so far (~100,000 GPUs in ~12,500
// nodes), so no real cluster is refused, while a topology of this size still builds in well
// under a second and a few hundred MB.
inline constexpr int64_t kMaxTopologyNodes = 65'536;
// GPUs of one node: the most `nvidia-smi topo -m` can show in one matrix row set; real servers
// have 4-8 (GB200 NVL72 trays are modelled as 4-GPU nodes in one NVLink domain).
inline constexpr int64_t kMaxGpusPerNode = 1'024;
// GPUs in one cluster: every node of the node limit with 8 GPUs.
inline constexpr int64_t kMaxTopologyGpus = 524'288;
// Switches in one cluster: at most one per node (a leaf of one node) plus the levels above.
inline constexpr int64_t kMaxTopologySwitches = 2 * kMaxTopologyNodes;

// The message every reader and generator gives for a count over one of the limits above:
// OverLimit(100000000, "nodes", kMaxTopologyNodes) == "100000000 nodes: more than the limit of 65536".
inline std::string OverLimit(int64_t count, const char* what, int64_t limit) {
  return std::to_string(count) + " " + what + ": more than the limit of " + std::to_string(limit);
}

}  // namespace phalanx
