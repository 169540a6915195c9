#include "core/topology/topology.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

namespace phalanx {

std::string_view NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kUp: return "up";
    case NodeState::kDrain: return "drain";
    case NodeState::kDown: return "down";
  }
  return "up";
}

namespace {

bool BadBandwidth(double gbs) { return !std::isfinite(gbs) || gbs < 0; }

std::string ModelWhere(const NodeModel& m) { return "node model '" + m.name + "'"; }

// Checks that the group tree of `model` covers GPUs 0..gpus-1 exactly once, with sane links.
Status ValidateModel(const NodeModel& model) {
  if (model.gpus <= 0) return Fail(ModelWhere(model), "has " + std::to_string(model.gpus) + " GPUs");
  if (model.gpus > 1024) return Fail(ModelWhere(model), "has too many GPUs (" + std::to_string(model.gpus) + ")");
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
        return Fail(ModelWhere(model), "GPU index " + std::to_string(gpu) + " out of range 0.." + std::to_string(model.gpus - 1));
      }
      if (seen[static_cast<size_t>(gpu)]++) return Fail(ModelWhere(model), "GPU " + std::to_string(gpu) + " is in two groups");
    }
    const bool siblings = g.children.size() + g.gpus.size() > 1;
    for (const GroupSpec& c : g.children) {
      if (auto s = walk(c, siblings); !s) return s;
    }
    return {};
  };
  const bool top_siblings = model.groups.size() > 1;
  for (const GroupSpec& g : model.groups) {
    if (auto s = walk(g, top_siblings); !s) return s;
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
    for (const NodeModel& m : spec_.models) {
      if (auto s = ValidateModel(m); !s) return std::unexpected(s.error());
    }
    if (auto s = Index(); !s) return std::unexpected(s.error());
    topo_.name_ = spec_.name;
    // Roots: top-level switches and parentless nodes.
    std::vector<Item> tops;
    for (size_t i = 0; i < spec_.switches.size(); ++i) {
      if (spec_.switches[i].parent.empty()) tops.push_back({true, i});
    }
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      if (spec_.nodes[i].parent.empty()) tops.push_back({false, i});
    }
    if (tops.empty()) return Fail(spec_.switches.front().where, "every switch has a parent: the switch graph has a cycle");
    if (tops.size() == 1) {
      if (auto s = Emit(tops[0], DomainId(), 0); !s) return std::unexpected(s.error());
    } else {
      Domain root;
      root.level = Level::kCore;
      root.name = "cluster";
      root.kind = "disconnected";
      const DomainId id = Push(std::move(root), DomainId(), 0);
      for (const Item& t : tops) {
        if (auto s = Emit(t, id, 1); !s) return std::unexpected(s.error());
        // No links between disconnected trees: crossing the synthetic root is impossible.
        topo_.domains_[kids_[id.value].back().value].uplink = Link{0, 0, 0, LinkType::kInfiniband};
      }
      Finish(id, DomainId());
    }
    if (emitted_switches_ != spec_.switches.size()) {
      for (size_t i = 0; i < spec_.switches.size(); ++i) {
        if (!visited_[i]) return Fail(spec_.switches[i].where, "switch '" + spec_.switches[i].name + "' is part of a parent cycle");
      }
    }
    FinishState();
    return std::move(topo_);
  }

 private:
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
        return Fail(s.where, "switch '" + s.name + "': oversubscription must be >= 1 (got " + std::to_string(s.oversubscription) + ")");
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
      if (it == switch_index_.end()) return Fail(s.where, "switch '" + s.name + "' has unknown parent switch '" + s.parent + "'");
      if (it->second == i) return Fail(s.where, "switch '" + s.name + "' is its own parent");
      children_of_[it->second].push_back({true, i});
    }
    for (size_t i = 0; i < spec_.nodes.size(); ++i) {
      const NodeSpec& n = spec_.nodes[i];
      if (n.parent.empty()) continue;
      auto it = switch_index_.find(n.parent);
      if (it == switch_index_.end()) return Fail(n.where, "node '" + n.name + "' is under unknown switch '" + n.parent + "'");
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
    if (depth > 64) return Fail(item.is_switch ? spec_.switches[item.index].where : "", "topology deeper than 64 levels");
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
      if (c.is_switch && visited_[c.index]) return Fail(spec_.switches[c.index].where, "switch '" + spec_.switches[c.index].name + "' is part of a parent cycle");
      if (c.is_switch && spec_.switches[c.index].level >= s.level) {
        return Fail(spec_.switches[c.index].where, "switch '" + spec_.switches[c.index].name + "' (level " +
                                                       std::string(LevelName(spec_.switches[c.index].level)) + ") is under '" + s.name +
                                                       "' (level " + std::string(LevelName(s.level)) + "): levels must grow upwards");
      }
      if (auto st = Emit(c, id, depth + 1); !st) return st;
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
      if (me.uplink.gbs <= 0) return Fail(s.where, "switch '" + s.name + "' has no uplink bandwidth (give LinkSpeed or NIC speeds)");
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
        if (m.nvl_gbs_per_gpu <= 0) return Fail(n.where, "node '" + n.name + "' is in an NVLink domain but its model has no nvl_gbs_per_gpu");
        d.uplink = Link{m.gpus * m.nvl_gbs_per_gpu, static_cast<uint32_t>(m.gpus), m.nvl_gbs_per_gpu, LinkType::kNvlink};
      } else {
        if (m.nics <= 0 || m.nic_gbs <= 0) return Fail(n.where, "node '" + n.name + "' is under a switch but its model '" + m.name + "' has no NIC");
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
    topo_.max_gpus_per_node_ = std::max(topo_.max_gpus_per_node_, static_cast<uint32_t>(topo_.gpu_domain_.size()) - base);
    return {};
  }

  void EmitGroup(const GroupSpec& g, NodeId node, DomainId parent, uint32_t depth, bool whole_node) {
    Domain d;
    d.level = Level::kGroup;
    d.kind = g.kind;
    d.name = topo_.domains_[topo_.node_domain_[node.value].value].name + "/" + g.kind + std::to_string(group_counter_++);
    d.uplink = whole_node ? Link{} : Link{g.uplink.gbs, g.uplink.lanes, g.uplink.lane_gbs,
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
      for (DomainId a = nd; a.valid(); a = topo_.domains_[a.value].parent) topo_.hist_[a.value * topo_.hist_stride_ + g]++;
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

DomainId Topology::ancestor_at_depth(DomainId d, uint32_t depth) const {
  while (domains_[d.value].depth > depth) d = domains_[d.value].parent;
  return d;
}

DomainId Topology::lowest_common_ancestor(DomainId a, DomainId b) const {
  const uint32_t depth = std::min(domains_[a.value].depth, domains_[b.value].depth);
  a = ancestor_at_depth(a, depth);
  b = ancestor_at_depth(b, depth);
  while (a != b) {
    a = domains_[a.value].parent;
    b = domains_[b.value].parent;
  }
  return a;
}

GpuId Topology::node_gpu(NodeId n, uint32_t local) const {
  const Domain& d = domains_[node_domain_[n.value].value];
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
    if (gpu_local_[g] == local) return GpuId(g);
  }
  return GpuId();
}

DomainId Topology::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? DomainId() : it->second;
}

NodeId Topology::find_node(std::string_view name) const {
  const DomainId d = find(name);
  if (!d.valid() || domains_[d.value].level != Level::kNode) return NodeId();
  return NodeId(domains_[d.value].first_node);
}

int Topology::count_at_level(Level level) const {
  return static_cast<int>(std::count_if(domains_.begin(), domains_.end(), [&](const Domain& d) { return d.level == level; }));
}

void Topology::ChangeNodeFree(NodeId n, uint32_t before, uint32_t after, uint32_t total) {
  for (DomainId a = node_domain_[n.value]; a.valid(); a = domains_[a.value].parent) {
    hist_[a.value * hist_stride_ + before]--;
    hist_[a.value * hist_stride_ + after]++;
    if (before == total) free_nodes_[a.value]--;
    if (after == total) free_nodes_[a.value]++;
  }
}

void Topology::ChangeGpu(GpuId g, bool becomes_free) {
  const NodeId n = gpu_node_[g.value];
  if (node_state_[n.value] != NodeState::kUp) return;  // not counted while unavailable
  const uint32_t before = node_free(n);
  const uint32_t after = becomes_free ? before + 1 : before - 1;
  for (DomainId a = gpu_domain_[g.value]; a.valid(); a = domains_[a.value].parent) {
    free_[a.value] = becomes_free ? free_[a.value] + 1 : free_[a.value] - 1;
  }
  ChangeNodeFree(n, before, after, node_gpu_count(n));
}

std::span<const GpuId> Topology::job_gpus(JobId job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.suspended) return {};
  return it->second.gpus;
}

void Topology::Charge(const JobAlloc& alloc, int sign) {
  for (DomainId d : alloc.crossed) {
    load_mbs_[d.value] += sign * alloc.ring_mbs;
    load_jobs_[d.value] = sign > 0 ? load_jobs_[d.value] + 1 : load_jobs_[d.value] - 1;
  }
}

Status Topology::Hold(std::span<const GpuId> gpus) {
  for (GpuId g : gpus) {
    if (g.value >= gpu_count() || !is_free(g)) return Fail("hold", "GPU " + std::to_string(g.value) + " is not free");
  }
  for (GpuId g : gpus) {
    owner_[g.value] = kHeld;
    ChangeGpu(g, false);
  }
  return {};
}

Status Topology::Unhold(std::span<const GpuId> gpus) {
  for (GpuId g : gpus) {
    if (g.value >= gpu_count() || owner_[g.value] != kHeld) return Fail("unhold", "GPU " + std::to_string(g.value) + " is not held");
  }
  for (GpuId g : gpus) {
    owner_[g.value] = kNoJob;
    ChangeGpu(g, true);
  }
  return {};
}

Status Topology::Suspend(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.suspended) return Fail("job " + std::to_string(job), "holds no GPUs to suspend");
  for (GpuId g : it->second.gpus) {
    owner_[g.value] = kNoJob;
    ChangeGpu(g, true);
  }
  Charge(it->second, -1);
  it->second.suspended = true;
  return {};
}

Status Topology::Resume(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || !it->second.suspended) return Fail("job " + std::to_string(job), "is not suspended");
  for (GpuId g : it->second.gpus) {
    if (owner_[g.value] != kNoJob) return Fail("job " + std::to_string(job), "GPU " + std::to_string(g.value) + " was taken while suspended");
  }
  for (GpuId g : it->second.gpus) {
    owner_[g.value] = job;
    ChangeGpu(g, false);
  }
  Charge(it->second, +1);
  it->second.suspended = false;
  return {};
}

double Topology::job_ring_gbs(JobId job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0.0 : static_cast<double>(it->second.ring_mbs) / 1000.0;
}

Status Topology::Allocate(JobId job, std::span<const GpuId> gpus, double ring_gbs) {
  return DoAllocate(job, gpus, ring_gbs, false);
}

Status Topology::Restore(JobId job, std::span<const GpuId> gpus, double ring_gbs) {
  return DoAllocate(job, gpus, ring_gbs, true);
}

Status Topology::DoAllocate(JobId job, std::span<const GpuId> gpus, double ring_gbs, bool any_node_state) {
  const std::string where = "job " + std::to_string(job);
  if (job == kNoJob) return Fail(where, "job id 0 is reserved");
  if (gpus.empty()) return Fail(where, "allocation of zero GPUs");
  if (jobs_.contains(job)) return Fail(where, "already holds GPUs");
  std::vector<GpuId> sorted(gpus.begin(), gpus.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    const GpuId g = sorted[i];
    if (g.value >= gpu_count()) return Fail(where, "GPU id " + std::to_string(g.value) + " out of range");
    if (i > 0 && sorted[i - 1] == g) return Fail(where, "GPU " + domains_[gpu_domain_[g.value].value].name + " listed twice");
    if (any_node_state ? owner_[g.value] != kNoJob : !is_free(g)) {
      return Fail(where, "GPU " + domains_[gpu_domain_[g.value].value].name +
                             (owner_[g.value] != kNoJob ? " is held by job " + std::to_string(owner_[g.value]) : " is on an unavailable node"));
    }
  }
  if (!std::isfinite(ring_gbs) || ring_gbs < 0 || ring_gbs > 1e9) return Fail(where, "bad ring bandwidth " + std::to_string(ring_gbs));
  JobAlloc alloc;
  alloc.ring_mbs = std::llround(ring_gbs * 1000.0);
  // Uplinks the job's ring crosses: domains holding some but not all of its GPUs (GPU links are
  // private to the job, so they are not charged).
  if (sorted.size() > 1 && alloc.ring_mbs > 0) {
    if (scratch_count_.size() != domains_.size()) scratch_count_.assign(domains_.size(), 0);
    std::vector<DomainId> touched;
    for (GpuId g : sorted) {
      for (DomainId a = domains_[gpu_domain_[g.value].value].parent; a.valid(); a = domains_[a.value].parent) {
        if (scratch_count_[a.value]++ == 0) touched.push_back(a);
      }
    }
    for (DomainId d : touched) {
      if (scratch_count_[d.value] < sorted.size()) alloc.crossed.push_back(d);
      scratch_count_[d.value] = 0;
    }
    std::sort(alloc.crossed.begin(), alloc.crossed.end());
  }
  for (GpuId g : sorted) {
    owner_[g.value] = job;
    ChangeGpu(g, false);
  }
  for (DomainId d : alloc.crossed) {
    load_mbs_[d.value] += alloc.ring_mbs;
    load_jobs_[d.value]++;
  }
  alloc.gpus = std::move(sorted);
  jobs_.emplace(job, std::move(alloc));
  return {};
}

Status Topology::Release(JobId job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.suspended) return Fail("job " + std::to_string(job), "holds no GPUs");
  for (GpuId g : it->second.gpus) {
    owner_[g.value] = kNoJob;
    ChangeGpu(g, true);
  }
  for (DomainId d : it->second.crossed) {
    load_mbs_[d.value] -= it->second.ring_mbs;
    load_jobs_[d.value]--;
  }
  jobs_.erase(it);
  return {};
}

Status Topology::SetNodeState(NodeId node, NodeState state) {
  if (node.value >= node_count()) return Fail("node " + std::to_string(node.value), "unknown node id");
  const NodeState old = node_state_[node.value];
  const bool was_up = old == NodeState::kUp, will_be_up = state == NodeState::kUp;
  if (was_up == will_be_up) {
    node_state_[node.value] = state;
    return {};
  }
  const DomainId nd = node_domain_[node.value];
  const Domain& d = domains_[nd.value];
  // Count (or uncount) the node's unowned GPUs.
  uint32_t unowned = 0;
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
    if (owner_[g] != kNoJob) continue;
    ++unowned;
    for (DomainId a = gpu_domain_[g]; a != nd; a = domains_[a.value].parent) {
      free_[a.value] = will_be_up ? free_[a.value] + 1 : free_[a.value] - 1;
    }
  }
  for (DomainId a = nd; a.valid(); a = domains_[a.value].parent) {
    free_[a.value] = will_be_up ? free_[a.value] + unowned : free_[a.value] - unowned;
    uint32_t& h = hist_[a.value * hist_stride_ + unowned];
    h = will_be_up ? h + 1 : h - 1;
    if (unowned == d.gpu_count) free_nodes_[a.value] = will_be_up ? free_nodes_[a.value] + 1 : free_nodes_[a.value] - 1;
  }
  node_state_[node.value] = state;
  return {};
}

std::string Topology::CheckInvariants() const {
  std::ostringstream out;
  const size_t n = domains_.size();
  std::vector<uint32_t> free(n, 0), free_nodes(n, 0), hist(n * hist_stride_, 0);
  std::vector<uint32_t> jobs(n, 0);
  std::vector<int64_t> mbs(n, 0);
  for (uint32_t g = 0; g < gpu_count(); ++g) {
    if (owner_[g] != kNoJob && owner_[g] != kHeld) {
      auto it = jobs_.find(owner_[g]);
      if (it == jobs_.end() || !std::binary_search(it->second.gpus.begin(), it->second.gpus.end(), GpuId(g))) {
        out << "GPU " << g << " owned by job " << owner_[g] << " which does not list it\n";
      }
    }
    if (!is_free(GpuId(g))) continue;
    for (DomainId a = gpu_domain_[g]; a.valid(); a = domains_[a.value].parent) free[a.value]++;
  }
  size_t owned = 0;
  for (const auto& [job, alloc] : jobs_) {
    if (alloc.suspended) continue;
    owned += alloc.gpus.size();
    for (GpuId g : alloc.gpus) {
      if (owner_[g.value] != job) out << "job " << job << " lists GPU " << g.value << " owned by " << owner_[g.value] << "\n";
    }
    for (DomainId d : alloc.crossed) {
      jobs[d.value]++;
      mbs[d.value] += alloc.ring_mbs;
    }
  }
  const size_t owners = static_cast<size_t>(std::count_if(owner_.begin(), owner_.end(), [](JobId j) { return j != kNoJob && j != kHeld; }));
  if (owners != owned) out << owners << " owned GPUs but jobs list " << owned << "\n";
  for (uint32_t i = 0; i < node_count(); ++i) {
    if (node_state_[i] != NodeState::kUp) continue;
    const DomainId nd = node_domain_[i];
    const uint32_t f = free[nd.value];
    for (DomainId a = nd; a.valid(); a = domains_[a.value].parent) {
      hist[a.value * hist_stride_ + f]++;
      if (f == domains_[nd.value].gpu_count) free_nodes[a.value]++;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (free[i] != free_[i]) out << "domain " << domains_[i].name << ": free " << free_[i] << " != recomputed " << free[i] << "\n";
    if (free_nodes[i] != free_nodes_[i]) out << "domain " << domains_[i].name << ": free_nodes " << free_nodes_[i] << " != " << free_nodes[i] << "\n";
    if (jobs[i] != load_jobs_[i]) out << "domain " << domains_[i].name << ": crossing jobs " << load_jobs_[i] << " != " << jobs[i] << "\n";
    if (mbs[i] != load_mbs_[i]) out << "domain " << domains_[i].name << ": crossing MB/s " << load_mbs_[i] << " != " << mbs[i] << "\n";
  }
  if (hist != hist_) out << "node free-count histograms differ\n";
  return out.str();
}

}  // namespace phalanx
