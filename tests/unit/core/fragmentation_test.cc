// FragmentationProbe (FGD-style fragmentation): hand-computed values on the demo cluster.
#include "core/topology/fragmentation.h"

#include <gtest/gtest.h>

#include "core/topology/node_models.h"

namespace phalanx {
namespace {

TEST(FragmentationProbe, CountsIdleGpusTheJobMixCannotUse) {
  auto topo = Topology::Build(DemoCluster());
  ASSERT_TRUE(topo);
  // One GPU taken on every node: 7 free per node.
  for (uint32_t n = 0; n < 4; ++n) ASSERT_TRUE(topo->Allocate(n + 1, std::vector<GpuId>{GpuId(n * 8)}, 0));
  EXPECT_DOUBLE_EQ(FragmentationProbe(*topo, {{8, 1.0}}).FragmentedGpus(*topo), 28);
  EXPECT_DOUBLE_EQ(FragmentationProbe(*topo, {{1, 0.5}, {8, 0.5}}).FragmentedGpus(*topo), 14);
  EXPECT_DOUBLE_EQ(FragmentationProbe(*topo, {{4, 1.0}}).FragmentedGpus(*topo), 0);
  // 16 GPUs: the home domain is the leaf (2 nodes, 14 free): all fragments.
  EXPECT_DOUBLE_EQ(FragmentationProbe(*topo, {{16, 1.0}}).FragmentedGpus(*topo), 28);
  // 28 GPUs: the spine has 28 free: usable.
  EXPECT_DOUBLE_EQ(FragmentationProbe(*topo, {{28, 1.0}}).FragmentedGpus(*topo), 0);
  // Shapes that can never run are not a fragmentation matter.
  EXPECT_DOUBLE_EQ(FragmentationProbe(*topo, {{0, 0.5}, {64, 0.5}}).FragmentedGpus(*topo), 0);
}

TEST(ShapeMix, WeightsByPopularity) {
  const auto mix = ShapeMix({8, 1, 8, 8});
  ASSERT_EQ(mix.size(), 2u);
  EXPECT_EQ(mix[0], (std::pair<uint32_t, double>{1, 0.25}));
  EXPECT_EQ(mix[1], (std::pair<uint32_t, double>{8, 0.75}));
  EXPECT_TRUE(ShapeMix({}).empty());
}

}  // namespace
}  // namespace phalanx
