#include "core/planner/domain_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/topology/node_models.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::NodeGpus;
using testing::TwoTier;

std::vector<GpuId> FirstGpus(const Topology& t, const std::string& node, uint32_t n) {
  auto all = NodeGpus(t, node);
  all.resize(n);
  return all;
}

// 2 leaves x 2 nodes x 8 GPUs under one spine.
class DomainPlannerSmall : public ::testing::Test {
 protected:
  DomainPlannerSmall() : topo_(Build(TwoTier(2, 2))), dp_(topo_, 0) {}
  DomainId D(const std::string& name) const { return topo_.find(name); }
  BlockCandidate C(Time t, const std::string& name) const { return {t, D(name)}; }
  Topology topo_;
  DomainPlanner dp_;
};

TEST_F(DomainPlannerSmall, PlansNodesAndAboveOnly) {
  EXPECT_NE(dp_.planner(D("spine")), nullptr);
  EXPECT_NE(dp_.planner(D("leaf1")), nullptr);
  EXPECT_EQ(dp_.planner(D("leaf1-n0"))->total(), 8);
  EXPECT_EQ(dp_.planner(topo_.gpu_domain(GpuId(0))), nullptr);
  EXPECT_EQ(dp_.planner(DomainId(100000)), nullptr);
}

TEST_F(DomainPlannerSmall, EmptyClusterBestFitByLevelRange) {
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 16, 100, 0), C(0, "leaf0"));
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 8, 100, 0), C(0, "leaf0-n0"));  // smallest block
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 4, 100, 0, Level::kLeaf), C(0, "leaf0"));
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 17, 100, 0), std::nullopt);
  EXPECT_EQ(dp_.EarliestBlock(Level::kSpine, 17, 100, 0), C(0, "spine"));
  EXPECT_EQ(dp_.EarliestBlock(Level::kCore, 33, 100, 0), std::nullopt);
  EXPECT_EQ(dp_.EarliestBlock(Level::kCore, 0, 100, 0), std::nullopt);
  EXPECT_EQ(dp_.EarliestBlock(Level::kCore, 1, 0, 0), std::nullopt);
}

TEST_F(DomainPlannerSmall, WhenDoesAWholeLeafFreeUp) {
  ASSERT_TRUE(dp_.AddAllocation(NodeGpus(topo_, "leaf0-n0"), 0, 100));
  ASSERT_TRUE(dp_.AddAllocation(FirstGpus(topo_, "leaf1-n0", 4), 0, 50));
  EXPECT_EQ(dp_.planner(D("leaf1"))->AvailAt(10), 12);
  EXPECT_EQ(dp_.planner(D("spine"))->AvailAt(60), 24);
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 16, 50, 0), C(50, "leaf1"));
  EXPECT_EQ(dp_.EarliestBlock(Level::kNode, 8, 50, 0), C(0, "leaf0-n1"));
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 12, 50, 0), C(0, "leaf1"));
  EXPECT_EQ(dp_.EarliestBlock(Level::kSpine, 16, 10, 200), C(200, "leaf0"));  // tie: lower id
  // All candidates of "16 GPUs in one leaf for 50 s", in order.
  std::vector<BlockCandidate> seq;
  for (auto c = dp_.EarliestBlock(Level::kLeaf, 16, 50, 0); c && seq.size() < 10;
       c = dp_.NextBlock(Level::kLeaf, 16, 50, 0, *c)) {
    seq.push_back(*c);
  }
  EXPECT_EQ(seq, (std::vector<BlockCandidate>{C(50, "leaf1"), C(100, "leaf0")}));
  // Ties at one time come smallest domain first, then by id.
  std::vector<BlockCandidate> eight;
  for (auto c = dp_.EarliestBlock(Level::kSpine, 8, 10, 0); c && eight.size() < 20;
       c = dp_.NextBlock(Level::kSpine, 8, 10, 0, *c)) {
    eight.push_back(*c);
  }
  // `after` need not be a candidate; an invalid domain orders first; extremes do not overflow.
  EXPECT_EQ(dp_.NextBlock(Level::kSpine, 8, 10, 0, {std::numeric_limits<int64_t>::min(), DomainId()}),
            C(0, "leaf0-n1"));
  EXPECT_EQ(dp_.NextBlock(Level::kSpine, 8, 10, 0, {50, DomainId()}), C(50, "leaf1-n0"));
  EXPECT_EQ(dp_.NextBlock(Level::kSpine, 8, 10, 0, {49, D("spine")}), C(50, "leaf1-n0"));
  EXPECT_EQ(dp_.NextBlock(Level::kSpine, 8, 10, 0, {std::numeric_limits<int64_t>::max(), DomainId()}), std::nullopt);
  EXPECT_EQ(eight, (std::vector<BlockCandidate>{C(0, "leaf0-n1"), C(0, "leaf1-n1"), C(0, "leaf0"), C(0, "leaf1"),
                                                C(0, "spine"), C(50, "leaf1-n0"), C(50, "leaf1"), C(50, "spine"),
                                                C(100, "leaf0-n0"), C(100, "leaf0"), C(100, "spine")}));
}

TEST_F(DomainPlannerSmall, RefusedAllocationsChangeNothing) {
  auto a = dp_.AddAllocation(NodeGpus(topo_, "leaf0-n0"), 10, 100);
  ASSERT_TRUE(a);
  const std::vector<GpuId> g0 = {GpuId(0)};
  EXPECT_FALSE(dp_.AddAllocation({}, 0, 10));
  EXPECT_FALSE(dp_.AddAllocation(std::vector<GpuId>{GpuId(1), GpuId(1)}, 0, 10));
  EXPECT_FALSE(dp_.AddAllocation(std::vector<GpuId>{GpuId(32)}, 0, 10));
  EXPECT_FALSE(dp_.AddAllocation(g0, 10, 10));
  EXPECT_FALSE(dp_.AddAllocation(g0, -1, 10));
  EXPECT_FALSE(dp_.AddAllocation(g0, 0, kForever + 1));
  auto over = dp_.AddAllocation(NodeGpus(topo_, "leaf0-n0"), 50, 150);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("leaf0-n0"), std::string::npos) << over.error().ToString();
  EXPECT_EQ(dp_.allocation_count(), 1u);
  EXPECT_EQ(dp_.planner(D("leaf0"))->span_count(), 1u);
  EXPECT_EQ(dp_.planner(D("spine"))->AvailAt(120), 32);
  // The next id is the one after `a`: refusals consume none.
  auto b = dp_.AddAllocation(g0, 100, 110);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->value, a->value + 1);
}

TEST_F(DomainPlannerSmall, RemoveAndAdvance) {
  auto a = dp_.AddAllocation(NodeGpus(topo_, "leaf0-n0"), 0, 100);
  auto b = dp_.AddAllocation(NodeGpus(topo_, "leaf0-n1"), 0, 300);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 32, 10, 0, Level::kLeaf), std::nullopt);
  EXPECT_EQ(dp_.EarliestBlock(Level::kSpine, 32, 10, 0), C(300, "spine"));
  ASSERT_TRUE(dp_.Remove(*b));
  EXPECT_FALSE(dp_.Remove(*b));
  EXPECT_EQ(dp_.EarliestBlock(Level::kSpine, 32, 10, 0), C(100, "spine"));
  dp_.AdvanceTo(100);
  EXPECT_EQ(dp_.origin(), 100);
  EXPECT_EQ(dp_.allocation_count(), 0u);
  EXPECT_FALSE(dp_.Remove(*a));
  EXPECT_EQ(dp_.EarliestBlock(Level::kSpine, 32, 10, 0), C(100, "spine"));
  EXPECT_FALSE(dp_.AddAllocation(NodeGpus(topo_, "leaf0-n0"), 99, 200));
}

TEST_F(DomainPlannerSmall, DownNodeIsAnAllocationUntilForever) {
  ASSERT_TRUE(dp_.AddAllocation(NodeGpus(topo_, "leaf1-n1"), 20, kForever));
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 16, 10, 0), C(0, "leaf0"));
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 16, 10, 0, Level::kLeaf), C(0, "leaf0"));
  ASSERT_TRUE(dp_.AddAllocation(FirstGpus(topo_, "leaf0-n0", 1), 0, 50));
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 16, 10, 0), C(0, "leaf1"));   // until 20 it is whole
  EXPECT_EQ(dp_.EarliestBlock(Level::kLeaf, 16, 30, 0), C(50, "leaf0"));  // leaf1 never again
  EXPECT_EQ(dp_.EarliestBlock(Level::kSpine, 32, 1, 20), std::nullopt);
}

TEST(DomainPlanner, GroupsArePlannedOnlyOnRequest) {
  TopologySpec spec = TwoTier(1, 2, "l40s-pcie");
  Topology t = Build(spec);
  DomainPlanner plain(t, 0);
  DomainPlanner groups(t, 0, {.include_groups = true});
  int group_count = 0;
  for (uint32_t d = 0; d < t.domain_count(); ++d) {
    if (t.domain(DomainId(d)).level != Level::kGroup) continue;
    ++group_count;
    EXPECT_EQ(plain.planner(DomainId(d)), nullptr);
    ASSERT_NE(groups.planner(DomainId(d)), nullptr);
  }
  EXPECT_GT(group_count, 0);
  // Two GPUs under one PCIe switch: the smallest block is that switch.
  auto c = groups.EarliestBlock(Level::kNode, 2, 10, 0, Level::kGroup);
  ASSERT_TRUE(c);
  EXPECT_EQ(t.domain(c->second).level, Level::kGroup);
  EXPECT_EQ(t.domain(c->second).gpu_count, 2u);
}

// ---- randomized comparison with per-domain per-second counts ---------------------------------

class Brute {
 public:
  static constexpr Time kHorizon = 300;
  Brute(const Topology& t, Level min_planned) {
    for (uint32_t d = 0; d < t.domain_count(); ++d) {
      const Domain& dom = t.domain(DomainId(d));
      if (dom.level < min_planned) continue;
      planned_.push_back(d);
      total_[d] = dom.gpu_count;
      level_[d] = dom.level;
      used_[d].assign(kHorizon, 0);
      tail_[d] = 0;
    }
    for (uint32_t g = 0; g < t.gpu_count(); ++g) {
      for (uint32_t d : planned_) {
        if (t.contains(DomainId(d), GpuId(g))) above_[g].push_back(d);
      }
    }
  }
  std::map<uint32_t, int64_t> Counts(const std::vector<GpuId>& gpus) const {
    std::map<uint32_t, int64_t> out;
    for (GpuId g : gpus) {
      for (uint32_t d : above_.at(g.value)) ++out[d];
    }
    return out;
  }
  int64_t MinFree(uint32_t d, Time lo, Time hi) const {
    int64_t worst = 0;
    for (Time x = lo; x < std::min(hi, kHorizon); ++x) worst = std::max(worst, used_.at(d)[x]);
    if (hi > kHorizon) worst = std::max(worst, tail_.at(d));
    return total_.at(d) - worst;
  }
  bool CanAdd(const std::vector<GpuId>& gpus, Time start, Time end) const {
    if (start < origin_ || end <= start) return false;
    for (const auto& [d, n] : Counts(gpus)) {
      if (MinFree(d, start, end) < n) return false;
    }
    return true;
  }
  void Add(uint64_t id, const std::vector<GpuId>& gpus, Time start, Time end) {
    allocs_[id] = {start, end, Counts(gpus)};
    Apply(allocs_[id], 1);
  }
  void Remove(uint64_t id) {
    Apply(allocs_.at(id), -1);
    allocs_.erase(id);
  }
  void AdvanceTo(Time now) {
    if (now <= origin_) return;
    for (auto it = allocs_.begin(); it != allocs_.end();) {
      if (it->second.end <= now) {
        Apply(it->second, -1);
        it = allocs_.erase(it);
      } else {
        ++it;
      }
    }
    origin_ = now;
  }
  // The whole candidate sequence of a query, up to `limit` entries.
  std::vector<BlockCandidate> Candidates(Level max_level, uint32_t gpus, Duration dur, Time at, Level min_level,
                                         size_t limit) const {
    std::vector<std::tuple<Time, uint32_t, uint32_t>> all;
    for (uint32_t d : planned_) {
      if (level_.at(d) < min_level || level_.at(d) > max_level || total_.at(d) < gpus) continue;
      std::optional<Time> first;
      for (Time t = std::max(at, origin_); t <= kHorizon; ++t) {
        if (MinFree(d, t, t + dur) >= gpus) {
          first = t;
          break;
        }
      }
      if (!first) continue;
      all.emplace_back(*first, total_.at(d), d);
      std::set<Time> points;
      for (const auto& [id, a] : allocs_) {
        if (!a.counts.contains(d)) continue;
        points.insert(std::max(a.start, origin_));
        points.insert(a.end);
      }
      for (Time t : points) {
        if (t > *first && t <= kForever - dur && MinFree(d, t, t + dur) >= gpus) all.emplace_back(t, total_.at(d), d);
      }
    }
    std::sort(all.begin(), all.end());
    std::vector<BlockCandidate> out;
    for (const auto& [t, total, d] : all) {
      if (out.size() == limit) break;
      out.emplace_back(t, DomainId(d));
    }
    return out;
  }
  std::vector<uint64_t> Ids() const {
    std::vector<uint64_t> out;
    for (const auto& [id, a] : allocs_) out.push_back(id);
    return out;
  }
  const std::vector<uint32_t>& planned() const { return planned_; }
  int64_t AvailAt(uint32_t d, Time t) const { return MinFree(d, std::max(t, origin_), std::max(t, origin_) + 1); }

 private:
  struct Alloc {
    Time start, end;
    std::map<uint32_t, int64_t> counts;
  };
  void Apply(const Alloc& a, int sign) {
    for (const auto& [d, n] : a.counts) {
      for (Time x = a.start; x < std::min(a.end, kHorizon); ++x) used_[d][x] += sign * n;
      if (a.end > kHorizon) tail_[d] += sign * n;
    }
  }
  Time origin_ = 0;
  std::vector<uint32_t> planned_;
  std::map<uint32_t, int64_t> total_, tail_;
  std::map<uint32_t, Level> level_;
  std::map<uint32_t, std::vector<int64_t>> used_;
  std::map<uint32_t, std::vector<uint32_t>> above_;
  std::map<uint64_t, Alloc> allocs_;
};

void RunRandom(const Topology& topo, uint32_t seed, int ops, int* checks) {
  std::mt19937 rng(seed);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  DomainPlanner dp(topo, 0);
  Brute brute(topo, Level::kNode);
  const auto gpu_count = static_cast<int64_t>(topo.gpu_count());
  Time origin = 0;
  for (int op = 0; op < ops; ++op) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " op " + std::to_string(op));
    const int kind = static_cast<int>(uni(0, 99));
    if (kind < 35) {  // allocate a run of GPUs (whole nodes, leaves) or scattered ones
      std::vector<GpuId> gpus;
      const int64_t n = uni(1, std::min<int64_t>(gpu_count, uni(0, 1) ? 8 : 40));
      if (uni(0, 2) > 0) {
        const int64_t first = uni(0, gpu_count - n);
        for (int64_t g = first; g < first + n; ++g) gpus.push_back(GpuId(static_cast<uint32_t>(g)));
      } else {
        std::set<uint32_t> pick;
        while (static_cast<int64_t>(pick.size()) < n) pick.insert(static_cast<uint32_t>(uni(0, gpu_count - 1)));
        for (uint32_t g : pick) gpus.push_back(GpuId(g));
      }
      const Time start = uni(origin - 1, origin + 60);
      const Time end = uni(0, 30) == 0 ? kForever : start + uni(0, 50);
      auto r = dp.AddAllocation(gpus, start, end);
      ASSERT_EQ(r.has_value(), brute.CanAdd(gpus, start, end)) << start << " " << end << " n=" << n;
      if (r) brute.Add(r->value, gpus, start, end);
    } else if (kind < 55) {
      auto ids = brute.Ids();
      if (ids.empty()) continue;
      const uint64_t id = ids[uni(0, static_cast<int64_t>(ids.size()) - 1)];
      ASSERT_TRUE(dp.Remove(AllocationId{id}));
      brute.Remove(id);
    } else if (kind < 58) {
      const Time now = origin + uni(0, 5);
      if (now < 120) {
        dp.AdvanceTo(now);
        brute.AdvanceTo(now);
        origin = std::max(origin, now);
      }
    } else {
      const Level levels[] = {Level::kNode, Level::kLeaf, Level::kSpine, Level::kCore};
      const Level lo = levels[uni(0, 2)];
      const Level hi = levels[uni(0, 3)];
      const auto gpus = static_cast<uint32_t>(uni(1, gpu_count));
      const Duration dur = uni(1, 60);
      const Time at = uni(origin - 3, origin + 80);
      const auto want = brute.Candidates(hi, gpus, dur, at, lo, 12);
      const auto first = dp.EarliestBlock(hi, gpus, dur, at, lo);
      ASSERT_EQ(first.has_value(), !want.empty());
      std::vector<BlockCandidate> got;
      for (auto c = first; c && got.size() < 12; c = dp.NextBlock(hi, gpus, dur, at, *c, lo)) got.push_back(*c);
      ASSERT_EQ(got, want) << "gpus " << gpus << " dur " << dur << " at " << at;
      const uint32_t d = brute.planned()[uni(0, static_cast<int64_t>(brute.planned().size()) - 1)];
      const Time t = uni(origin - 2, origin + 100);
      ASSERT_EQ(dp.planner(DomainId(d))->AvailAt(t), brute.AvailAt(d, t));
      *checks += 1;
    }
    ASSERT_EQ(dp.allocation_count(), brute.Ids().size());
  }
}

TEST(DomainPlannerRandom, LeafSpineMatchesBruteForce) {
  auto spec = GenerateLeafSpine({.nodes = 8, .nodes_per_leaf = 4, .oversubscription = 2.0, .model = "hgx-a100"});
  ASSERT_TRUE(spec) << spec.error().ToString();
  const Topology topo = Build(*spec);
  int checks = 0;
  for (uint32_t seed = 1; seed <= 4; ++seed) RunRandom(topo, seed, 1500, &checks);
  EXPECT_GT(checks, 2000);
}

TEST(DomainPlannerRandom, SuperPodMatchesBruteForce) {
  auto spec = GenerateSuperPod({.scalable_units = 3, .nodes_per_su = 2, .model = "dgx-h100"});
  ASSERT_TRUE(spec) << spec.error().ToString();
  const Topology topo = Build(*spec);
  int checks = 0;
  for (uint32_t seed = 11; seed <= 13; ++seed) RunRandom(topo, seed, 1500, &checks);
  EXPECT_GT(checks, 1500);
}

}  // namespace
}  // namespace phalanx
