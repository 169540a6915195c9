// Topology::Build: a TopologySpec (what readers and generators produce) checked and turned into
// the indexed tree of domains, with the live state of an idle cluster (every GPU free, every node
// up). The live state itself, and everything that changes it, is in topology.cc.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/topology/limits.h"
#include "core/topology/topology.h"

namespace phalanx {

namespace {

bool BadBandwidth(double gbs) { return !std::isfinite(gbs) || gbs < 0; }

std::string ModelWhere(const NodeModel& m) { return "node model '" + m.name + "'"; }

// Checks that the group tree of `model` covers GPUs 0..gpus-1 exactly once, with sane links.
Status ValidateModel(const NodeModel& model) {
  if (model.gpus <= 0) return Fail(ModelWhere(model), "has " + std::to_string(model.gpus) + " GPUs");
  if (model.gpus > kMaxGpusPerNode) return Fail(ModelWhere(model), OverLimit(model.gpus, "GPUs", kMaxGpusPerNode));
  std::vector<int> seen(static_cast<size_t>(model.gpus), 0);
  std::function<Status(const GroupSpec&, bool)> walk = [&](const GroupSpec& g, bool needs_uplink) -> Status {
    if (BadBandwidth(g.gpu_link_gbs) || BadBandwidth(g.uplink.gbs)) {
      return Fail(ModelWhere(model), "group '" + g.kind + "' has a negative or non-finite bandwidth");
    }
    if (!g.gpus.empty() && g.gpu_link_gbs <= 0) {
      return Fail(ModelWhere(model), "group '" + g.kind + "' needs gpu_link_gbs > 0");
    }
    if (needs_uplink && g.uplink.gbs <= 0) {
      return Fail(ModelWhere(model), "group '" + g.kind + "' has siblings and needs an uplink bandwidth");
    }
    if (g.gpus.empty() && g.children.empty()) return Fail(ModelWhere(model), "group '" + g.kind + "' is empty");
    for (int gpu : g.gpus) {
      if (gpu < 0 || gpu >= model.gpus) {
        return Fail(ModelWhere(model),
                    "GPU index " + std::to_string(gpu) + " out of range 0.." + std::to_string(model.gpus - 1));
      }
      if (seen[static_cast<size_t>(gpu)]++)
        return Fail(ModelWhere(model), "GPU " + std::to_string(gpu) + " is in two groups");
    }
    const bool siblings = g.children.size() + g.gpus.size() > 1;
    for (const GroupSpec& c : g.children) {
      PHX_RETURN_IF_ERROR(walk(c, siblings));
    }
    return {};
  };
  const bool top_siblings = model.groups.size() > 1;
  for (const GroupSpec& g : model.groups) {
    PHX_RETURN_IF_ERROR(walk(g, top_siblings));
  }
  if (model.groups.empty()) {
    if (model.gpu_link_gbs <= 0 && model.gpus > 1) return Fail(ModelWhere(model), "needs groups or gpu_link_gbs > 0");
    return {};
  }
  for (int i = 0; i < model.gpus; ++i) {
    if (!seen[static_cast<size_t>(i)]) return Fail(ModelWhere(model), "GPU " + std::to_string(i) + " is in no group");
  }
  if (model.nics < 0 || BadBandwidth(model.nic_gbs) || BadBandwidth(model.nvl_gbs_per_gpu)) {
    return Fail(ModelWhere(model), "has a negative NIC count or bandwidth");
  }
  return {};
}

}  // namespace

// Builds the tree in depth-first pre-order. Kept as a class so the recursive helpers share the
// output arrays without a dozen parameters.
class TopologyBuilder {
 public:
  explicit TopologyBuilder(const TopologySpec& spec) : spec_(spec) {}

  Result<Topology> Build() {
    if (spec_.nodes.empty()) return Fail(spec_.name, "no nodes");
    PHX_RETURN_IF_ERROR(CheckSize());
    for (const NodeModel& m : spec_.models) {
      PHX_RETURN_IF_ERROR(ValidateModel(m));
    }
    PHX_RETURN_IF_ERROR(Index());
    topo_.name_ = spec_.name;
    // Roots: top-level switches and parentless nodes.
    std::vector<Item> tops;
    for (size_t i = 0; i < spec_.switches.size(); ++i) {
      if (spec_.switches[i].parent.empty()) tops.push_back({true, i});
    }
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      if (spec_.nodes[i].parent.empty()) tops.push_back({false, i});
    }
    if (tops.empty())
      return Fail(spec_.switches.front().where, "every switch has a parent: the switch graph has a cycle");
    if (tops.size() == 1) {
      PHX_RETURN_IF_ERROR(Emit(tops[0], DomainId(), 0));
    } else {
      Domain root;
      root.level = Level::kCore;
      root.name = "cluster";
      root.kind = "disconnected";
      const DomainId id = Push(std::move(root), DomainId(), 0);
      for (const Item& t : tops) {
        PHX_RETURN_IF_ERROR(Emit(t, id, 1));
        // No links between disconnected trees: crossing the synthetic root is impossible.
        topo_.domains_[kids_[id.value].back().value].uplink = Link{0, 0, 0, LinkType::kInfiniband};
      }
      Finish(id, DomainId());
    }
    if (emitted_switches_ != spec_.switches.size()) {
      for (size_t i = 0; i < spec_.switches.size(); ++i) {
        if (!visited_[i])
          return Fail(spec_.switches[i].where, "switch '" + spec_.switches[i].name + "' is part of a parent cycle");
      }
    }
    FinishState();
    return std::move(topo_);
  }

 private:
  // The limits of core/topology/limits.h, before anything per node or per GPU is allocated
  // (readers check them too, with their file:line; this is the backstop for any spec).
  Status CheckSize() const {
    const int64_t nodes = static_cast<int64_t>(spec_.nodes.size());
    if (nodes > kMaxTopologyNodes) return Fail(spec_.name, OverLimit(nodes, "nodes", kMaxTopologyNodes));
    const int64_t switches = static_cast<int64_t>(spec_.switches.size());
    if (switches > kMaxTopologySwitches) return Fail(spec_.name, OverLimit(switches, "switches", kMaxTopologySwitches));
    int64_t gpus = 0;  // at most 65,536 nodes x INT_MAX GPUs: fits in int64_t
    for (const NodeSpec& n : spec_.nodes) {
      if (n.model >= 0 && static_cast<size_t>(n.model) < spec_.models.size())
        gpus += std::max(0, spec_.models[static_cast<size_t>(n.model)].gpus);
    }
    if (gpus > kMaxTopologyGpus) return Fail(spec_.name, OverLimit(gpus, "GPUs", kMaxTopologyGpus));
    return {};
  }

  struct Item {
    bool is_switch;
    size_t index;
  };

  Status Index() {
    std::unordered_map<std::string, std::string> where;
    for (size_t i = 0; i < spec_.switches.size(); ++i) {
      const SwitchSpec& s = spec_.switches[i];
      if (s.name.empty()) return Fail(s.where, "switch without a name");
      if (auto [it, fresh] = where.emplace(s.name, s.where); !fresh) {
        return Fail(s.where, "duplicate switch '" + s.name + "' (first at " + it->second + ")");
      }
      switch_index_[s.name] = i;
      if (BadBandwidth(s.uplink.gbs)) return Fail(s.where, "switch '" + s.name + "': bad uplink bandwidth");
      if (!std::isfinite(s.oversubscription) || s.oversubscription < 1.0) {
        return Fail(s.where, "switch '" + s.name + "': oversubscription must be >= 1 (got " +
                                 std::to_string(s.oversubscription) + ")");
      }
    }
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      const NodeSpec& n = spec_.nodes[i];
      if (n.name.empty()) return Fail(n.where, "node without a name");
      if (auto [it, fresh] = where.emplace(n.name, n.where); !fresh) {
        return Fail(n.where, "duplicate node '" + n.name + "' (first at " + it->second + ")");
      }
      if (n.model < 0 || static_cast<size_t>(n.model) >= spec_.models.size()) {
        return Fail(n.where, "node '" + n.name + "' has no node model");
      }
    }
    children_of_.resize(spec_.switches.size());
    for (size_t i = 0; i < spec_.switches.size(); ++i) {
      const SwitchSpec& s = spec_.switches[i];
      if (s.parent.empty()) continue;
      auto it = switch_index_.find(s.parent);
      if (it == switch_index_.end())
        return Fail(s.where, "switch '" + s.name + "' has unknown parent switch '" + s.parent + "'");
      if (it->second == i) return Fail(s.where, "switch '" + s.name + "' is its own parent");
      children_of_[it->second].push_back({true, i});
    }
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      const NodeSpec& n = spec_.nodes[i];
      if (n.parent.empty()) continue;
      auto it = switch_index_.find(n.parent);
      if (it == switch_index_.end())
        return Fail(n.where, "node '" + n.name + "' is under unknown switch '" + n.parent + "'");
      children_of_[it->second].push_back({false, i});
    }
    visited_.assign(spec_.switches.size(), false);
    return {};
  }

  DomainId Push(Domain d, DomainId parent, uint32_t depth) {
    d.parent = parent;
    d.depth = depth;
    d.first_gpu = static_cast<uint32_t>(topo_.gpu_domain_.size());
    d.first_node = static_cast<uint32_t>(topo_.node_domain_.size());
    const DomainId id(static_cast<uint32_t>(topo_.domains_.size()));
    topo_.domains_.push_back(std::move(d));
    kids_.emplace_back();
    if (parent.valid()) kids_[parent.value].push_back(id);
    return id;
  }

  // Closes a domain after its subtree was emitted: GPU/node ranges.
  void Finish(DomainId id, DomainId) {
    Domain& d = topo_.domains_[id.value];
    d.gpu_count = static_cast<uint32_t>(topo_.gpu_domain_.size()) - d.first_gpu;
    d.node_count = static_cast<uint32_t>(topo_.node_domain_.size()) - d.first_node;
  }

  Status Emit(const Item& item, DomainId parent, uint32_t depth) {
    if (depth > 64)
      return Fail(item.is_switch ? spec_.switches[item.index].where : "", "topology deeper than 64 levels");
    return item.is_switch ? EmitSwitch(item.index, parent, depth) : EmitNode(item.index, parent, depth);
  }

  Status EmitSwitch(size_t index, DomainId parent, uint32_t depth) {
    const SwitchSpec& s = spec_.switches[index];
    visited_[index] = true;
    ++emitted_switches_;
    if (children_of_[index].empty()) return Fail(s.where, "switch '" + s.name + "' has no nodes or switches below it");
    Domain d;
    d.level = s.level;
    d.name = s.name;
    d.kind = std::string(LevelName(s.level));
    d.oversubscription = s.oversubscription;
    d.rail_optimized = s.rail_optimized;
    const DomainId id = Push(std::move(d), parent, depth);
    topo_.by_name_[s.name] = id;
    double down_gbs = 0, nic_gbs = 0;
    uint32_t nic_lanes = 0;
    LinkType nic_type = LinkType::kInfiniband;
    for (const Item& c : children_of_[index]) {
      if (c.is_switch && visited_[c.index])
        return Fail(spec_.switches[c.index].where,
                    "switch '" + spec_.switches[c.index].name + "' is part of a parent cycle");
      if (c.is_switch && spec_.switches[c.index].level >= s.level) {
        return Fail(spec_.switches[c.index].where, "switch '" + spec_.switches[c.index].name + "' (level " +
                                                       std::string(LevelName(spec_.switches[c.index].level)) +
                                                       ") is under '" + s.name + "' (level " +
                                                       std::string(LevelName(s.level)) + "): levels must grow upwards");
      }
      PHX_RETURN_IF_ERROR(Emit(c, id, depth + 1));
      const Domain& child = topo_.domains_[kids_[id.value].back().value];
      down_gbs += child.uplink.gbs;
      if (!c.is_switch) {
        const NodeModel& m = spec_.models[static_cast<size_t>(spec_.nodes[c.index].model)];
        nic_lanes += static_cast<uint32_t>(m.nics);
        nic_gbs = m.nic_gbs;
        nic_type = m.nic_type;
      }
    }
    Finish(id, parent);
    Domain& me = topo_.domains_[id.value];
    if (parent.valid()) {
      me.uplink.type = s.uplink.type == LinkType::kNone ? LinkType::kInfiniband : s.uplink.type;
      if (s.level == Level::kNvlDomain) {
        // The domain reaches the fabric through its nodes' NICs.
        me.uplink.lanes = nic_lanes;
        me.uplink.lane_gbs = nic_gbs;
        me.uplink.type = nic_type;
        down_gbs = nic_lanes * nic_gbs;
      }
      me.uplink.gbs = s.uplink.gbs > 0 ? s.uplink.gbs : down_gbs / s.oversubscription;
      if (s.uplink.gbs > 0 && me.uplink.gbs > 0) me.oversubscription = std::max(1.0, down_gbs / me.uplink.gbs);
      if (me.uplink.gbs <= 0)
        return Fail(s.where, "switch '" + s.name + "' has no uplink bandwidth (give LinkSpeed or NIC speeds)");
    }
    return {};
  }

  Status EmitNode(size_t index, DomainId parent, uint32_t depth) {
    const NodeSpec& n = spec_.nodes[index];
    const NodeModel& m = spec_.models[static_cast<size_t>(n.model)];
    Domain d;
    d.level = Level::kNode;
    d.name = n.name;
    d.kind = m.name;
    const bool in_nvl = parent.valid() && topo_.domains_[parent.value].level == Level::kNvlDomain;
    if (parent.valid()) {
      if (in_nvl) {
        if (m.nvl_gbs_per_gpu <= 0)
          return Fail(n.where, "node '" + n.name + "' is in an NVLink domain but its model has no nvl_gbs_per_gpu");
        d.uplink =
            Link{m.gpus * m.nvl_gbs_per_gpu, static_cast<uint32_t>(m.gpus), m.nvl_gbs_per_gpu, LinkType::kNvlink};
      } else {
        if (m.nics <= 0 || m.nic_gbs <= 0)
          return Fail(n.where, "node '" + n.name + "' is under a switch but its model '" + m.name + "' has no NIC");
        d.uplink = Link{m.nics * m.nic_gbs, static_cast<uint32_t>(m.nics), m.nic_gbs, m.nic_type};
      }
    }
    const NodeId node(static_cast<uint32_t>(topo_.node_domain_.size()));
    const DomainId id = Push(std::move(d), parent, depth);
    topo_.node_domain_.push_back(id);
    topo_.by_name_[n.name] = id;
    const uint32_t base = static_cast<uint32_t>(topo_.gpu_domain_.size());
    // GPU ids follow the group tree (so every group is a contiguous range); each GPU keeps its
    // real local index (CUDA ordinal, rail), which is the id order only for contiguous groups.
    if (m.groups.empty()) {
      for (int i = 0; i < m.gpus; ++i) EmitGpu(node, id, depth + 1, i, Link{m.gpu_link_gbs, 0, 0, m.gpu_link_type});
    } else {
      const bool single = m.groups.size() == 1;
      for (const GroupSpec& g : m.groups) EmitGroup(g, node, id, depth + 1, single);
    }
    Finish(id, parent);
    topo_.max_gpus_per_node_ =
        std::max(topo_.max_gpus_per_node_, static_cast<uint32_t>(topo_.gpu_domain_.size()) - base);
    return {};
  }

  void EmitGroup(const GroupSpec& g, NodeId node, DomainId parent, uint32_t depth, bool whole_node) {
    Domain d;
    d.level = Level::kGroup;
    d.kind = g.kind;
    d.name =
        topo_.domains_[topo_.node_domain_[node.value].value].name + "/" + g.kind + std::to_string(group_counter_++);
    d.uplink = whole_node ? Link{}
                          : Link{g.uplink.gbs, g.uplink.lanes, g.uplink.lane_gbs,
                                 g.uplink.type == LinkType::kNone ? LinkType::kPcie : g.uplink.type};
    const DomainId id = Push(std::move(d), parent, depth);
    for (int gpu : g.gpus) EmitGpu(node, id, depth + 1, gpu, Link{g.gpu_link_gbs, 0, 0, g.gpu_link_type});
    const bool single = whole_node && g.gpus.empty() && g.children.size() == 1;
    for (const GroupSpec& c : g.children) EmitGroup(c, node, id, depth + 1, single);
    Finish(id, parent);
  }

  void EmitGpu(NodeId node, DomainId parent, uint32_t depth, int local, Link link) {
    Domain d;
    d.level = Level::kGpu;
    d.kind = "gpu";
    d.name = topo_.domains_[topo_.node_domain_[node.value].value].name + "/gpu" + std::to_string(local);
    d.uplink = link;
    const DomainId id = Push(std::move(d), parent, depth);
    topo_.gpu_domain_.push_back(id);
    topo_.gpu_node_.push_back(node);
    topo_.gpu_local_.push_back(static_cast<uint16_t>(local));
    Finish(id, parent);
  }

  void FinishState() {
    const size_t n = topo_.domains_.size();
    topo_.child_begin_.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      topo_.child_begin_[i + 1] = topo_.child_begin_[i] + static_cast<uint32_t>(kids_[i].size());
      topo_.children_.insert(topo_.children_.end(), kids_[i].begin(), kids_[i].end());
    }
    topo_.owner_.assign(topo_.gpu_domain_.size(), kNoJob);
    topo_.node_state_.assign(topo_.node_domain_.size(), NodeState::kUp);
    topo_.free_.resize(n);
    topo_.free_nodes_.resize(n);
    topo_.hist_stride_ = topo_.max_gpus_per_node_ + 1;
    topo_.hist_.assign(n * topo_.hist_stride_, 0);
    topo_.load_mbs_.assign(n, 0);
    topo_.load_jobs_.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const Domain& d = topo_.domains_[i];
      topo_.free_[i] = d.gpu_count;
      topo_.free_nodes_[i] = d.node_count;
    }
    for (const DomainId nd : topo_.node_domain_) {
      const uint32_t g = topo_.domains_[nd.value].gpu_count;
      for (DomainId a = nd; a.valid(); a = topo_.domains_[a.value].parent)
        topo_.hist_[a.value * topo_.hist_stride_ + g]++;
    }
  }

  const TopologySpec& spec_;
  Topology topo_;
  std::unordered_map<std::string, size_t> switch_index_;
  std::vector<std::vector<Item>> children_of_;
  std::vector<bool> visited_;
  size_t emitted_switches_ = 0;
  std::vector<std::vector<DomainId>> kids_;
  int group_counter_ = 0;
};

Result<Topology> Topology::Build(const TopologySpec& spec) { return TopologyBuilder(spec).Build(); }

}  // namespace phalanx
