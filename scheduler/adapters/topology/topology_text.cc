#include "adapters/topology/topology_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

namespace phalanx {
namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// 1.0 -> "1:1", 2.0 -> "2:1", 1.5 -> "1.5:1".
std::string Ratio(double v) { return (std::fabs(v - std::round(v)) < 1e-9 ? Fixed(v, 0) : Fixed(v, 2)) + ":1"; }

std::string Bandwidth(double gbs) {
  if (gbs >= 1000) return Fixed(gbs / 1000, gbs >= 10000 ? 1 : 2) + " TB/s";
  return Fixed(gbs, gbs == std::floor(gbs) ? 0 : 1) + " GB/s";
}

std::string Plural(uint64_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

bool IsSwitchLevel(Level l) { return l >= Level::kNvlDomain; }

// "0-3,6" for the free local GPUs of a node.
std::string FreeLocalGpus(const Topology& topo, NodeId n) {
  std::vector<uint32_t> free;
  const Domain& d = topo.domain(topo.node_domain(n));
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
    if (topo.is_free(GpuId(g))) free.push_back(topo.local_index(GpuId(g)));
  }
  std::sort(free.begin(), free.end());
  std::string out;
  for (size_t i = 0; i < free.size();) {
    size_t j = i;
    while (j + 1 < free.size() && free[j + 1] == free[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(free[i]) + (j > i ? "-" + std::to_string(free[j]) : "");
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

// What a domain shows about itself, besides the name: used for the line and for deciding which
// siblings are alike.
std::string Describe(const Topology& topo, DomainId id) {
  const Domain& d = topo.domain(id);
  std::string out = std::string(LevelName(d.level));
  if (d.level == Level::kNode || d.level == Level::kGroup) out += " " + d.kind;
  if (d.rail_optimized) out += ", rail-optimized";
  if (IsSwitchLevel(d.level) && d.parent.valid()) {
    out += ", up " + Bandwidth(d.uplink.gbs);
    if (d.oversubscription > 1.0 + 1e-9) out += " (" + Ratio(d.oversubscription) + " oversubscribed)";
  }
  return out;
}

std::string FreeText(const Topology& topo, DomainId id) {
  const Domain& d = topo.domain(id);
  std::string out = std::to_string(topo.free_gpus(id)) + "/" + std::to_string(d.gpu_count) + " GPUs free";
  if (d.level == Level::kNode) {
    const NodeId n(d.first_node);
    if (topo.node_state(n) != NodeState::kUp) return out + " [" + std::string(NodeStateName(topo.node_state(n))) + "]";
    if (topo.free_gpus(id) != 0 && topo.free_gpus(id) != d.gpu_count) out += " (free: " + FreeLocalGpus(topo, n) + ")";
    return out;
  }
  if (d.level > Level::kNode)
    out += ", " + std::to_string(topo.free_nodes(id)) + "/" + std::to_string(d.node_count) + " nodes free";
  return out;
}

class TreePrinter {
 public:
  TreePrinter(const Topology& topo, const TreeOptions& options) : topo_(topo), options_(options) {}

  std::string Print() {
    const DomainId root = topo_.root();
    out_ += topo_.domain(root).name + " [" + Describe(topo_, root) + "]: " + FreeText(topo_, root) + "\n";
    Children(root, "", 1);
    return out_;
  }

 private:
  bool Alike(DomainId a, DomainId b) const {
    const Domain& x = topo_.domain(a);
    const Domain& y = topo_.domain(b);
    return x.level == y.level && x.kind == y.kind && x.gpu_count == y.gpu_count && x.node_count == y.node_count &&
           topo_.free_gpus(a) == topo_.free_gpus(b) && topo_.free_nodes(a) == topo_.free_nodes(b) &&
           Describe(topo_, a) == Describe(topo_, b) && topo_.children(a).size() == topo_.children(b).size() &&
           (x.level != Level::kNode || topo_.free_gpus(a) == x.gpu_count || topo_.free_gpus(a) == 0);
  }

  void Children(DomainId parent, const std::string& indent, int depth) {
    if (depth > options_.max_depth) return;
    std::vector<DomainId> kids;
    for (DomainId c : topo_.children(parent)) {
      if (topo_.domain(c).level != Level::kGpu) kids.push_back(c);
    }
    for (size_t i = 0; i < kids.size();) {
      size_t j = i;
      while (j + 1 < kids.size() && Alike(kids[i], kids[j + 1])) ++j;
      const size_t run = j - i + 1;
      const bool last = j + 1 == kids.size();
      const std::string branch = indent + (last ? "`- " : "|- ");
      const std::string next_indent = indent + (last ? "   " : "|  ");
      if (run >= static_cast<size_t>(std::max(2, options_.collapse_runs))) {
        const Domain& first = topo_.domain(kids[i]);
        out_ += branch + first.name + ".." + topo_.domain(kids[j]).name + " (" + std::to_string(run) + " x " +
                Describe(topo_, kids[i]) + "), each: " + FreeText(topo_, kids[i]) + "\n";
        // Show what one of them looks like inside, marked as such.
        if (depth < options_.max_depth && !topo_.children(kids[i]).empty() && first.level > Level::kNode) {
          out_ += next_indent + "(each like " + first.name + ":)\n";
          Children(kids[i], next_indent, depth + 1);
        }
      } else {
        for (size_t k = i; k <= j; ++k) {
          const bool last_k = k + 1 == kids.size();
          const std::string b = indent + (last_k ? "`- " : "|- ");
          out_ += b + topo_.domain(kids[k]).name + " [" + Describe(topo_, kids[k]) + "]: " + FreeText(topo_, kids[k]) +
                  "\n";
          Children(kids[k], indent + (last_k ? "   " : "|  "), depth + 1);
        }
      }
      i = j + 1;
    }
  }

  const Topology& topo_;
  const TreeOptions& options_;
  std::string out_;
};

}  // namespace

std::array<uint32_t, kLevelCount> LargestFreeBlocks(const Topology& topo) {
  std::array<uint32_t, kLevelCount> best{};
  for (size_t i = 0; i < topo.domain_count(); ++i) {
    const DomainId id(static_cast<uint32_t>(i));
    const auto level = static_cast<size_t>(topo.domain(id).level);
    best[level] = std::max(best[level], topo.free_gpus(id));
  }
  return best;
}

std::string FreeBlocksLine(const Topology& topo) {
  const auto best = LargestFreeBlocks(topo);
  std::string out;
  for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kGroup); --l) {
    if (topo.count_at_level(static_cast<Level>(l)) == 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(LevelName(static_cast<Level>(l))) + " " +
           std::to_string(best[static_cast<size_t>(l)]);
  }
  return out;
}

std::string TopologySummary(const Topology& topo) {
  const DomainId root = topo.root();
  std::string out = "cluster " + topo.name() + ": " + Plural(topo.node_count(), "node") + ", " +
                    Plural(topo.gpu_count(), "GPU") + "\n";
  // Per switch level: count, oversubscription range, rail-optimized count.
  struct LevelStats {
    int count = 0, rail = 0;
    double min_over = 1e300, max_over = 0;
  };
  std::array<LevelStats, kLevelCount> stats{};
  std::map<std::string, std::pair<int, uint32_t>> models;  // name -> (nodes, GPUs per node)
  for (size_t i = 0; i < topo.domain_count(); ++i) {
    const Domain& d = topo.domain(DomainId(static_cast<uint32_t>(i)));
    if (d.level == Level::kNode) {
      auto& m = models[d.kind];
      ++m.first;
      m.second = d.gpu_count;
    }
    if (!IsSwitchLevel(d.level) || d.kind == "disconnected") continue;
    LevelStats& s = stats[static_cast<size_t>(d.level)];
    ++s.count;
    s.rail += d.rail_optimized ? 1 : 0;
    if (d.parent.valid()) {
      s.min_over = std::min(s.min_over, d.oversubscription);
      s.max_over = std::max(s.max_over, d.oversubscription);
    }
  }
  std::string switches, over, rails;
  for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kNvlDomain); --l) {
    const LevelStats& s = stats[static_cast<size_t>(l)];
    if (s.count == 0) continue;
    const std::string name(LevelName(static_cast<Level>(l)));
    switches += (switches.empty() ? "" : ", ") + std::to_string(s.count) + " " + name;
    if (s.max_over > 0 && l != static_cast<int>(Level::kNvlDomain)) {
      const std::string range =
          s.max_over - s.min_over < 1e-9 ? Ratio(s.max_over) : Ratio(s.min_over) + " to " + Ratio(s.max_over);
      over += (over.empty() ? "" : ", ") + name + " " + range;
    }
    if (s.rail > 0)
      rails += (rails.empty() ? "" : ", ") + std::to_string(s.rail) + " of " + std::to_string(s.count) + " " + name;
  }
  out += "  switches:         " + (switches.empty() ? std::string("none") : switches) + "\n";
  out += "  NVLink domains:   " + std::to_string(stats[static_cast<size_t>(Level::kNvlDomain)].count) + " multi-node\n";
  std::string model_text;
  for (const auto& [name, m] : models) {
    model_text += (model_text.empty() ? "" : ", ") + name + " x" + std::to_string(m.first) + " (" +
                  std::to_string(m.second) + " GPUs)";
  }
  out += "  node models:      " + model_text + "\n";
  out += "  oversubscription: " + (over.empty() ? std::string("none (single node)") : over) + "\n";
  out += "  rail-optimized:   " + (rails.empty() ? std::string("none") : rails) + "\n";
  if (topo.domain(root).kind == "disconnected")
    out += "  note:             several top-level trees with no links between them\n";
  out += "  free:             " + std::to_string(topo.free_gpus(root)) + "/" + std::to_string(topo.gpu_count()) +
         " GPUs, " + std::to_string(topo.free_nodes(root)) + "/" + std::to_string(topo.node_count()) + " whole nodes\n";
  out += "  largest free block per level: " + FreeBlocksLine(topo) + "\n";
  return out;
}

std::string TopologyTree(const Topology& topo, const TreeOptions& options) {
  return TreePrinter(topo, options).Print();
}

std::string TopologyTree(const Topology& topo, int max_depth) {
  TreeOptions o;
  o.max_depth = max_depth;
  return TopologyTree(topo, o);
}

}  // namespace phalanx
