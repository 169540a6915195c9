#include "core/topology/node_models.h"

#include <gtest/gtest.h>

#include "core/topology/topology.h"

namespace phalanx {
namespace {

TEST(NodeModels, EveryBuiltinBuildsAsASingleNode) {
  for (std::string_view name : BuiltinNodeModelNames()) {
    auto m = BuiltinNodeModel(name);
    ASSERT_TRUE(m) << name;
    TopologySpec spec;
    spec.models.push_back(*m);
    spec.nodes.push_back(NodeSpec{"n", "", 0, "t"});
    auto t = Topology::Build(spec);
    ASSERT_TRUE(t) << name << ": " << t.error().ToString();
    EXPECT_EQ(t->gpu_count(), static_cast<size_t>(m->gpus)) << name;
  }
  auto bad = BuiltinNodeModel("dgx-z9");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("known: dgx-h100"), std::string::npos);
}

TEST(NodeModels, SuperPodOf128UnitsHas32kGpus) {
  auto spec = GenerateSuperPod({.scalable_units = 128, .nodes_per_su = 32});
  ASSERT_TRUE(spec);
  auto t = Topology::Build(*spec);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->gpu_count(), 32768u);
  EXPECT_EQ(t->node_count(), 4096u);
  EXPECT_EQ(t->count_at_level(Level::kLeaf), 128);
  EXPECT_TRUE(t->domain(t->find("su000")).rail_optimized);
}

TEST(NodeModels, Nvl72RacksAreNvlinkDomainsOf72Gpus) {
  auto t = Topology::Build(*GenerateNvl72({.racks = 8, .racks_per_leaf = 4}));
  ASSERT_TRUE(t);
  const DomainId rack = t->find("rack003");
  ASSERT_TRUE(rack.valid());
  EXPECT_EQ(t->domain(rack).level, Level::kNvlDomain);
  EXPECT_EQ(t->domain(rack).gpu_count, 72u);
  // Rack uplink = 72 NICs of 50 GB/s, lane-limited; node uplink is NVLink 4 x 900.
  EXPECT_EQ(t->domain(rack).uplink.lanes, 72u);
  EXPECT_DOUBLE_EQ(t->domain(t->find("rack003-n00")).uplink.gbs, 3600);
  EXPECT_EQ(t->domain(t->find("rack003-n00")).uplink.type, LinkType::kNvlink);
}

TEST(NodeModels, MixedAndByName) {
  EXPECT_TRUE(Topology::Build(*GenerateMixed()));
  EXPECT_TRUE(GenerateByName("superpod:2:4"));
  EXPECT_TRUE(GenerateByName("leafspine:32:8:2"));
  EXPECT_TRUE(GenerateByName("nvl72:2"));
  EXPECT_TRUE(GenerateByName("demo"));
  auto bad = GenerateByName("superpod:x");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'x' is not a number"), std::string::npos);
  EXPECT_FALSE(GenerateByName("torus:4"));
}

}  // namespace
}  // namespace phalanx
