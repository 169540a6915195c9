#include "core/topology/node_models.h"

#include <optional>
#include <string>

#include "core/topology/limits.h"
#include "util/numbers.h"

namespace phalanx {
namespace {

// NVLink 4 (H100): 18 links x 25 GB/s = 450 GB/s per direction per GPU.
constexpr double kNvlink4 = 450, kNvlink3 = 300, kNvlink5 = 900;
// PCIe Gen4 x16 per direction.
constexpr double kPcie4 = 32;
// Socket-to-socket (UPI/xGMI) usable for GPU peer traffic.
constexpr double kSmp = 40;
// NICs: NDR 400 Gb/s = 50 GB/s, HDR 200 Gb/s = 25 GB/s.
constexpr double kNdr = 50, kHdr = 25;

GroupSpec Group(std::string kind, std::vector<int> gpus, double gpu_link, LinkType type, double uplink = 0,
                LinkType uplink_type = LinkType::kPcie) {
  GroupSpec g;
  g.kind = std::move(kind);
  g.gpus = std::move(gpus);
  g.gpu_link_gbs = gpu_link;
  g.gpu_link_type = type;
  g.uplink.gbs = uplink;
  g.uplink.type = uplink_type;
  return g;
}

NodeModel NvSwitchNode(std::string name, int gpus, double nvlink, int nics, double nic) {
  NodeModel m;
  m.name = std::move(name);
  m.gpus = gpus;
  std::vector<int> all;
  for (int i = 0; i < gpus; ++i) all.push_back(i);
  m.groups.push_back(Group("nvswitch", all, nvlink, LinkType::kNvlink));
  m.nics = nics;
  m.nic_gbs = nic;
  return m;
}

}  // namespace

std::vector<std::string_view> BuiltinNodeModelNames() {
  return {"dgx-h100", "dgx-b200", "hgx-a100", "l40s-pcie", "nvlink-bridge-4", "gb200-nvl"};
}

Result<NodeModel> BuiltinNodeModel(std::string_view name) {
  if (name == "dgx-h100") return NvSwitchNode("dgx-h100", 8, kNvlink4, 8, kNdr);
  if (name == "dgx-b200") return NvSwitchNode("dgx-b200", 8, kNvlink5, 8, kNdr);
  if (name == "hgx-a100") return NvSwitchNode("hgx-a100", 8, kNvlink3, 8, kHdr);
  if (name == "gb200-nvl") {
    NodeModel m = NvSwitchNode("gb200-nvl", 4, kNvlink5, 4, kNdr);
    m.nvl_gbs_per_gpu = kNvlink5;
    return m;
  }
  if (name == "l40s-pcie") {
    // 2 sockets x 2 PCIe switches x 2 GPUs; one 200 Gb/s NIC per socket.
    NodeModel m;
    m.name = "l40s-pcie";
    m.gpus = 8;
    for (int s = 0; s < 2; ++s) {
      GroupSpec numa;
      numa.kind = "numa";
      numa.numa = s;
      numa.uplink = LinkSpec{kSmp, 0, 0, LinkType::kSmp};
      for (int p = 0; p < 2; ++p) {
        const int base = s * 4 + p * 2;
        GroupSpec sw = Group("pcie", {base, base + 1}, kPcie4, LinkType::kPcie, kPcie4, LinkType::kPcie);
        sw.numa = s;
        numa.children.push_back(sw);
      }
      m.groups.push_back(numa);
    }
    m.nics = 2;
    m.nic_gbs = kHdr;
    return m;
  }
  if (name == "nvlink-bridge-4") {
    // Two NVLink-bridged pairs (NV4: 4 x 14 GB/s) joined over PCIe Gen4; one 200 Gb/s NIC.
    NodeModel m;
    m.name = "nvlink-bridge-4";
    m.gpus = 4;
    m.groups.push_back(Group("nvlink", {0, 1}, 56, LinkType::kNvlink, kPcie4, LinkType::kPcie));
    m.groups.push_back(Group("nvlink", {2, 3}, 56, LinkType::kNvlink, kPcie4, LinkType::kPcie));
    m.nics = 1;
    m.nic_gbs = kHdr;
    return m;
  }
  std::string known;
  for (std::string_view n : BuiltinNodeModelNames()) known += (known.empty() ? "" : ", ") + std::string(n);
  return Fail("node model", "unknown model '" + std::string(name) + "' (known: " + known + ")");
}

namespace {

SwitchSpec Switch(std::string name, Level level, std::string parent, double oversub = 1.0, bool rails = false) {
  SwitchSpec s;
  s.name = std::move(name);
  s.level = level;
  s.parent = std::move(parent);
  s.oversubscription = oversub;
  s.rail_optimized = rails;
  s.where = "generator";
  return s;
}

std::string Pad(int v, int width) {
  std::string s = std::to_string(v);
  return std::string(s.size() < static_cast<size_t>(width) ? static_cast<size_t>(width) - s.size() : 0, '0') + s;
}

// Refuses a fabric of `nodes` nodes of `gpus_per_node` GPUs over the limits, before anything
// is built. Both factors are positive ints: their product fits in int64_t.
Status CheckSize(std::string_view generator, int64_t nodes, int gpus_per_node) {
  if (nodes > kMaxTopologyNodes) return Fail(std::string(generator), OverLimit(nodes, "nodes", kMaxTopologyNodes));
  if (const int64_t gpus = nodes * gpus_per_node; gpus > kMaxTopologyGpus)
    return Fail(std::string(generator), OverLimit(gpus, "GPUs", kMaxTopologyGpus));
  return {};
}

void AddNode(TopologySpec& spec, std::string name, std::string parent, int model) {
  spec.nodes.push_back(NodeSpec{std::move(name), std::move(parent), model, "generator"});
}

}  // namespace

Result<TopologySpec> GenerateSuperPod(const SuperPodOptions& o) {
  if (o.scalable_units < 1 || o.nodes_per_su < 1) return Fail("superpod", "needs at least 1 SU of 1 node");
  auto model = BuiltinNodeModel(o.model);
  PHX_RETURN_IF_ERROR(model);
  PHX_RETURN_IF_ERROR(CheckSize("superpod", int64_t{o.scalable_units} * o.nodes_per_su, model->gpus));
  TopologySpec spec;
  spec.name = "superpod-" + std::to_string(o.scalable_units) + "su";
  spec.models.push_back(*model);
  spec.switches.push_back(Switch("spine", Level::kSpine, ""));
  for (int su = 0; su < o.scalable_units; ++su) {
    const std::string su_name = "su" + Pad(su, 3);
    spec.switches.push_back(Switch(su_name, Level::kLeaf, "spine", o.spine_oversubscription, true));
    for (int n = 0; n < o.nodes_per_su; ++n) AddNode(spec, su_name + "-n" + Pad(n, 2), su_name, 0);
  }
  return spec;
}

Result<TopologySpec> GenerateLeafSpine(const LeafSpineOptions& o) {
  if (o.nodes < 1 || o.nodes_per_leaf < 1) return Fail("leafspine", "needs nodes >= 1 and nodes_per_leaf >= 1");
  auto model = BuiltinNodeModel(o.model);
  PHX_RETURN_IF_ERROR(model);
  PHX_RETURN_IF_ERROR(CheckSize("leafspine", o.nodes, model->gpus));
  TopologySpec spec;
  spec.name = "leafspine-" + std::to_string(o.nodes);
  spec.models.push_back(*model);
  spec.switches.push_back(Switch("spine", Level::kSpine, ""));
  // In int64_t: nodes_per_leaf may be as large as INT_MAX.
  const int64_t per_leaf = o.nodes_per_leaf;
  const int64_t leaves = (o.nodes + per_leaf - 1) / per_leaf;
  for (int64_t l = 0; l < leaves; ++l) {
    const std::string leaf = "leaf" + Pad(static_cast<int>(l), 2);
    spec.switches.push_back(Switch(leaf, Level::kLeaf, "spine", o.oversubscription));
    for (int n = static_cast<int>(l * per_leaf); n < std::min<int64_t>(o.nodes, (l + 1) * per_leaf); ++n) {
      AddNode(spec, "node" + Pad(n, 3), leaf, 0);
    }
  }
  return spec;
}

Result<TopologySpec> GenerateNvl72(const Nvl72Options& o) {
  if (o.racks < 1 || o.racks_per_leaf < 1) return Fail("nvl72", "needs racks >= 1 and racks_per_leaf >= 1");
  const NodeModel tray = *BuiltinNodeModel("gb200-nvl");
  constexpr int kTraysPerRack = 18;
  PHX_RETURN_IF_ERROR(CheckSize("nvl72", int64_t{o.racks} * kTraysPerRack, tray.gpus));
  TopologySpec spec;
  spec.name = "nvl72-" + std::to_string(o.racks);
  spec.models.push_back(tray);
  spec.switches.push_back(Switch("spine", Level::kSpine, ""));
  const int leaves = static_cast<int>((int64_t{o.racks} + o.racks_per_leaf - 1) / o.racks_per_leaf);
  for (int l = 0; l < leaves; ++l)
    spec.switches.push_back(Switch("leaf" + Pad(l, 2), Level::kLeaf, "spine", o.oversubscription));
  for (int r = 0; r < o.racks; ++r) {
    const std::string rack = "rack" + Pad(r, 3);
    spec.switches.push_back(Switch(rack, Level::kNvlDomain, "leaf" + Pad(r / o.racks_per_leaf, 2)));
    for (int n = 0; n < kTraysPerRack; ++n) AddNode(spec, rack + "-n" + Pad(n, 2), rack, 0);
  }
  return spec;
}

Result<TopologySpec> GenerateMixed() {
  TopologySpec spec;
  spec.name = "mixed";
  spec.models = {*BuiltinNodeModel("dgx-h100"), *BuiltinNodeModel("hgx-a100"), *BuiltinNodeModel("l40s-pcie")};
  spec.switches.push_back(Switch("core", Level::kCore, ""));
  spec.switches.push_back(Switch("h100-spine", Level::kSpine, "core"));
  for (int su = 0; su < 2; ++su) {
    const std::string name = "h100-su" + std::to_string(su);
    spec.switches.push_back(Switch(name, Level::kLeaf, "h100-spine", 1.0, true));
    for (int n = 0; n < 16; ++n) AddNode(spec, name + "-n" + Pad(n, 2), name, 0);
  }
  spec.switches.push_back(Switch("a100-spine", Level::kSpine, "core", 2.0));
  for (int l = 0; l < 2; ++l) {
    const std::string name = "a100-leaf" + std::to_string(l);
    spec.switches.push_back(Switch(name, Level::kLeaf, "a100-spine", 2.0));
    for (int n = 0; n < 8; ++n) AddNode(spec, name + "-n" + Pad(n, 2), name, 1);
  }
  spec.switches.push_back(Switch("l40s-leaf", Level::kLeaf, "core", 2.0));
  for (int n = 0; n < 8; ++n) AddNode(spec, "l40s-n" + Pad(n, 2), "l40s-leaf", 2);
  return spec;
}

TopologySpec DemoCluster() {
  TopologySpec spec;
  spec.name = "demo";
  spec.models.push_back(*BuiltinNodeModel("dgx-h100"));
  spec.switches.push_back(Switch("spine", Level::kSpine, ""));
  spec.switches.push_back(Switch("leaf0", Level::kLeaf, "spine", 1.0, true));
  spec.switches.push_back(Switch("leaf1", Level::kLeaf, "spine", 1.0, true));
  for (int n = 0; n < 4; ++n) AddNode(spec, "node" + std::to_string(n), n < 2 ? "leaf0" : "leaf1", 0);
  return spec;
}

namespace {

std::vector<std::string_view> SplitColon(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(':', start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

template <typename T>
Result<T> Number(std::string_view what, std::string_view text) {
  if (const std::optional<T> v = ParseNumber<T>(text)) return *v;
  return Fail(std::string(what), "'" + std::string(text) + "' is not a number");
}

}  // namespace

Result<TopologySpec> GenerateByName(std::string_view what) {
  const auto parts = SplitColon(what);
  const std::string_view kind = parts[0];
  auto arg = [&](size_t i, auto fallback) -> Result<decltype(fallback)> {
    if (i >= parts.size()) return fallback;
    return Number<decltype(fallback)>(std::string(what), parts[i]);
  };
  if (kind == "demo" && parts.size() == 1) return DemoCluster();
  if (kind == "mixed" && parts.size() == 1) return GenerateMixed();
  if (kind == "superpod" && parts.size() <= 3) {
    SuperPodOptions o;
    auto su = arg(1, 4), per = arg(2, 32);
    PHX_RETURN_IF_ERROR(su);
    PHX_RETURN_IF_ERROR(per);
    o.scalable_units = *su;
    o.nodes_per_su = *per;
    return GenerateSuperPod(o);
  }
  if (kind == "leafspine" && parts.size() <= 4) {
    LeafSpineOptions o;
    auto nodes = arg(1, 64), per = arg(2, 16);
    auto over = arg(3, 2.0);
    PHX_RETURN_IF_ERROR(nodes);
    PHX_RETURN_IF_ERROR(per);
    PHX_RETURN_IF_ERROR(over);
    o.nodes = *nodes;
    o.nodes_per_leaf = *per;
    o.oversubscription = *over;
    return GenerateLeafSpine(o);
  }
  if (kind == "nvl72" && parts.size() <= 3) {
    Nvl72Options o;
    auto racks = arg(1, 4), per = arg(2, 4);
    PHX_RETURN_IF_ERROR(racks);
    PHX_RETURN_IF_ERROR(per);
    o.racks = *racks;
    o.racks_per_leaf = *per;
    return GenerateNvl72(o);
  }
  return Fail(
      "generator",
      "unknown fabric '" + std::string(what) +
          "' (use demo, mixed, superpod:SU[:NODES], leafspine:NODES[:PER_LEAF[:OVERSUB]], nvl72:RACKS[:PER_LEAF])");
}

}  // namespace phalanx
