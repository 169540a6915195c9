#include "core/placement/placer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "core/placement/placement_counts.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::NodeGpus;
using testing::TwoTier;

std::set<std::string> NodesOf(const Topology& t, const std::vector<GpuId>& gpus) {
  std::set<std::string> out;
  for (GpuId g : gpus) out.insert(t.domain(t.node_domain(t.node_of(g))).name);
  return out;
}

TEST(Placer, EightGpusTakeOneWholeNodeOverNvlink) {
  Topology t = Build(TwoTier(2, 2));
  Placer p(t);
  auto out = p.Place({.gpus = 8});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced) << out.reason;
  EXPECT_EQ(NodesOf(t, out.placement.gpus).size(), 1u);
  EXPECT_DOUBLE_EQ(out.placement.prediction.busbw_gbs, 450 * 0.80);
}

TEST(Placer, BestFitKeepsTheEmptyNodeWhole) {
  Topology t = Build(TwoTier(1, 2));
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(1), GpuId(2), GpuId(3)}, 0));
  Placer p(t);
  auto out = p.Place({.gpus = 4});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced);
  EXPECT_EQ(NodesOf(t, out.placement.gpus), std::set<std::string>{"leaf0-n0"});
}

TEST(Placer, SixteenGpusPreferTwoWholeNodesInOneLeaf) {
  Topology t = Build(TwoTier(2, 4, "dgx-h100", 2.0));
  // Make leaf1 emptier than leaf0 so a naive "most free" rule would pick it.
  ASSERT_TRUE(t.Allocate(1, NodeGpus(t, "leaf0-n0"), 0));
  Placer p(t);
  auto out = p.Place({.gpus = 16});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced);
  const auto nodes = NodesOf(t, out.placement.gpus);
  EXPECT_EQ(nodes.size(), 2u);
  // Both in leaf0 (best fit: the fuller leaf). 8 NICs each give 8 x 50 x 0.92 = 368 GB/s, so
  // the GPUs' own NVLink (450 x 0.80 = 360) is the bottleneck, not the network.
  for (const auto& n : nodes) EXPECT_EQ(n.substr(0, 5), "leaf0");
  EXPECT_NEAR(out.placement.prediction.busbw_gbs, 450 * 0.80, 1e-9);
  EXPECT_EQ(t.domain(out.placement.prediction.bottleneck).level, Level::kGpu);
}

TEST(Placer, WholeNodesBeatHalfNodesEvenAcrossTheSpine) {
  Topology t = Build(TwoTier(2, 2));
  // leaf0 has 4+4 free, leaf1 has one whole node free and one busy.
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(1), GpuId(2), GpuId(3)}, 0));
  ASSERT_TRUE(t.Allocate(2, std::vector<GpuId>{GpuId(8), GpuId(9), GpuId(10), GpuId(11)}, 0));
  ASSERT_TRUE(t.Allocate(3, NodeGpus(t, "leaf1-n1"), 0));
  Placer p(t);
  auto out = p.Place({.gpus = 8});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced);
  EXPECT_EQ(NodesOf(t, out.placement.gpus), std::set<std::string>{"leaf1-n0"});
}

TEST(Placer, RailAlignedAcrossNodes) {
  Topology t = Build(TwoTier(1, 2, "dgx-h100", 1.0, /*rails=*/true));
  // node0: 0-3 busy; node1: 0,1 busy -> 4 GPUs per node aligned on locals 4..7.
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(1), GpuId(2), GpuId(3)}, 0));
  ASSERT_TRUE(t.Allocate(2, std::vector<GpuId>{GpuId(8), GpuId(9)}, 0));
  Placer p(t);
  auto out = p.Place({.gpus = 8, .rail_aligned = true});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced) << out.reason;
  EXPECT_TRUE(out.placement.prediction.rail_aligned);
  for (GpuId g : out.placement.gpus) EXPECT_GE(t.local_index(g), 4u);
}

TEST(Placer, BusyVersusUnsatisfiable) {
  Topology t = Build(TwoTier(1, 2));
  Placer p(t);
  auto never = p.Place({.gpus = 17});
  EXPECT_EQ(never.status, PlaceStatus::kUnsatisfiable);
  EXPECT_NE(never.reason.find("cluster has 16"), std::string::npos);
  ASSERT_TRUE(t.Allocate(1, NodeGpus(t, "leaf0-n0"), 0));
  auto later = p.Place({.gpus = 12});
  EXPECT_EQ(later.status, PlaceStatus::kBusy);
  EXPECT_NE(later.reason.find("8 free"), std::string::npos);
  auto too_wide = p.Place({.gpus = 12, .level = Level::kNode, .fit = FitMode::kRequire});
  EXPECT_EQ(too_wide.status, PlaceStatus::kUnsatisfiable);
}

// On testing::MixedNodes(): jobs 1-4 on the four small nodes, and jobs 5 and 6 (12 GPUs each: 6
// on big-n0 and big-n1, 6 on big-n2 and big-n3) with their rings on the big nodes' NICs. 8 GPUs
// are then free only as 2 on each big node.
void OccupyMixed(Topology& t) {
  JobId id = 1;
  for (int n = 0; n < 4; ++n) ASSERT_TRUE(t.Allocate(id++, NodeGpus(t, "small-n" + std::to_string(n)), 0));
  for (int pair = 0; pair < 2; ++pair) {
    std::vector<GpuId> gpus;
    for (int n = 2 * pair; n < 2 * pair + 2; ++n) {
      std::vector<GpuId> six = NodeGpus(t, "big-n" + std::to_string(n));
      gpus.insert(gpus.end(), six.begin(), six.begin() + 6);
    }
    ASSERT_TRUE(t.Allocate(id++, gpus, 10));
  }
}

// A request for a good block of 8 GPUs (within one `level`, at 0.95 x the best in the empty
// cluster), made, and then the cluster loaded by OccupyMixed: no such block is free.
PlacementRequest GoodBlockUnderPressure(Topology& t, const Placer& p, Level level) {
  const double floor = p.Place({.gpus = 8}).placement.prediction.busbw_gbs * 0.95;
  OccupyMixed(t);
  return {.gpus = 8, .level = level, .fit = FitMode::kRequire, .min_busbw_gbs = floor};
}

// min_busbw_gbs: a block below the floor is no fit (busy), one above it is placed as before.
TEST(Placer, MinBusbwRefusesSlowerBlocks) {
  Topology t = Build(testing::MixedNodes());
  Placer p(t);
  const PlaceOutcome best = p.Place({.gpus = 8});
  ASSERT_EQ(best.status, PlaceStatus::kPlaced);
  // The best 8 GPUs are four small nodes (the NIC, not the sockets' link, is the bottleneck).
  EXPECT_EQ(NodesOf(t, best.placement.gpus), (std::set<std::string>{"small-n0", "small-n1", "small-n2", "small-n3"}));
  const double floor = best.placement.prediction.busbw_gbs * 0.95;
  EXPECT_EQ(p.Place({.gpus = 8, .min_busbw_gbs = floor}).placement.gpus, best.placement.gpus);
  // The small nodes busy, 6 GPUs of each big node busy: 8 GPUs fit only as 2 on each big node,
  // sharing the NICs with the busy GPUs' rings.
  ASSERT_NO_FATAL_FAILURE(OccupyMixed(t));
  const PlaceOutcome split = p.Place({.gpus = 8});
  ASSERT_EQ(split.status, PlaceStatus::kPlaced);
  EXPECT_EQ(NodesOf(t, split.placement.gpus).size(), 4u);
  EXPECT_LT(split.placement.prediction.busbw_gbs, floor);
  const PlaceOutcome refused = p.Place({.gpus = 8, .min_busbw_gbs = floor});
  EXPECT_EQ(refused.status, PlaceStatus::kBusy);
  EXPECT_NE(refused.reason.find("GB/s"), std::string::npos) << refused.reason;
  // Two big nodes free again: one of them is a fit (within the tolerance of the best), and the
  // block placed.
  ASSERT_TRUE(t.Release(5));  // big-n0 and big-n1's twelve
  const PlaceOutcome node = p.Place({.gpus = 8, .min_busbw_gbs = floor});
  ASSERT_EQ(node.status, PlaceStatus::kPlaced) << node.reason;
  const std::set<std::string> on = NodesOf(t, node.placement.gpus);
  ASSERT_EQ(on.size(), 1u);
  EXPECT_TRUE(on.contains("big-n0") || on.contains("big-n1")) << *on.begin();
  EXPECT_GE(node.placement.prediction.busbw_gbs, floor);
}

// PlaceWithin: the regions that may hold a fit, the others holding none, give Place's answer;
// a region that holds none gives none.
TEST(Placer, PlaceWithinGivesPlacesAnswerWhereTheOthersHoldNone) {
  Topology t = Build(testing::MixedNodes());
  Placer p(t);
  PlacementRequest r;
  ASSERT_NO_FATAL_FAILURE(r = GoodBlockUnderPressure(t, p, Level::kLeaf));
  ASSERT_EQ(p.Place(r).status, PlaceStatus::kBusy);
  ASSERT_TRUE(t.Release(6));  // big-n2 and big-n3's twelve: the big leaf gained GPUs, the small one did not
  const std::vector<DomainId> big{t.find("big")}, small{t.find("small")};
  const PlaceOutcome all = p.Place(r), within = p.PlaceWithin(r, big);
  ASSERT_EQ(all.status, PlaceStatus::kPlaced) << all.reason;
  ASSERT_EQ(within.status, PlaceStatus::kPlaced) << within.reason;
  EXPECT_EQ(within.placement.gpus, all.placement.gpus);
  EXPECT_EQ(NodesOf(t, within.placement.gpus).size(), 1u);
  EXPECT_EQ(p.PlaceWithin(r, small).status, PlaceStatus::kBusy);
  EXPECT_EQ(p.PlaceWithin(r, {}).status, PlaceStatus::kBusy);
}

// A search with a floor remembers the regions that held no fit by their state (free GPUs and
// loads), so an answer given again is the same as searching again: here the free GPUs come back
// as they were, but the other jobs' rings, which made the block slow, do not.
TEST(Placer, RemembersRegionsWithNoFitByTheirStateNotTheirFreeGpus) {
  Topology t = Build(testing::MixedNodes());
  Placer p(t);
  PlacementRequest r;
  ASSERT_NO_FATAL_FAILURE(r = GoodBlockUnderPressure(t, p, Level::kSpine));
  ASSERT_EQ(p.Place(r).status, PlaceStatus::kBusy);
  ASSERT_EQ(p.Place(r).status, PlaceStatus::kBusy);  // remembered: the same answer
  // The same GPUs busy again, by jobs whose rings carry nothing: the four 2-GPU pieces of the big
  // nodes now have their NICs to themselves, and that is a fit.
  const std::vector<GpuId> five(t.job_gpus(5).begin(), t.job_gpus(5).end());
  const std::vector<GpuId> six(t.job_gpus(6).begin(), t.job_gpus(6).end());
  ASSERT_TRUE(t.Release(5));
  ASSERT_TRUE(t.Release(6));
  ASSERT_TRUE(t.Allocate(5, five, 0));
  ASSERT_TRUE(t.Allocate(6, six, 0));
  const PlaceOutcome quiet = p.Place(r);
  ASSERT_EQ(quiet.status, PlaceStatus::kPlaced) << quiet.reason;
  EXPECT_EQ(quiet.placement.gpus, Placer(t).Place(r).placement.gpus);  // a fresh Placer's answer
  EXPECT_GE(quiet.placement.prediction.busbw_gbs, r.min_busbw_gbs);
  // The busy rings back: no fit again, whether remembered or searched.
  ASSERT_TRUE(t.Release(5));
  ASSERT_TRUE(t.Allocate(5, five, 10));
  ASSERT_TRUE(t.Release(6));
  ASSERT_TRUE(t.Allocate(6, six, 10));
  EXPECT_EQ(p.Place(r).status, PlaceStatus::kBusy);
  EXPECT_EQ(Placer(t).Place(r).status, PlaceStatus::kBusy);
}

// The same as a differential check: along a random walk of allocations and releases (rings of
// several sizes, holds, node drains) that returns to earlier states, a Placer that remembers
// answers every floor request as a fresh Placer does.
TEST(Placer, RememberedAnswersEqualFreshSearchesAlongRandomStates) {
  Topology t = Build(testing::MixedNodes(6, 8));
  Placer remembering(t);
  std::mt19937_64 rng(7);
  std::vector<JobId> running;
  JobId next = 1;
  const double best8 = Placer(t).Place({.gpus = 8}).placement.prediction.busbw_gbs;
  const double best4 = Placer(t).Place({.gpus = 4}).placement.prediction.busbw_gbs;
  int placed = 0, busy = 0;
  for (int step = 0; step < 1500; ++step) {
    const uint32_t action = static_cast<uint32_t>(rng() % 10);
    if (action < 5 || running.empty()) {  // a job of 1-8 free GPUs, anywhere, some ring
      std::vector<GpuId> free;
      for (uint32_t g = 0; g < t.gpu_count(); ++g) {
        if (t.is_free(GpuId(g))) free.push_back(GpuId(g));
      }
      if (!free.empty()) {
        std::shuffle(free.begin(), free.end(), rng);
        free.resize(std::min<size_t>(free.size(), 1 + rng() % 8));
        const double ring = static_cast<double>(rng() % 3) * 5;
        ASSERT_TRUE(t.Allocate(next, free, ring));
        running.push_back(next++);
      }
    } else if (action < 9) {
      const size_t i = rng() % running.size();
      ASSERT_TRUE(t.Release(running[i]));
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    } else {  // a node drained for a while, or back up
      const NodeId n(static_cast<uint32_t>(rng() % t.node_count()));
      ASSERT_TRUE(t.SetNodeState(n, t.node_state(n) == NodeState::kUp ? NodeState::kDrain : NodeState::kUp));
    }
    for (const auto& [gpus, level, floor] :
         {std::tuple{8u, Level::kSpine, best8 * 0.95}, std::tuple{8u, Level::kLeaf, best8 * 0.95},
          std::tuple{4u, Level::kGroup, best4 * 0.95}, std::tuple{4u, Level::kLeaf, best4 * 0.5}}) {
      const PlacementRequest r{.gpus = gpus, .level = level, .fit = FitMode::kRequire, .min_busbw_gbs = floor};
      const PlaceOutcome a = remembering.Place(r), b = Placer(t).Place(r);
      ASSERT_EQ(a.status, b.status) << "step " << step << ", " << gpus << " GPUs: " << a.reason << " / " << b.reason;
      ASSERT_EQ(a.placement.gpus, b.placement.gpus) << "step " << step;
      (a.status == PlaceStatus::kPlaced ? placed : busy)++;
    }
  }
  EXPECT_GT(placed, 500);  // both answers came often
  EXPECT_GT(busy, 500);
  EXPECT_EQ(t.CheckInvariants(), "");
}

TEST(Placer, RequireLevelKeepsJobInsideOneLeaf) {
  Topology t = Build(TwoTier(2, 2));
  ASSERT_TRUE(t.Allocate(1, NodeGpus(t, "leaf0-n0"), 0));
  ASSERT_TRUE(t.Allocate(2, NodeGpus(t, "leaf1-n0"), 0));
  Placer p(t);
  // 16 free GPUs exist, but no leaf has 16 free.
  auto out = p.Place({.gpus = 16, .level = Level::kLeaf, .fit = FitMode::kRequire});
  EXPECT_EQ(out.status, PlaceStatus::kBusy);
  auto any = p.Place({.gpus = 16});
  EXPECT_EQ(any.status, PlaceStatus::kPlaced);
}

TEST(Placer, NodeShapedRequest) {
  Topology t = Build(TwoTier(2, 2));
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(1), GpuId(2), GpuId(3), GpuId(4), GpuId(5)}, 0));
  Placer p(t);
  auto out = p.Place({.nodes = 3, .gpus_per_node = 4});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced) << out.reason;
  EXPECT_EQ(out.placement.gpus.size(), 12u);
  std::map<std::string, int> per;
  for (GpuId g : out.placement.gpus) per[t.domain(t.node_domain(t.node_of(g))).name]++;
  EXPECT_EQ(per.size(), 3u);
  for (const auto& [n, c] : per) EXPECT_EQ(c, 4) << n;
}

TEST(Placer, ExclusiveHoldsWholeNodes) {
  Topology t = Build(TwoTier(1, 3));
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0)}, 0));
  Placer p(t);
  auto out = p.Place({.gpus = 4, .exclusive = true});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced) << out.reason;
  EXPECT_EQ(out.placement.gpus.size(), 4u);
  EXPECT_EQ(out.placement.held.size(), 4u);
  EXPECT_FALSE(NodesOf(t, out.placement.gpus).contains("leaf0-n0"));
}

TEST(Placer, DrainedNodesAreNotUsed) {
  Topology t = Build(TwoTier(1, 2));
  ASSERT_TRUE(t.SetNodeState(t.find_node("leaf0-n0"), NodeState::kDrain));
  Placer p(t);
  auto out = p.Place({.gpus = 8});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced);
  EXPECT_EQ(NodesOf(t, out.placement.gpus), std::set<std::string>{"leaf0-n1"});
  EXPECT_EQ(p.Place({.gpus = 9}).status, PlaceStatus::kBusy);
}

TEST(Placer, PcieBoxKeepsPairsOnOneSwitch) {
  TopologySpec spec;
  spec.name = "box";
  spec.models.push_back(*BuiltinNodeModel("l40s-pcie"));
  spec.nodes.push_back(NodeSpec{"box", "", 0, "t:1"});
  Topology t = Build(spec);
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0)}, 0));
  Placer p(t);
  auto out = p.Place({.gpus = 2});
  ASSERT_EQ(out.status, PlaceStatus::kPlaced);
  // GPUs 2,3 share a PCIe switch; 1 is alone on its switch.
  const DomainId a = t.domain(t.gpu_domain(out.placement.gpus[0])).parent;
  const DomainId b = t.domain(t.gpu_domain(out.placement.gpus[1])).parent;
  EXPECT_EQ(a, b);
}

// CountsMayHold is the filter Reserve's walk uses to skip Placer calls: it must never say no
// where the Placer places (a skipped step would change the reservation), and it must say no
// where only counts decide.
TEST(PlacerCounts, SayNoWhereOnlyCountsDecide) {
  Topology t = Build(TwoTier(2, 2, "l40s-pcie"));
  // Each node keeps 3 of its GPUs free: 12 free, no node with 4, and no leaf with two nodes of 4.
  for (const char* node : {"leaf0-n0", "leaf0-n1", "leaf1-n0", "leaf1-n1"}) {
    const std::vector<GpuId> gpus = NodeGpus(t, node);
    ASSERT_TRUE(t.Allocate(t.find_node(node).value + 1, std::vector<GpuId>(gpus.begin() + 3, gpus.end()), 0));
  }
  Placer p(t);
  std::vector<DomainId> leaves;
  DomainsUpTo(t, Level::kLeaf, leaves);
  EXPECT_EQ(leaves.size(), 2u);
  const PlacementRequest in_node{.gpus = 4, .level = Level::kNode, .fit = FitMode::kRequire};
  const PlacementRequest two_by_four{.nodes = 2, .gpus_per_node = 4, .level = Level::kLeaf, .fit = FitMode::kRequire};
  const PlacementRequest six_in_leaf{.gpus = 6, .level = Level::kLeaf, .fit = FitMode::kRequire};
  const PlacementRequest seven_in_leaf{.gpus = 7, .level = Level::kLeaf, .fit = FitMode::kRequire};
  EXPECT_FALSE(CountsMayHold(t, in_node, {}));
  EXPECT_EQ(p.Place(in_node).status, PlaceStatus::kBusy);
  EXPECT_FALSE(CountsMayHold(t, two_by_four, leaves));
  EXPECT_EQ(p.Place(two_by_four).status, PlaceStatus::kBusy);
  EXPECT_TRUE(CountsMayHold(t, six_in_leaf, leaves));
  EXPECT_EQ(p.Place(six_in_leaf).status, PlaceStatus::kPlaced);
  EXPECT_FALSE(CountsMayHold(t, seven_in_leaf, leaves));
  EXPECT_EQ(p.Place(seven_in_leaf).status, PlaceStatus::kBusy);
  // Held GPUs are not free: holding one more of leaf1's leaves it 5.
  ASSERT_TRUE(t.Hold(std::vector<GpuId>{NodeGpus(t, "leaf1-n1")[0]}));
  ASSERT_TRUE(t.Hold(std::vector<GpuId>{NodeGpus(t, "leaf0-n1")[0]}));
  EXPECT_FALSE(CountsMayHold(t, six_in_leaf, leaves));
  EXPECT_EQ(p.Place(six_in_leaf).status, PlaceStatus::kBusy);
}

TEST(PlacerCounts, NeverSayNoWhereThePlacerPlaces) {
  std::mt19937 rng(7);
  int placed = 0, refused_by_counts = 0;
  for (int round = 0; round < 300; ++round) {
    const char* model = round % 3 == 0 ? "l40s-pcie" : round % 3 == 1 ? "dgx-h100" : "nvlink-bridge-4";
    Topology t = Build(TwoTier(3, 3, model, 1.0, round % 2 == 0));
    // A random cluster: each GPU taken by a job (one per node), held, or free; a node drained.
    const uint32_t busy = static_cast<uint32_t>(rng() % 100);
    std::vector<GpuId> held;
    for (uint32_t node = 0; node < t.node_count(); ++node) {
      const Domain& d = t.domain(t.node_domain(NodeId(node)));
      std::vector<GpuId> taken;
      for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
        const uint32_t r = static_cast<uint32_t>(rng() % 100);
        if (r < busy) {
          taken.push_back(GpuId(g));
        } else if (r < busy + 10) {
          held.push_back(GpuId(g));
        }
      }
      if (!taken.empty()) {
        ASSERT_TRUE(t.Allocate(node + 1, taken, 0));
      }
    }
    ASSERT_TRUE(t.Hold(held));
    if (rng() % 4 == 0) {
      ASSERT_TRUE(t.SetNodeState(NodeId(rng() % t.node_count()), NodeState::kDrain));
    }
    Placer p(t);
    const uint32_t per_node = t.max_gpus_per_node();
    for (int k = 0; k < 40; ++k) {
      PlacementRequest r;
      const Level levels[] = {Level::kGroup, Level::kNode, Level::kLeaf, Level::kSpine};
      r.level = levels[rng() % 4];
      r.fit = rng() % 4 == 0 ? FitMode::kAny : FitMode::kRequire;
      if (rng() % 3 == 0) {
        r.nodes = 1 + static_cast<uint32_t>(rng() % 4);
        r.gpus_per_node = 1 + static_cast<uint32_t>(rng() % per_node);
      } else {
        r.gpus = 1 + static_cast<uint32_t>(rng() % (2 * per_node + 2));
      }
      r.exclusive = rng() % 6 == 0;
      r.rail_aligned = rng() % 6 == 0;
      if (!p.Unsatisfiable(r).empty()) continue;
      std::vector<DomainId> tops;
      DomainsUpTo(t, r.level, tops);
      const bool may = CountsMayHold(t, r, tops);
      const PlaceOutcome out = p.Place(r);
      if (out.status == PlaceStatus::kPlaced) {
        ++placed;
        EXPECT_TRUE(may) << "round " << round << ": gpus " << r.gpus << " nodes " << r.nodes << "x" << r.gpus_per_node
                         << " level " << LevelName(r.level) << " fit " << static_cast<int>(r.fit);
      } else if (!may) {
        ++refused_by_counts;
      }
    }
  }
  // Both sides were exercised.
  EXPECT_GT(placed, 1000);
  EXPECT_GT(refused_by_counts, 500);
}

}  // namespace
}  // namespace phalanx
