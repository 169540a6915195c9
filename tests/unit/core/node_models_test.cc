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

// The generators refuse fabrics over core/topology/limits.h before building anything: these
// three each grew past 8 GB before the limits.
TEST(NodeModels, GeneratorsRefuseFabricsOverTheLimits) {
  struct Case {
    const char* what;
    const char* error;
  };
  for (const Case& c : {
           Case{"superpod:999999999", "superpod: 31999999968 nodes: more than the limit of 65536"},
           Case{"leafspine:100000000:16:2", "leafspine: 100000000 nodes: more than the limit of 65536"},
           Case{"superpod:2147483647:2147483647", "superpod: 4611686014132420609 nodes: more than the limit of 65536"},
           Case{"nvl72:2147483647", "nvl72: 38654705646 nodes: more than the limit of 65536"},
           Case{"nvl72:3641", "nvl72: 65538 nodes: more than the limit of 65536"},
       }) {
    auto spec = GenerateByName(c.what);
    ASSERT_FALSE(spec) << c.what;
    EXPECT_EQ(spec.error().ToString(), c.error) << c.what;
  }
  // GPUs: 65,536 nodes are allowed, but not at 8 GPUs each plus one more node.
  auto gpus = GenerateLeafSpine({.nodes = 65536, .nodes_per_leaf = 16, .model = "dgx-h100"});
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  EXPECT_EQ(gpus->nodes.size(), 65536u);
  auto over = GenerateSuperPod({.scalable_units = 2049, .nodes_per_su = 32});
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().ToString(), "superpod: 65568 nodes: more than the limit of 65536");
  // At the limits exactly: builds.
  auto at = GenerateNvl72({.racks = 3640, .racks_per_leaf = 4});
  ASSERT_TRUE(at);
  EXPECT_EQ(at->nodes.size(), 65520u);
}

// A huge nodes_per_leaf (one leaf) must not overflow the leaf count.
TEST(NodeModels, LeafSpineWithHugeLeavesHasOneLeaf) {
  auto spec = GenerateByName("leafspine:64:2147483647");
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->nodes.size(), 64u);
  EXPECT_EQ(spec->switches.size(), 2u);  // the spine and one leaf
  auto racks = GenerateByName("nvl72:4:2147483647");
  ASSERT_TRUE(racks) << racks.error().ToString();
  EXPECT_TRUE(Topology::Build(*racks));
}

}  // namespace
}  // namespace phalanx
