// The exhaustive reference of the placement-quality tests (placer_exhaustive.h).
#include "placer_exhaustive.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/topology/node_models.h"

namespace phalanx::placer_exhaustive {
namespace {

constexpr double kMaxSubsets = 200'000;

SwitchSpec Switch(std::string name, Level level, std::string parent, double oversub = 1.0, bool rails = false) {
  SwitchSpec s;
  s.name = std::move(name);
  s.level = level;
  s.parent = std::move(parent);
  s.oversubscription = oversub;
  s.rail_optimized = rails;
  s.where = "test";
  return s;
}

// Leaves under one spine; leaves[i] lists the model (index into `models`) of each node of leaf i.
TopologySpec TwoTier(std::string name, const std::vector<std::string_view>& models,
                     const std::vector<std::vector<int>>& leaves, double oversub, bool rails) {
  TopologySpec spec;
  spec.name = std::move(name);
  for (std::string_view m : models) spec.models.push_back(*BuiltinNodeModel(m));
  spec.switches.push_back(Switch("spine", Level::kSpine, ""));
  int n = 0;
  for (size_t l = 0; l < leaves.size(); ++l) {
    const std::string leaf = "leaf" + std::to_string(l);
    spec.switches.push_back(Switch(leaf, Level::kLeaf, "spine", oversub, rails));
    for (int model : leaves[l]) spec.nodes.push_back(NodeSpec{"n" + std::to_string(n++), leaf, model, "test"});
  }
  return spec;
}

// GB200 racks (NVL domains) of `nodes_per_rack` 4-GPU trays, racks spread over `leaves` leaves.
TopologySpec NvlRacks(std::string name, int racks, int nodes_per_rack, int leaves, double oversub) {
  TopologySpec spec;
  spec.name = std::move(name);
  spec.models.push_back(*BuiltinNodeModel("gb200-nvl"));
  spec.switches.push_back(Switch("spine", Level::kSpine, ""));
  for (int l = 0; l < leaves; ++l)
    spec.switches.push_back(Switch("leaf" + std::to_string(l), Level::kLeaf, "spine", oversub));
  for (int r = 0; r < racks; ++r) {
    const std::string rack = "rack" + std::to_string(r);
    spec.switches.push_back(Switch(rack, Level::kNvlDomain, "leaf" + std::to_string(r % leaves)));
    for (int n = 0; n < nodes_per_rack; ++n)
      spec.nodes.push_back(NodeSpec{rack + "-n" + std::to_string(n), rack, 0, "test"});
  }
  return spec;
}

double Choose(uint64_t n, uint64_t k) {
  if (k > n) return 0;
  double c = 1;
  for (uint64_t i = 1; i <= k; ++i) c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::round(c);
}

uint32_t Uniform(std::mt19937& rng, uint32_t lo, uint32_t hi) {  // inclusive; lo when hi < lo
  if (hi <= lo) return lo;
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
}

// Every node of `gpus` uses the same set of local indices.
bool RailAligned(const Topology& t, std::span<const GpuId> gpus) {
  std::vector<std::pair<uint32_t, uint32_t>> by_node;  // (node, local)
  for (GpuId g : gpus) by_node.emplace_back(t.node_of(g).value, t.local_index(g));
  std::sort(by_node.begin(), by_node.end());
  std::vector<std::vector<uint32_t>> sets;
  for (size_t i = 0; i < by_node.size(); ++i) {
    if (i == 0 || by_node[i].first != by_node[i - 1].first) sets.emplace_back();
    sets.back().push_back(by_node[i].second);
  }
  for (auto& s : sets) std::sort(s.begin(), s.end());
  return std::all_of(sets.begin(), sets.end(), [&](const auto& s) { return s == sets.front(); });
}

std::string GpuName(const Topology& t, GpuId g) { return t.domain(t.gpu_domain(g)).name; }

// The GPUs a request may use, one list per scope: for FitMode::kRequire every maximal domain of
// level <= request.level (a set is inside one such domain iff its LCA has level <= level);
// otherwise the whole cluster. Exclusive requests only see GPUs of entirely free nodes.
std::vector<std::vector<GpuId>> Scopes(const Topology& t, const PlacementRequest& r, std::optional<Level> require) {
  auto eligible = [&](GpuId g) { return t.is_free(g) && (!r.exclusive || NodeEntirelyFree(t, t.node_of(g))); };
  std::vector<std::vector<GpuId>> scopes;
  for (uint32_t i = 0; i < t.domain_count(); ++i) {
    const Domain& d = t.domain(DomainId(i));
    const bool top = !d.parent.valid();
    if (require) {
      if (d.level > *require || (!top && t.domain(d.parent).level <= *require)) continue;
    } else if (!top) {
      continue;
    }
    std::vector<GpuId> s;
    for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
      if (eligible(GpuId(g))) s.push_back(GpuId(g));
    }
    scopes.push_back(std::move(s));
  }
  return scopes;
}

// GPUs of `pool` per node, for node-shaped requests.
std::vector<std::vector<GpuId>> ByNode(const Topology& t, const std::vector<GpuId>& pool) {
  std::vector<std::vector<GpuId>> nodes;
  for (size_t i = 0; i < pool.size(); ++i) {
    if (i == 0 || t.node_of(pool[i]) != t.node_of(pool[i - 1])) nodes.emplace_back();
    nodes.back().push_back(pool[i]);
  }
  return nodes;
}

double CountSubsets(const Topology& t, const PlacementRequest& r, const std::vector<GpuId>& pool) {
  if (r.nodes == 0) return Choose(pool.size(), r.gpus);
  // Elementary symmetric polynomial e_k of C(free on node, gpus_per_node).
  std::vector<double> e(r.nodes + 1, 0);
  e[0] = 1;
  for (const auto& node : ByNode(t, pool)) {
    const double c = Choose(node.size(), r.gpus_per_node);
    for (size_t k = r.nodes; k >= 1; --k) e[k] += e[k - 1] * c;
  }
  return e[r.nodes];
}

void ForEachNodeShaped(const std::vector<std::vector<GpuId>>& nodes, const PlacementRequest& r, size_t node,
                       size_t taken, std::vector<GpuId>& cur, const std::function<void()>& fn) {
  if (taken == r.nodes) return fn();
  if (nodes.size() - node < r.nodes - taken) return;
  // Either skip this node or take gpus_per_node of its GPUs.
  ForEachNodeShaped(nodes, r, node + 1, taken, cur, fn);
  if (nodes[node].size() < r.gpus_per_node) return;
  const size_t base = cur.size();
  std::vector<GpuId> part;
  ForEachCombination(nodes[node], r.gpus_per_node, part, 0, [&] {
    cur.resize(base);
    cur.insert(cur.end(), part.begin(), part.end());
    ForEachNodeShaped(nodes, r, node + 1, taken + 1, cur, fn);
  });
  cur.resize(base);
}

// Largest number of eligible GPUs in one scope, for picking feasible-ish sizes.
uint32_t LargestScope(const std::vector<std::vector<GpuId>>& scopes) {
  size_t m = 0;
  for (const auto& s : scopes) m = std::max(m, s.size());
  return static_cast<uint32_t>(m);
}

void MakeNodeShaped(const Topology& t, std::mt19937& rng, PlacementRequest& r) {
  r.nodes = Uniform(rng, 1, std::min<uint32_t>(4, static_cast<uint32_t>(t.node_count())));
  r.gpus_per_node = Uniform(rng, r.nodes == 1 ? 2 : 1, t.max_gpus_per_node());
  r.gpus = r.nodes * r.gpus_per_node;
}

}  // namespace

const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {
      {TwoTier("h100-rail-2x2", {"dgx-h100"}, {{0, 0}, {0, 0}}, 1.0, true)},
      {TwoTier("h100-2to1-2+1", {"dgx-h100"}, {{0, 0}, {0}}, 2.0, false)},
      {TwoTier("l40s-2to1-2x2", {"l40s-pcie"}, {{0, 0}, {0, 0}}, 2.0, false)},
      {TwoTier("l40s-rail-1x3", {"l40s-pcie"}, {{0, 0, 0}}, 1.0, true)},
      {TwoTier("bridge4-2to1-2x2", {"nvlink-bridge-4"}, {{0, 0}, {0, 0}}, 2.0, false)},
      {TwoTier("mixed-h100-bridge4-l40s", {"dgx-h100", "nvlink-bridge-4", "l40s-pcie"}, {{0, 1}, {2, 1}}, 1.5, false)},
      {NvlRacks("nvl-2rack-1leaf", 2, 3, 1, 1.0), true},
      {NvlRacks("nvl-2rack-2leaf-2to1", 2, 4, 2, 2.0), true},
  };
  return shapes;
}

bool SameScore(double a, double b) { return std::abs(a - b) <= kRelTol * std::max({std::abs(a), std::abs(b), 1e-300}); }

std::vector<GpuId> FreeGpus(const Topology& t) {
  std::vector<GpuId> out;
  for (uint32_t g = 0; g < t.gpu_count(); ++g) {
    if (t.is_free(GpuId(g))) out.push_back(GpuId(g));
  }
  return out;
}

std::vector<GpuId> NodeGpus(const Topology& t, NodeId n) {
  const Domain& d = t.domain(t.node_domain(n));
  std::vector<GpuId> out;
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) out.push_back(GpuId(g));
  return out;
}

bool NodeEntirelyFree(const Topology& t, NodeId n) {
  for (GpuId g : NodeGpus(t, n)) {
    if (!t.is_free(g)) return false;
  }
  return true;
}

std::string GpuList(const Topology& t, std::span<const GpuId> gpus) {
  std::string s;
  for (GpuId g : gpus) s += (s.empty() ? "" : " ") + GpuName(t, g);
  return "[" + s + "]";
}

std::string RequestText(const PlacementRequest& r) {
  std::ostringstream o;
  o << "{gpus=" << r.gpus << " nodes=" << r.nodes << " gpus_per_node=" << r.gpus_per_node
    << " level=" << LevelName(r.level) << " fit="
    << (r.fit == FitMode::kAny      ? "any"
        : r.fit == FitMode::kPrefer ? "prefer"
                                    : "require")
    << " exclusive=" << r.exclusive << " rail_aligned=" << r.rail_aligned << "}";
  return o.str();
}

void ForEachCombination(const std::vector<GpuId>& pool, size_t k, std::vector<GpuId>& cur, size_t from,
                        const std::function<void()>& fn) {
  if (cur.size() == k) return fn();
  for (size_t i = from; i + (k - cur.size()) <= pool.size(); ++i) {
    cur.push_back(pool[i]);
    ForEachCombination(pool, k, cur, i + 1, fn);
    cur.pop_back();
  }
}

Best Exhaustive(const Topology& t, const BandwidthModel& model, const PlacementRequest& r,
                std::optional<Level> require) {
  Best best;
  const auto scopes = Scopes(t, r, require);
  for (const auto& pool : scopes) best.subsets += CountSubsets(t, r, pool);
  if (best.subsets > kMaxSubsets) {
    best.skipped = true;
    return best;
  }
  std::vector<GpuId> cur;
  auto visit = [&] {
    if (r.rail_aligned && !RailAligned(t, cur)) return;
    const double bw = model.Predict(cur).busbw_gbs;
    if (!best.any || bw > best.busbw) {
      best.any = true;
      best.busbw = bw;
      best.gpus = cur;
      std::sort(best.gpus.begin(), best.gpus.end());
    }
  };
  for (const auto& pool : scopes) {
    cur.clear();
    if (r.nodes == 0) {
      ForEachCombination(pool, r.gpus, cur, 0, visit);
    } else {
      ForEachNodeShaped(ByNode(t, pool), r, 0, 0, cur, visit);
    }
  }
  return best;
}

// Empty when `p` satisfies `r` on `t` (which the placer has not changed).
std::string CheckPlacement(const Topology& t, const BandwidthModel& model, const PlacementRequest& r,
                           const Placement& p) {
  std::ostringstream err;
  if (p.gpus.size() != r.gpus) err << "has " << p.gpus.size() << " GPUs, wants " << r.gpus << "; ";
  for (size_t i = 0; i < p.gpus.size(); ++i) {
    if (p.gpus[i].value >= t.gpu_count()) {
      err << "GPU id " << p.gpus[i].value << " out of range; ";
      return err.str();
    }
    if (i > 0 && !(p.gpus[i - 1] < p.gpus[i])) err << "GPUs not sorted/distinct at " << i << "; ";
    if (!t.is_free(p.gpus[i])) err << GpuName(t, p.gpus[i]) << " is not free; ";
  }
  if (!err.str().empty()) return err.str();
  std::vector<uint32_t> per_node(t.node_count(), 0);
  for (GpuId g : p.gpus) per_node[t.node_of(g).value]++;
  const auto used =
      static_cast<uint32_t>(std::count_if(per_node.begin(), per_node.end(), [](uint32_t c) { return c > 0; }));
  if (r.nodes > 0) {
    if (used != r.nodes) err << "uses " << used << " nodes, wants " << r.nodes << "; ";
    for (uint32_t c : per_node) {
      if (c > 0 && c != r.gpus_per_node) err << "a node holds " << c << " GPUs, wants " << r.gpus_per_node << "; ";
    }
  }
  if (r.fit == FitMode::kRequire && !p.gpus.empty()) {
    DomainId lca = t.gpu_domain(p.gpus[0]);
    for (GpuId g : p.gpus) lca = t.lowest_common_ancestor(lca, t.gpu_domain(g));
    if (t.domain(lca).level > r.level)
      err << "LCA " << t.domain(lca).name << " is above level " << LevelName(r.level) << "; ";
  }
  if (r.rail_aligned && !RailAligned(t, p.gpus)) err << "not rail-aligned; ";
  std::vector<GpuId> expect_held;
  if (r.exclusive) {
    for (uint32_t n = 0; n < t.node_count(); ++n) {
      if (per_node[n] == 0) continue;
      if (!NodeEntirelyFree(t, NodeId(n)))
        err << "node " << t.domain(t.node_domain(NodeId(n))).name << " is not entirely free; ";
      for (GpuId g : NodeGpus(t, NodeId(n))) {
        if (!std::binary_search(p.gpus.begin(), p.gpus.end(), g)) expect_held.push_back(g);
      }
    }
  }
  if (p.held != expect_held) err << "held " << GpuList(t, p.held) << ", expected " << GpuList(t, expect_held) << "; ";
  const Prediction truth = model.Predict(p.gpus);
  if (!SameScore(truth.busbw_gbs, p.prediction.busbw_gbs)) {
    err << "reported busbw " << p.prediction.busbw_gbs << " but Predict gives " << truth.busbw_gbs << "; ";
  }
  if (truth.lca != p.prediction.lca) err << "reported LCA differs from Predict; ";
  if (truth.rail_aligned != p.prediction.rail_aligned) err << "reported rail_aligned differs from Predict; ";
  return err.str();
}

std::optional<World> MakeWorld(const Shape& shape, Mode mode, std::mt19937& rng) {
  auto built = Topology::Build(shape.spec);
  if (!built) return std::nullopt;
  World w{*std::move(built), ""};
  Topology& t = w.topo;
  BandwidthModel model(t);
  std::ostringstream log;
  auto set_state = [&] {
    const NodeId n(Uniform(rng, 0, static_cast<uint32_t>(t.node_count()) - 1));
    const NodeState s = rng() % 2 ? NodeState::kDrain : NodeState::kDown;
    if (t.SetNodeState(n, s))
      log << "  SetNodeState(" << t.domain(t.node_domain(n)).name << ", " << NodeStateName(s) << ")\n";
  };
  JobId next = 1;
  auto allocate = [&](const std::vector<GpuId>& gpus) {
    if (gpus.empty()) return;
    const double ring = model.Predict(gpus).busbw_gbs;
    ASSERT_TRUE(t.Allocate(next, gpus, ring).has_value());
    log << "  Allocate(job " << next << ", " << GpuList(t, gpus) << ", ring " << ring << ")\n";
    ++next;
  };
  const bool state_first = rng() % 2;
  if (state_first && rng() % 100 < 20) set_state();
  // Per node: untouched (30%), or a random part of its free GPUs taken.
  std::vector<GpuId> take;
  for (uint32_t n = 0; n < t.node_count(); ++n) {
    std::vector<GpuId> free;
    for (GpuId g : NodeGpus(t, NodeId(n))) {
      if (t.is_free(g)) free.push_back(g);
    }
    if (free.empty() || rng() % 10 < 3) continue;
    std::shuffle(free.begin(), free.end(), rng);
    free.resize(Uniform(rng, 1, static_cast<uint32_t>(free.size())));
    take.insert(take.end(), free.begin(), free.end());
  }
  if (rng() % 2) std::shuffle(take.begin(), take.end(), rng);  // else node-local jobs
  for (size_t i = 0; i < take.size();) {
    const size_t k = std::min<size_t>(Uniform(rng, 1, 8), take.size() - i);
    allocate(std::vector<GpuId>(take.begin() + static_cast<long>(i), take.begin() + static_cast<long>(i + k)));
    i += k;
  }
  // Modes that enumerate subsets of all free GPUs get a cap on the free count.
  if (mode == Mode::kAny || mode == Mode::kRailAligned || mode == Mode::kPrefer || mode == Mode::kCombined) {
    const uint32_t cap = Uniform(rng, 3, 22);
    for (auto free = FreeGpus(t); free.size() > cap; free = FreeGpus(t)) {
      std::shuffle(free.begin(), free.end(), rng);
      free.resize(std::min<size_t>(Uniform(rng, 1, 4), free.size() - cap));
      allocate(free);
    }
  }
  if (!state_first && rng() % 100 < 20) set_state();
  w.log = log.str();
  return w;
}

PlacementRequest MakeRequest(const Shape& shape, const Topology& t, Mode mode, std::mt19937& rng) {
  PlacementRequest r;
  const auto free = static_cast<uint32_t>(FreeGpus(t).size());
  auto levels = [&] {
    std::vector<Level> l = {Level::kGroup, Level::kNode, Level::kLeaf};
    if (shape.nvl) l.push_back(Level::kNvlDomain);
    return l[rng() % l.size()];
  };
  // Mostly feasible sizes, sometimes one or two too many.
  auto size_upto = [&](uint32_t avail) {
    return rng() % 10 == 0 ? avail + Uniform(rng, 1, 2) : Uniform(rng, 2, avail);
  };
  switch (mode) {
    case Mode::kAny: r.gpus = size_upto(free); break;
    case Mode::kNodeShaped: MakeNodeShaped(t, rng, r); break;
    case Mode::kRequire:
    case Mode::kPrefer:
      r.fit = mode == Mode::kRequire ? FitMode::kRequire : FitMode::kPrefer;
      r.level = levels();
      if (rng() % 4 == 0) {
        MakeNodeShaped(t, rng, r);
      } else {
        r.gpus = size_upto(mode == Mode::kPrefer ? free : LargestScope(Scopes(t, r, r.level)));
      }
      break;
    case Mode::kExclusive:
      r.exclusive = true;
      if (rng() % 3 == 0) {
        MakeNodeShaped(t, rng, r);
      } else {
        r.gpus = size_upto(LargestScope(Scopes(t, r, std::nullopt)));
      }
      break;
    case Mode::kRailAligned:
      r.rail_aligned = true;
      if (rng() % 2) {
        MakeNodeShaped(t, rng, r);
      } else {
        r.gpus = size_upto(free);
      }
      break;
    case Mode::kCombined:
      r.fit = static_cast<FitMode>(rng() % 3);
      r.level = levels();
      r.exclusive = rng() % 4 == 0;
      r.rail_aligned = rng() % 3 == 0;
      if (rng() % 2) {
        MakeNodeShaped(t, rng, r);
      } else {
        r.gpus = size_upto(free);
      }
      break;
  }
  if (r.gpus < 2 && r.nodes == 0) r.gpus = 2;
  return r;
}

int CompareFloor(int min_compared, int planned, int generated) {
  return static_cast<int>(static_cast<int64_t>(min_compared) * generated / planned);
}

}  // namespace phalanx::placer_exhaustive
