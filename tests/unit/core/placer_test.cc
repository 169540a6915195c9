#include "core/placement/placer.h"

#include <gtest/gtest.h>

#include <set>

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

}  // namespace
}  // namespace phalanx
