#include "adapters/topology/topology_reader_yaml.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/topology/node_models.h"
#include "core/topology/topology.h"

namespace phalanx {
namespace {

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/../../config/topologies/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Expects `text` to fail at "t.yaml:<line>" with a message containing `needle`.
void ExpectError(const std::string& text, int line, const std::string& needle) {
  auto spec = ReadTopologyYaml(text, "t.yaml");
  ASSERT_FALSE(spec) << "accepted:\n" << text;
  EXPECT_EQ(spec.error().where, "t.yaml:" + std::to_string(line)) << spec.error().ToString();
  EXPECT_NE(spec.error().message.find(needle), std::string::npos)
      << spec.error().ToString() << "\n(wanted: " << needle << ")";
}

struct Example {
  const char* file;
  size_t nodes, gpus;
};

TEST(YamlReader, EveryExampleLoadsAndBuilds) {
  for (const Example& e :
       {Example{"demo.yaml", 4, 32}, Example{"superpod-4su.yaml", 128, 1024}, Example{"leafspine-2to1.yaml", 32, 256},
        Example{"nvl72-8racks.yaml", 144, 576}, Example{"mixed.yaml", 40, 320}}) {
    auto spec = ReadTopologyYaml(ReadExample(e.file), e.file);
    ASSERT_TRUE(spec) << spec.error().ToString();
    auto topo = Topology::Build(*spec);
    ASSERT_TRUE(topo) << topo.error().ToString();
    EXPECT_EQ(topo->node_count(), e.nodes) << e.file;
    EXPECT_EQ(topo->gpu_count(), e.gpus) << e.file;
  }
}

TEST(YamlReader, DemoYamlIsTheDemoCluster) {
  auto spec = ReadTopologyYaml(ReadExample("demo.yaml"), "demo.yaml");
  ASSERT_TRUE(spec) << spec.error().ToString();
  const TopologySpec demo = DemoCluster();
  EXPECT_EQ(spec->name, demo.name);
  ASSERT_EQ(spec->switches.size(), demo.switches.size());
  for (size_t i = 0; i < demo.switches.size(); ++i) {
    EXPECT_EQ(spec->switches[i].name, demo.switches[i].name);
    EXPECT_EQ(spec->switches[i].parent, demo.switches[i].parent);
    EXPECT_EQ(spec->switches[i].level, demo.switches[i].level);
    EXPECT_EQ(spec->switches[i].rail_optimized, demo.switches[i].rail_optimized);
    EXPECT_DOUBLE_EQ(spec->switches[i].oversubscription, demo.switches[i].oversubscription);
  }
  ASSERT_EQ(spec->nodes.size(), demo.nodes.size());
  for (size_t i = 0; i < demo.nodes.size(); ++i) {
    EXPECT_EQ(spec->nodes[i].name, demo.nodes[i].name);
    EXPECT_EQ(spec->nodes[i].parent, demo.nodes[i].parent);
  }
  ASSERT_EQ(spec->models.size(), 1u);
  EXPECT_EQ(spec->models[0].name, "dgx-h100");
  EXPECT_EQ(spec->models[0].nics, demo.models[0].nics);
  EXPECT_EQ(spec->switches[1].where, "demo.yaml:26");  // the line of `- name: leaf0`
  EXPECT_EQ(spec->nodes[0].where, "demo.yaml:31");     // the line of its nodes: hostlist
}

TEST(YamlReader, FullModelAndUnits) {
  const std::string text = R"(cluster: c
models:
  box:
    gpus: 4
    nics: 1
    nic_speed: 2xNDR
    groups:
      - {kind: nvlink, gpus: [0, 1], gpu_link: 56GB/s, uplink: 256Gb/s}
      - {kind: nvlink, gpus: [2, 3], gpu_link: 56GB/s, uplink: 32GB/s, uplink_type: pcie}
fabric:
  name: top
  level: leaf
  oversubscription: "3:2"
  nodes: ["n[1-2]", {hosts: n3, model: dgx-h100}]
)";
  auto spec = ReadTopologyYaml(text, "t.yaml");
  ASSERT_TRUE(spec) << spec.error().ToString();
  ASSERT_EQ(spec->models.size(), 2u);
  const NodeModel& m = spec->models[0];
  EXPECT_EQ(m.name, "box");
  EXPECT_DOUBLE_EQ(m.nic_gbs, 100);
  EXPECT_EQ(m.groups[0].gpu_link_type, LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(m.groups[0].uplink.gbs, 32);
  EXPECT_EQ(m.groups[0].uplink.type, LinkType::kPcie);
  EXPECT_DOUBLE_EQ(spec->switches[0].oversubscription, 1.5);
  ASSERT_EQ(spec->nodes.size(), 3u);
  EXPECT_EQ(spec->nodes[1].name, "n2");
  EXPECT_EQ(spec->nodes[1].model, 0);
  EXPECT_EQ(spec->nodes[2].model, 1);
  EXPECT_EQ(spec->models[1].name, "dgx-h100");
}

constexpr const char* kHead = "cluster: c\nmodels:\n  m: {builtin: dgx-h100}\nfabric:\n";  // 4 lines

TEST(YamlReader, ErrorsNameLineFieldAndValue) {
  ExpectError(std::string(kHead) + "  name: s\n  level: spine\n  colour: red\n  nodes: a[1-2]\n", 7,
              "unknown key 'colour'");
  ExpectError(std::string(kHead) + "  name: s\n  level: lef\n  nodes: a[1-2]\n", 6,
              "fabric (s).level: unknown switch level 'lef'");
  ExpectError(std::string(kHead) + "  name: s\n  level: gpu\n  nodes: a[1-2]\n", 6, "unknown switch level 'gpu'");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  uplink: 400Gbit/sec\n  nodes: a[1-2]\n", 7,
              "fabric (s).uplink:");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  uplink: fast\n  nodes: a[1-2]\n", 7, "fast");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  nodes: a[1-2]\n  model: dgx-h200\n", 8,
              "unknown model 'dgx-h200'");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  rail_optimized: maybe\n  nodes: a[1-2]\n", 7,
              "expected true or false, got 'maybe'");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  oversubscription: 0.5\n  nodes: a[1-2]\n", 7,
              "at least 1");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  oversubscription: 1:2\n  nodes: a[1-2]\n", 7,
              "'1:2' is not a ratio");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  nodes: a[1-2\n", 7, "fabric (s).nodes:");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  nodes: {a: 1}\n", 7, "got a mapping");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  level: spine\n  nodes: a1\n", 7,
              "duplicate key 'level'");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n", 5, "needs 'children:'");
  ExpectError(
      std::string(kHead) + "  - name: s\n    level: leaf\n    nodes: a1\n  - name: s\n    level: leaf\n    nodes: a2\n",
      8, "duplicate switch 's' (first at t.yaml:5)");
  ExpectError(std::string(kHead) +
                  "  name: s\n  level: spine\n  children:\n    - {name: l0, level: leaf, nodes: \"a[1-2]\"}\n"
                  "    - {name: l1, level: leaf, nodes: \"a[2-3]\"}\n",
              9, "duplicate node 'a2' (first at t.yaml:8)");
  ExpectError(std::string(kHead) + "  name: s\n  level: leaf\n  children:\n    - {name: t, level: spine, nodes: a1}\n",
              8, "levels must grow upwards");
  ExpectError("cluster: [c\n", 2, "YAML syntax error");
  ExpectError("cluster: c\nfabric:\n  name: s\n   level: leaf\n", 4, "YAML syntax error");
  ExpectError("cluster: c\ngenerate: superpod:x\n", 2, "generate: ");
  ExpectError("cluster: c\ngenerate: superpod:999999999\n", 2, "31999999968 nodes: more than the limit of 65536");
  ExpectError(std::string(kHead) +
                  "  name: s\n  level: spine\n  children:\n    - {name: l0, level: leaf, nodes: \"a[1-40000]\"}\n"
                  "    - {name: l1, level: leaf, nodes: \"b[1-40000]\"}\n",
              9, "the cluster reaches 80000 nodes: more than the limit of 65536");
  ExpectError("cluster: c\ngenerate: demo\nfabric: {name: s}\n", 3, "cannot be combined with 'generate:'");
  ExpectError("version: 2\n", 1, "version: 2 is out of range 1..1");
  ExpectError("cluster: c\n", 1, "missing 'fabric:'");
  ExpectError("- a\n- b\n", 1, "top level: expected a mapping");
  // Two models defined: each hostlist must say which.
  ExpectError(
      "models:\n  a: {builtin: dgx-h100}\n  b: {builtin: hgx-a100}\nfabric: {name: s, level: leaf, nodes: x1}\n", 4,
      "needs 'model:'");
}

TEST(YamlReader, ModelErrorsPointAtTheModel) {
  ExpectError(
      "models:\n  box:\n    gpus: 2\n    nics: 1\n    nic_speed: 100Gb/s\n    groups:\n      - {kind: pcie, gpus: [0, "
      "0], gpu_link: 32GB/s}\n"
      "fabric: {name: s, level: leaf, nodes: x1}\n",
      2, "models.box: GPU 0 is in two groups");
  ExpectError(
      "models:\n  box:\n    gpus: 2\n    groups:\n      - {kind: pcie, gpus: [0, 1]}\nfabric: {name: s, level: leaf, "
      "nodes: x1}\n",
      5, "has gpus but no 'gpu_link:'");
  ExpectError("models:\n  box:\n    gpus: two\n", 3, "models.box.gpus: 'two' is not a whole number");
  ExpectError("models:\n  box:\n    builtin: dgx-h100\n    gpus: 4\n", 4, "cannot be combined with 'builtin:'");
  ExpectError("models:\n  box:\n    builtin: dgx-h900\n", 3, "unknown model 'dgx-h900'");
  ExpectError("models:\n  box:\n    gpus: 1\n    nics: 1\n", 3, "has nics but no 'nic_speed:'");
  ExpectError(
      "models:\n  box:\n    gpus: 1\n    groups:\n      - {kind: pcie, gpus: [0], gpu_link: 1GB/s, gpu_link_type: "
      "warp}\n",
      5, "unknown link type 'warp'");
  // A node under a switch needs NICs: Topology::Build's error keeps the node's line.
  ExpectError("models:\n  box: {gpus: 1, gpu_link: 10GB/s}\nfabric: {name: s, level: leaf, nodes: x1}\n", 3,
              "has no NIC");
}

TEST(YamlReader, GenerateKeepsClusterName) {
  auto spec = ReadTopologyYaml("cluster: big\ngenerate: leafspine:64:16:2\n", "g.yaml");
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->name, "big");
  EXPECT_EQ(spec->nodes.size(), 64u);
  EXPECT_EQ(spec->nodes[0].where, "g.yaml:2");
}

// Random damage to every example: never a crash or an exception, and every error has a position
// in the file.
TEST(YamlReader, SurvivesRandomMutations) {
  std::mt19937 rng(77);
  const char* env = std::getenv("PHALANX_MUTATIONS");
  const int per_file = env != nullptr ? std::atoi(env) : 80;
  const std::string alphabet = " -:[]{},\"'\n#&*!|>0a";
  int ok = 0, failed = 0;
  for (const char* file :
       {"demo.yaml", "leafspine-2to1.yaml", "nvl72-8racks.yaml", "mixed.yaml", "superpod-4su.yaml"}) {
    const std::string good = ReadExample(file);
    for (int iter = 0; iter < per_file; ++iter) {
      std::string s = good;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t pos = rng() % s.size();
        switch (rng() % 5) {
          case 0: s.erase(pos, 1 + rng() % 12); break;
          case 1: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
          case 2: s[pos] = static_cast<char>(rng() % 256); break;
          case 3: {  // delete a whole line
            const size_t a = s.rfind('\n', pos), b = s.find('\n', pos);
            if (a != std::string::npos && b != std::string::npos) s.erase(a, b - a);
            break;
          }
          case 4: {  // duplicate a line
            const size_t a = s.rfind('\n', pos), b = s.find('\n', pos);
            if (a != std::string::npos && b != std::string::npos) s.insert(b, s.substr(a, b - a));
            break;
          }
        }
      }
      auto spec = ReadTopologyYaml(s, file);
      if (spec) {
        ++ok;
        ASSERT_TRUE(Topology::Build(*spec)) << s;
      } else {
        ++failed;
        ASSERT_EQ(spec.error().where.rfind(file, 0), 0u) << spec.error().ToString();
        ASSERT_FALSE(spec.error().message.empty());
      }
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace phalanx
