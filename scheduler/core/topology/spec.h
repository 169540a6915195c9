// TopologySpec: the plain description of a cluster that every reader and generator produces and
// Topology::Build() turns into the indexed tree. It names things by string so that readers can
// emit switches in any order; Build() resolves names and reports unknown/duplicate/cyclic ones
// with the `where` ("file:line") the reader recorded.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/topology/level.h"

namespace phalanx {

// A link from a domain to its parent, per direction. A link made of `lanes` parallel lanes
// (e.g. 8 rail NICs) can only be driven by as many lanes as the job has GPUs below it.
struct LinkSpec {
  double gbs = 0;       // aggregate capacity, GB/s per direction (0: derive, see SwitchSpec)
  uint32_t lanes = 0;   // 0: not lane-limited
  double lane_gbs = 0;  // capacity of one lane
  LinkType type = LinkType::kNone;
};

// A group inside a node: an NVSwitch, an NVLink pair/quad, a PCIe switch, a NUMA socket.
// Groups nest; every local GPU index appears exactly once in the whole group tree of a model.
struct GroupSpec {
  std::string kind;       // "nvswitch", "nvlink", "pcie", "numa" (free text, shown to people)
  std::vector<int> gpus;  // local GPU indices attached directly to this group
  std::vector<GroupSpec> children;
  double gpu_link_gbs = 0;  // per-direction bandwidth of each direct GPU's link
  LinkType gpu_link_type = LinkType::kNvlink;
  LinkSpec uplink;  // to the parent group or the node (ignored at top if the
                    // group covers the whole node)
  int numa = -1;    // NUMA node of the group's GPUs, when known
};

// The inside of one kind of node.
struct NodeModel {
  std::string name;  // "dgx-h100", "hgx-a100", ...
  int gpus = 0;
  std::vector<GroupSpec> groups;  // empty: every GPU hangs directly off the node
  double gpu_link_gbs = 0;        // link of a GPU that is directly under the node
  LinkType gpu_link_type = LinkType::kPcie;
  // Network attachment: `nics` rail NICs of `nic_gbs` each (NIC i serves local GPUs
  // [i*gpus/nics, (i+1)*gpus/nics)). Used when the node's parent is a switch.
  int nics = 0;
  double nic_gbs = 0;
  LinkType nic_type = LinkType::kInfiniband;
  // Per-GPU NVLink bandwidth into a multi-node NVLink domain; used when the node's parent is an
  // NVL domain (GB200 NVL72: 900 GB/s per GPU per direction).
  double nvl_gbs_per_gpu = 0;
};

struct SwitchSpec {
  std::string name;
  Level level = Level::kLeaf;
  std::string parent;             // empty: a top-level switch
  LinkSpec uplink;                // gbs == 0: downlink sum / oversubscription
  double oversubscription = 1.0;  // downlink:uplink, e.g. 2.0 for 2:1
  bool rail_optimized = false;    // GPU i of every node below hangs on rail switch i
  std::string where;              // source position for error messages
};

struct NodeSpec {
  std::string name;
  std::string parent;  // a switch name (empty only for single-node clusters)
  int model = 0;       // index into TopologySpec::models
  std::string where;
};

struct TopologySpec {
  std::string name;  // cluster or file name, for summaries
  std::vector<NodeModel> models;
  std::vector<SwitchSpec> switches;
  std::vector<NodeSpec> nodes;
};

}  // namespace phalanx
