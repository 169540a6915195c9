#include "core/sched/partition.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/topology/topology.h"

namespace phalanx {

std::string_view PartitionStateName(PartitionState state) {
  switch (state) {
    case PartitionState::kUp: return "UP";
    case PartitionState::kDown: return "DOWN";
    case PartitionState::kDrain: return "DRAIN";
    case PartitionState::kInactive: return "INACTIVE";
  }
  return "UP";
}

std::optional<PartitionState> ParsePartitionState(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (PartitionState s :
       {PartitionState::kUp, PartitionState::kDown, PartitionState::kDrain, PartitionState::kInactive}) {
    if (upper == PartitionStateName(s)) return s;
  }
  return std::nullopt;
}

Result<PartitionTable> PartitionTable::Build(const std::vector<PartitionConfig>& configs, const Topology& topo,
                                             Duration default_walltime, Duration max_walltime) {
  std::vector<PartitionConfig> list = configs;
  if (list.empty()) {
    PartitionConfig all;
    all.name = "default";
    all.is_default = true;
    list.push_back(std::move(all));
  }
  if (list.size() > kMax)
    return Fail("partitions", std::to_string(list.size()) + " partitions: at most " + std::to_string(kMax));
  PartitionTable t;
  bool have_default = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const PartitionConfig& c = list[i];
    const std::string where = "partitions." + (c.name.empty() ? std::to_string(i) : c.name);
    if (c.name.empty()) return Fail(where, "name: empty");
    if (t.Find(c.name)) return Fail(where, "name: partition '" + c.name + "' defined twice");
    if (c.name.find(',') != std::string::npos) return Fail(where, "name '" + c.name + "': no commas in a name");
    Partition p;
    p.name = c.name;
    p.state = c.state;
    p.default_walltime = c.default_walltime > 0 ? c.default_walltime : default_walltime;
    p.max_walltime = c.max_walltime > 0 ? c.max_walltime : max_walltime;
    if (c.default_walltime < 0 || c.max_walltime < 0) return Fail(where, "walltimes must not be negative");
    if (p.default_walltime > p.max_walltime) {
      return Fail(where, "default_walltime " + std::to_string(p.default_walltime) + "s > max_walltime " +
                             std::to_string(p.max_walltime) + "s");
    }
    p.max_gpus_per_job = c.max_gpus_per_job;
    p.max_gpus_per_user = c.max_gpus_per_user;
    p.has_node.assign(topo.node_count(), c.nodes.empty() ? 1 : 0);
    for (const std::string& n : c.nodes) {
      const NodeId id = topo.find_node(n);
      if (!id.valid()) return Fail(where, "nodes: unknown node '" + n + "'");
      p.has_node[id.value] = 1;
    }
    p.all_nodes = std::all_of(p.has_node.begin(), p.has_node.end(), [](uint8_t b) { return b != 0; });
    for (uint32_t n = 0; n < topo.node_count(); ++n) {
      const uint32_t g = topo.node_gpu_count(NodeId(n));
      if (p.has_node[n]) {
        p.gpus += g;
        p.max_node_gpus = std::max(p.max_node_gpus, g);
      }
    }
    for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
      if (!p.has_node[topo.node_of(GpuId(g)).value]) p.outside.push_back(GpuId(g));
    }
    if (c.is_default) {
      if (have_default)
        return Fail(where, "default: a second default partition (the first is '" + t.parts_[t.default_].name + "')");
      have_default = true;
      t.default_ = static_cast<uint32_t>(i);
    }
    t.parts_.push_back(std::move(p));
  }
  return t;
}

std::optional<uint32_t> PartitionTable::Find(std::string_view name) const {
  for (uint32_t i = 0; i < parts_.size(); ++i) {
    if (parts_[i].name == name) return i;
  }
  return std::nullopt;
}

Result<std::vector<uint32_t>> PartitionTable::Resolve(const std::vector<std::string>& names) const {
  if (names.empty()) return std::vector<uint32_t>{default_};
  std::vector<uint32_t> ids;
  for (const std::string& n : names) {
    auto i = Find(n);
    if (!i) {
      std::string known;
      for (const Partition& p : parts_) known += (known.empty() ? "" : ", ") + p.name;
      return Fail("partition", "unknown partition '" + n + "' (known: " + known + ")");
    }
    if (std::find(ids.begin(), ids.end(), *i) != ids.end())
      return Fail("partition", "partition '" + n + "' listed twice");
    ids.push_back(*i);
  }
  return ids;
}

uint32_t PartitionTable::Holding(const std::vector<uint32_t>& ids, const std::vector<GpuId>& gpus,
                                 const Topology& topo) const {
  for (uint32_t i : ids) {
    const Partition& p = parts_[i];
    if (std::all_of(gpus.begin(), gpus.end(), [&](GpuId g) { return p.has_node[topo.node_of(g).value] != 0; }))
      return i;
  }
  return ids.empty() ? default_ : ids.front();
}

}  // namespace phalanx
