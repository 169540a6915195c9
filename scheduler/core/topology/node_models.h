// Built-in node models (the inside of common GPU servers) and generators for common fabrics.
// Bandwidths are GB/s per direction from vendor data sheets; see docs/bandwidth-model.md.
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/topology/spec.h"

namespace phalanx {

// "dgx-h100", "dgx-b200", "hgx-a100", "l40s-pcie", "nvlink-bridge-4", "gb200-nvl" (4 GPUs per
// tray of an NVL72 rack). Fails on an unknown name, listing the known ones.
Result<NodeModel> BuiltinNodeModel(std::string_view name);
std::vector<std::string_view> BuiltinNodeModelNames();

// Fabric generators. All produce a spec that Topology::Build accepts, and all refuse (before
// building anything) a fabric over the node or GPU limit of core/topology/limits.h:
// "superpod: 31999999968 nodes: more than the limit of 65536".
struct SuperPodOptions {
  int scalable_units = 4;
  int nodes_per_su = 32;
  std::string_view model = "dgx-h100";
  double spine_oversubscription = 1.0;  // SU uplink: 1.0 = full bisection
};
// DGX SuperPOD-like: rail-optimized SUs (leaf level) of `nodes_per_su` nodes under one spine
// level; nodes named su<k>-n<j>.
Result<TopologySpec> GenerateSuperPod(const SuperPodOptions& options);

struct LeafSpineOptions {
  int nodes = 64;
  int nodes_per_leaf = 16;
  double oversubscription = 2.0;  // leaf downlink:uplink
  std::string_view model = "hgx-a100";
};
// Classic two-tier leaf-spine (not rail-optimized), nodes named node<NNN>.
Result<TopologySpec> GenerateLeafSpine(const LeafSpineOptions& options);

struct Nvl72Options {
  int racks = 4;
  int racks_per_leaf = 4;
  double oversubscription = 1.0;
};
// GB200 NVL72: racks of 18 nodes x 4 GPUs in one NVLink domain, racks under IB leaves, leaves
// under a spine.
Result<TopologySpec> GenerateNvl72(const Nvl72Options& options);

// A mixed cluster: one SuperPOD-like H100 pod (2 SUs), an A100 2:1 leaf-spine island and an
// L40S PCIe island under one core.
Result<TopologySpec> GenerateMixed();

// The embedded demo cluster: 4 DGX H100 nodes under two leaves and a spine.
TopologySpec DemoCluster();

// Dispatch by name: "superpod:SU[:NODES]", "leafspine:NODES[:PER_LEAF[:OVERSUB]]",
// "nvl72:RACKS", "mixed", "demo". Fails naming the bad part.
Result<TopologySpec> GenerateByName(std::string_view what);

}  // namespace phalanx
