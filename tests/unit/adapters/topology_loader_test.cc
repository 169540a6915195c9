#include "adapters/topology/topology_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "adapters/topology/topology_text.h"
#include "core/topology/node_models.h"
#include "core/topology/topology.h"

namespace phalanx {
namespace {

const std::string kFixtures = PHALANX_FIXTURES;
const std::string kExamples = kFixtures + "/../../config/topologies/";

// A temporary file removed at the end of the test.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) : path_(testing::TempDir() + name) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(TopologyLoader, SniffsEveryFormat) {
  struct Case {
    std::string path;
    TopologyFormat format;
    size_t nodes;
  };
  for (const Case& c : {Case{kExamples + "demo.yaml", TopologyFormat::kYaml, 4},
                        Case{kFixtures + "/slurm/dgx_h100_2level.conf", TopologyFormat::kSlurm, 128},
                        Case{kFixtures + "/nvsmi/dgx_h100.txt", TopologyFormat::kNvsmi, 1},
                        Case{kFixtures + "/hwloc/2socket-8gpu-4sw.xml", TopologyFormat::kHwloc, 1},
                        Case{"gen:superpod:2:4", TopologyFormat::kGenerator, 8}}) {
    auto loaded = LoadTopology(c.path, {});
    ASSERT_TRUE(loaded) << loaded.error().ToString();
    EXPECT_EQ(loaded->format, c.format) << c.path;
    EXPECT_EQ(loaded->spec.nodes.size(), c.nodes) << c.path;
    auto topo = Topology::Build(loaded->spec);
    EXPECT_TRUE(topo) << c.path << ": " << topo.error().ToString();
  }
}

TEST(TopologyLoader, SingleNodeFormatsNameNodeAndModel) {
  auto a = LoadTopologyFile(kFixtures + "/hwloc/2socket-8gpu-4sw.xml", {});
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(a->nodes[0].name, "2socket-8gpu-4sw");
  EXPECT_EQ(a->nodes[0].parent, "");
  EXPECT_EQ(a->models[0].gpus, 8);
  LoadOptions o;
  o.node_name = "gpu-box-07";
  o.node_model = "h100-pcie";
  auto b = LoadTopologyFile(kFixtures + "/nvsmi/dgx_h100.txt", o);
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_EQ(b->nodes[0].name, "gpu-box-07");
  EXPECT_EQ(b->models[0].name, "h100-pcie");
}

TEST(TopologyLoader, SlurmOptionsReachTheReader) {
  LoadOptions o;
  o.node_model = "hgx-a100";
  auto spec = LoadTopologyFile(kFixtures + "/slurm/dgx_h100_2level.conf", o);
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->models[0].name, "hgx-a100");
  o.gres_path = kFixtures + "/slurm/no-such-gres.conf";
  auto missing = LoadTopologyFile(kFixtures + "/slurm/dgx_h100_2level.conf", o);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where, o.gres_path);
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);
}

TEST(TopologyLoader, ForcedFormatWins) {
  LoadOptions o;
  o.format = TopologyFormat::kSlurm;
  auto spec = LoadTopologyFile(kExamples + "demo.yaml", o);
  ASSERT_FALSE(spec);  // YAML is not a topology.conf
  EXPECT_EQ(spec.error().where.rfind(kExamples + "demo.yaml", 0), 0u) << spec.error().ToString();
}

TEST(TopologyLoader, Errors) {
  auto missing = LoadTopologyFile("/nonexistent/topo.yaml", {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where, "/nonexistent/topo.yaml");
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);

  TempFile prose("prose.txt", "just some words\nnothing else\n");
  auto unknown = LoadTopologyFile(prose.path(), {});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("cannot tell the topology format"), std::string::npos);

  auto gen = LoadTopologyFile("gen:torus:4", {});
  ASSERT_FALSE(gen);
  EXPECT_EQ(gen.error().where, "gen:torus:4");
  EXPECT_NE(gen.error().message.find("unknown fabric"), std::string::npos);

  TempFile bad_yaml("bad.yaml", "cluster: x\nfabric:\n  name: s\n  level: leef\n  nodes: a1\n");
  auto yaml = LoadTopologyFile(bad_yaml.path(), {});
  ASSERT_FALSE(yaml);
  EXPECT_EQ(yaml.error().where, bad_yaml.path() + ":4");
}

// Issue 12.5: each of these grew past 8 GB; now each fails fast with the limit it hit.
TEST(TopologyLoader, SizeLimitsFailFastWithTheLimit) {
  auto zero = LoadTopologyFile("/dev/zero", {});
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().ToString(), "/dev/zero: larger than 64 MiB limit");
  LoadOptions gres;
  gres.gres_path = "/dev/zero";
  auto gres_zero = LoadTopologyFile(kFixtures + "/slurm/dgx_h100_2level.conf", gres);
  ASSERT_FALSE(gres_zero);
  EXPECT_EQ(gres_zero.error().ToString(), "/dev/zero: larger than 64 MiB limit");
  auto superpod = LoadTopologyFile("gen:superpod:999999999", {});
  ASSERT_FALSE(superpod);
  EXPECT_EQ(superpod.error().ToString(), "gen:superpod:999999999: 31999999968 nodes: more than the limit of 65536");
  auto leafspine = LoadTopologyFile("gen:leafspine:100000000:16:2", {});
  ASSERT_FALSE(leafspine);
  EXPECT_EQ(leafspine.error().ToString(),
            "gen:leafspine:100000000:16:2: 100000000 nodes: more than the limit of 65536");
  // A file one byte over the limit (sparse: no disk used) fails the same way; at the limit it is read.
  const std::string big = testing::TempDir() + "big.conf";
  { std::ofstream(big) << "SwitchName=s Nodes=n1\n"; }
  std::filesystem::resize_file(big, kMaxTopologyFileBytes + 1);
  auto over = LoadTopologyFile(big, {});
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().ToString(), big + ": larger than 64 MiB limit");
  std::filesystem::remove(big);
}

TEST(TopologyLoader, SniffRules) {
  EXPECT_EQ(*SniffTopologyFormat("x", "# comment\n\nswitchname=s1 Nodes=a[1-2]\n"), TopologyFormat::kSlurm);
  EXPECT_EQ(*SniffTopologyFormat("x", "\tGPU0\tGPU1\tCPU Affinity\n"), TopologyFormat::kNvsmi);
  EXPECT_EQ(*SniffTopologyFormat("x", "  <?xml version=\"1.0\"?>\n<topology>"), TopologyFormat::kHwloc);
  EXPECT_EQ(*SniffTopologyFormat("x", "cluster: a\n"), TopologyFormat::kYaml);
  EXPECT_EQ(*SniffTopologyFormat("x.yml", "{}\n"), TopologyFormat::kYaml);
  EXPECT_FALSE(SniffTopologyFormat("x.txt", "GPU0 is broken\n"));
  TopologyFormat f;
  EXPECT_TRUE(ParseTopologyFormat("nvsmi", &f));
  EXPECT_EQ(f, TopologyFormat::kNvsmi);
  EXPECT_FALSE(ParseTopologyFormat("json", &f));
}

// ---- topology_text (human output) -------------------------------------------------------------

TEST(TopologyText, SummaryCountsLevelsModelsAndRails) {
  auto topo = Topology::Build(*GenerateMixed());
  ASSERT_TRUE(topo);
  const std::string s = TopologySummary(*topo);
  EXPECT_NE(s.find("cluster mixed: 56 nodes, 448 GPUs"), std::string::npos) << s;
  EXPECT_NE(s.find("1 core, 2 spine, 5 leaf"), std::string::npos) << s;
  EXPECT_NE(s.find("dgx-h100 x32 (8 GPUs), hgx-a100 x16 (8 GPUs), l40s-pcie x8 (8 GPUs)"), std::string::npos) << s;
  EXPECT_NE(s.find("leaf 1:1 to 2:1"), std::string::npos) << s;
  EXPECT_NE(s.find("rail-optimized:   2 of 5 leaf"), std::string::npos) << s;
}

TEST(TopologyText, LargestFreeBlocksFollowAllocations) {
  auto topo = Topology::Build(DemoCluster());
  ASSERT_TRUE(topo);
  EXPECT_EQ(FreeBlocksLine(*topo), "spine 32, leaf 16, node 8, group 8");
  // Take 6 GPUs of node0 and all of node2.
  std::vector<GpuId> gpus;
  const NodeId n0 = topo->find_node("node0"), n2 = topo->find_node("node2");
  for (uint32_t i = 0; i < 6; ++i) gpus.push_back(topo->node_gpu(n0, i));
  for (uint32_t i = 0; i < 8; ++i) gpus.push_back(topo->node_gpu(n2, i));
  ASSERT_TRUE(topo->Allocate(1, gpus, 100));
  EXPECT_EQ(FreeBlocksLine(*topo), "spine 18, leaf 10, node 8, group 8");
  const auto best = LargestFreeBlocks(*topo);
  EXPECT_EQ(best[static_cast<size_t>(Level::kLeaf)], 10u);
  const std::string tree = TopologyTree(*topo, 2);
  EXPECT_NE(tree.find("node0 [node dgx-h100]: 2/8 GPUs free (free: 6-7)"), std::string::npos) << tree;
  EXPECT_NE(tree.find("node2 [node dgx-h100]: 0/8 GPUs free\n"), std::string::npos) << tree;
  EXPECT_NE(tree.find("leaf1 [leaf, rail-optimized, up 800 GB/s]: 8/16 GPUs free, 1/2 nodes free"), std::string::npos)
      << tree;
}

TEST(TopologyTree, CollapsesLargeClustersAndRespectsDepth) {
  SuperPodOptions o;
  o.scalable_units = 16;
  o.nodes_per_su = 256;  // 4,096 nodes
  auto topo = Topology::Build(*GenerateSuperPod(o));
  ASSERT_TRUE(topo);
  const std::string tree = TopologyTree(*topo, 3);
  EXPECT_LT(std::count(tree.begin(), tree.end(), '\n'), 10) << tree;
  EXPECT_NE(tree.find("su000..su015 (16 x leaf"), std::string::npos) << tree;
  EXPECT_NE(tree.find("su000-n00..su000-n255 (256 x node dgx-h100), each: 8/8 GPUs free"), std::string::npos) << tree;
  // Depth 0: the root only. A busy node breaks the run of alike nodes.
  const std::string root_only = TopologyTree(*topo, 0);
  EXPECT_EQ(std::count(root_only.begin(), root_only.end(), '\n'), 1) << root_only;
  const GpuId g = topo->node_gpu(topo->find_node("su000-n05"), 0);
  ASSERT_TRUE(topo->Allocate(7, std::vector<GpuId>{g}, 1));
  TreeOptions opts;
  opts.max_depth = 2;
  const std::string after = TopologyTree(*topo, opts);
  EXPECT_NE(after.find("su000-n00..su000-n04 (5 x node"), std::string::npos) << after;
  EXPECT_NE(after.find("su000-n05 [node dgx-h100]: 7/8 GPUs free (free: 1-7)"), std::string::npos) << after;
  EXPECT_NE(after.find("su001..su015 (15 x leaf"), std::string::npos) << after;
}

}  // namespace
}  // namespace phalanx
