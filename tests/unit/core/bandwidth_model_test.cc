#include "core/placement/bandwidth_model.h"

#include <gtest/gtest.h>

#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::NodeGpus;
using testing::TwoTier;

std::vector<GpuId> Concat(std::vector<GpuId> a, const std::vector<GpuId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(BandwidthModel, InsideOneNvswitchNodeTheNvlinkBounds) {
  Topology t = Build(TwoTier(1, 2));
  BandwidthModel m(t);
  const auto p = m.Predict(NodeGpus(t, "leaf0-n0"));
  EXPECT_DOUBLE_EQ(p.busbw_gbs, 450 * 0.80);
  // The lowest domain holding all 8 is the node's NVSwitch group.
  EXPECT_EQ(t.domain(p.lca).name, "leaf0-n0/nvswitch0");
  EXPECT_EQ(t.domain(t.domain(p.lca).parent).name, "leaf0-n0");
}

TEST(BandwidthModel, FewGpusPerNodeUseFewRailNics) {
  Topology t = Build(TwoTier(1, 2, "hgx-a100"));
  BandwidthModel m(t);
  // 2 GPUs on each of 2 nodes: the ring leaves each node through 2 NICs of 25 GB/s.
  const auto p = m.Predict(std::vector<GpuId>{GpuId(0), GpuId(1), GpuId(8), GpuId(9)});
  EXPECT_DOUBLE_EQ(p.busbw_gbs, 2 * 25 * 0.92);
  EXPECT_EQ(t.domain(p.bottleneck).level, Level::kNode);
  // The node with the fewest GPUs sets the pace: 7 + 1.
  const auto q =
      m.Predict(std::vector<GpuId>{GpuId(0), GpuId(1), GpuId(2), GpuId(3), GpuId(4), GpuId(5), GpuId(6), GpuId(8)});
  EXPECT_DOUBLE_EQ(q.busbw_gbs, 1 * 25 * 0.92);
}

// Calibration against ../shared/seeds: a fully loaded 2:1 leaf-spine gives 588 of 1600 Gb/s
// (0.3675) of what full bisection gives.
TEST(BandwidthModel, LoadedTwoToOneFabricMatchesTheSeedRatio) {
  auto run = [](double oversub) {
    Topology t = Build(TwoTier(2, 4, "hgx-a100", oversub));
    BandwidthModel m(t);
    // Every node but leaf0-n3 / leaf1-n3 runs a job paired across the spine.
    JobId job = 1;
    for (int i = 0; i < 3; ++i) {
      auto gpus = Concat(NodeGpus(t, "leaf0-n" + std::to_string(i)), NodeGpus(t, "leaf1-n" + std::to_string(i)));
      const double bw = m.Predict(gpus).busbw_gbs;
      EXPECT_TRUE(t.Allocate(job++, gpus, bw));
    }
    return m.Predict(Concat(NodeGpus(t, "leaf0-n3"), NodeGpus(t, "leaf1-n3"))).busbw_gbs;
  };
  const double full = run(1.0), half = run(2.0);
  EXPECT_DOUBLE_EQ(full, 8 * 25 * 0.92);
  EXPECT_NEAR(half / full, 0.5 * 0.735, 1e-12);
}

// Published nccl-tests figures for hardware the constants were not fitted on. The NVLink and
// InfiniBand efficiencies (0.80, 0.92; docs/bandwidth-model.md) come from H100 NVLink 4 and NDR
// NICs; here they are applied to A100 NVLink 3 and HDR NICs (an HGX/DGX A100 node: 8 GPUs on
// NVSwitch, 8 x 200 Gb/s rail NICs), and the prediction is compared with what NVIDIA's NCCL
// engineers quote for those machines:
//  * 8 A100s of one node: "~230 GB/s" all_reduce busbw (sjeaugey, NCCL maintainer, in
//    https://github.com/NVIDIA/nccl-tests/issues/149, 2023-07-05: 240 GB/s effective NVLink,
//    "other bottlenecks on the GPUs limits it to ~230GB/s"). The model: 300 x 0.80 = 240 (+4.3%).
//  * DGX A100s across the network: "On an Nvidia DGX-A100 system we have 8x200Gbit/s IB cards
//    and we measure 192GB/s AllReduce BusBW" (AddyLaddy, NCCL team, in
//    https://github.com/NVIDIA/nccl/issues/812, 2023-03-31; node count not stated, below the
//    200 GB/s line rate). The model: 8 x 25 x 0.92 = 184 (-4.2%).
// Tolerance 5%: the figures are quoted to two or three digits, and the model keeps one efficiency
// per link type rather than per hardware generation; 5% is well below the steps between the
// placements it ranks (one NIC more or less, NVLink against the network, a shared 2:1 uplink),
// so a constant that does not carry across generations by more than that would be a real miss.
TEST(BandwidthModel, MatchesPublishedA100FiguresItWasNotFittedOn) {
  constexpr double kTolerance = 0.05;
  Topology t = Build(TwoTier(1, 2, "hgx-a100"));
  BandwidthModel m(t);
  const double one_node = m.Predict(NodeGpus(t, "leaf0-n0")).busbw_gbs;
  EXPECT_NEAR(one_node, 230, 230 * kTolerance);
  const auto two_nodes = m.Predict(Concat(NodeGpus(t, "leaf0-n0"), NodeGpus(t, "leaf0-n1")));
  EXPECT_NEAR(two_nodes.busbw_gbs, 192, 192 * kTolerance);
  // The network, not NVLink, bounds the two-node ring: the bottleneck is a node's uplink.
  EXPECT_EQ(t.domain(two_nodes.bottleneck).level, Level::kNode);
}

TEST(BandwidthModel, MisalignedRailsCrossTheSpineWhenItIsContended) {
  Topology t = Build(TwoTier(2, 2, "dgx-h100", 2.0, /*rails=*/true));
  BandwidthModel m(t);
  // 4 GPUs per node: the nodes' 4 NICs (184 GB/s) are not the bottleneck.
  const std::vector<GpuId> aligned{GpuId(0), GpuId(1), GpuId(2), GpuId(3), GpuId(8), GpuId(9), GpuId(10), GpuId(11)};
  const std::vector<GpuId> misaligned{GpuId(0),  GpuId(1),  GpuId(2),  GpuId(3),
                                      GpuId(12), GpuId(13), GpuId(14), GpuId(15)};
  EXPECT_TRUE(m.Predict(aligned).rail_aligned);
  EXPECT_FALSE(m.Predict(misaligned).rail_aligned);
  // Unloaded, the spine has room: same bandwidth.
  EXPECT_DOUBLE_EQ(m.Predict(aligned).busbw_gbs, m.Predict(misaligned).busbw_gbs);
  // Saturate leaf0's uplink with another job crossing it.
  auto big = Concat(NodeGpus(t, "leaf1-n1"), std::vector<GpuId>{GpuId(7)});
  ASSERT_TRUE(t.Allocate(9, big, 1e6));
  EXPECT_DOUBLE_EQ(m.Predict(aligned).busbw_gbs, 4 * 50 * 0.92);
  // Misaligned traffic shares leaf0's contended 2:1 uplink: fair half of 400 x 0.92, x 0.735.
  EXPECT_NEAR(m.Predict(misaligned).busbw_gbs, 400 * 0.92 / 2 * 0.735, 1e-9);
  EXPECT_EQ(m.Predict(misaligned).bottleneck, t.find("leaf0"));
}

TEST(BandwidthModel, PcieBoxAcrossSocketsIsBoundBySmp) {
  TopologySpec spec;
  spec.models.push_back(*BuiltinNodeModel("l40s-pcie"));
  spec.nodes.push_back(NodeSpec{"box", "", 0, "t"});
  Topology t = Build(spec);
  BandwidthModel m(t);
  EXPECT_DOUBLE_EQ(m.Predict(std::vector<GpuId>{GpuId(0), GpuId(1)}).busbw_gbs, 32 * 0.75);
  EXPECT_DOUBLE_EQ(m.Predict(std::vector<GpuId>{GpuId(0), GpuId(4)}).busbw_gbs, 40 * 0.60);
}

TEST(BandwidthModel, DisconnectedTreesGiveZero) {
  TopologySpec spec = TwoTier(1, 1);
  spec.switches.push_back(SwitchSpec{"island", Level::kLeaf, "", {}, 1.0, false, "t"});
  spec.nodes.push_back(NodeSpec{"island-n0", "island", 0, "t"});
  Topology t = Build(spec);
  BandwidthModel m(t);
  EXPECT_EQ(m.Predict(std::vector<GpuId>{GpuId(0), GpuId(8)}).busbw_gbs, 0);
}

}  // namespace
}  // namespace phalanx
