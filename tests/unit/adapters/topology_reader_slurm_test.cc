#include "adapters/topology/topology_reader_slurm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "core/topology/node_models.h"
#include "core/topology/topology.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/slurm/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Reads a fixture and builds it; fails the test on any error.
Topology BuildFixture(const std::string& name, const SlurmReadOptions& options = {}) {
  auto spec = ReadSlurmTopology(ReadFixture(name), name, options);
  EXPECT_TRUE(spec.has_value()) << spec.error().ToString();
  auto topo = spec ? Topology::Build(*spec) : Topology::Build(DemoCluster());
  EXPECT_TRUE(topo.has_value()) << topo.error().ToString();
  return topo ? std::move(*topo) : *Topology::Build(DemoCluster());
}

std::string ParentName(const Topology& t, std::string_view child) {
  const DomainId d = t.find(child);
  if (!d.valid()) return "<no domain " + std::string(child) + ">";
  const DomainId p = t.domain(d).parent;
  return p.valid() ? t.domain(p).name : "<root>";
}

TEST(SlurmReader, TwoLevelDgxCluster) {
  auto spec = ReadSlurmTopology(ReadFixture("dgx_h100_2level.conf"), "dgx_h100_2level.conf", {});
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  EXPECT_EQ(spec->name, "dgx_h100_2level.conf");
  ASSERT_EQ(spec->switches.size(), 5u);
  ASSERT_EQ(spec->nodes.size(), 128u);
  ASSERT_EQ(spec->models.size(), 1u);
  EXPECT_EQ(spec->models[0].name, "dgx-h100");
  // Lines 6, 7, 9 (lower-case keys in another order) and 10-12 (continued).
  EXPECT_EQ(spec->switches[0].where, "dgx_h100_2level.conf:6");
  EXPECT_EQ(spec->switches[2].name, "ib-leaf03");
  EXPECT_EQ(spec->switches[2].where, "dgx_h100_2level.conf:9");
  EXPECT_EQ(spec->switches[3].name, "ib-leaf04");
  EXPECT_EQ(spec->switches[3].where, "dgx_h100_2level.conf:10");
  EXPECT_EQ(spec->nodes[96].name, "dgx097");
  EXPECT_EQ(spec->nodes[96].where, "dgx_h100_2level.conf:11");
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(spec->switches[i].level, Level::kLeaf) << spec->switches[i].name;
    EXPECT_EQ(spec->switches[i].parent, "ib-spine01");
    EXPECT_DOUBLE_EQ(spec->switches[i].uplink.gbs, 0) << "derived by Build, not from LinkSpeed";
    EXPECT_DOUBLE_EQ(spec->switches[i].uplink.lane_gbs, 50) << "LinkSpeed=400 (Gb/s) recorded";
    EXPECT_EQ(spec->switches[i].uplink.lanes, 0u);
  }
  EXPECT_EQ(spec->switches[4].level, Level::kSpine);
  EXPECT_EQ(spec->switches[4].parent, "");

  const Topology t = BuildFixture("dgx_h100_2level.conf");
  EXPECT_EQ(t.node_count(), 128u);
  EXPECT_EQ(t.gpu_count(), 1024u);
  EXPECT_EQ(t.count_at_level(Level::kLeaf), 4);
  EXPECT_EQ(t.count_at_level(Level::kSpine), 1);
  EXPECT_EQ(t.count_at_level(Level::kCore), 0);
  EXPECT_EQ(t.domain(t.root()).name, "ib-spine01");
  EXPECT_EQ(ParentName(t, "dgx001"), "ib-leaf01");
  EXPECT_EQ(ParentName(t, "dgx033"), "ib-leaf02");
  EXPECT_EQ(ParentName(t, "dgx096"), "ib-leaf03");
  EXPECT_EQ(ParentName(t, "dgx128"), "ib-leaf04");
  EXPECT_EQ(ParentName(t, "ib-leaf03"), "ib-spine01");
  // 32 nodes x 8 NDR NICs at 1:1.
  EXPECT_DOUBLE_EQ(t.domain(t.find("ib-leaf01")).uplink.gbs, 32 * 8 * 50.0);
  EXPECT_EQ(t.CheckInvariants(), "");
}

TEST(SlurmReader, OversubscriptionByLevelDividesTheDerivedUplink) {
  SlurmReadOptions options;
  options.oversubscription_by_level = {{"leaf", 2.0}};
  const Topology t = BuildFixture("dgx_h100_2level.conf", options);
  EXPECT_DOUBLE_EQ(t.domain(t.find("ib-leaf02")).uplink.gbs, 32 * 8 * 50.0 / 2);
  EXPECT_DOUBLE_EQ(t.domain(t.find("ib-leaf02")).oversubscription, 2.0);
}

TEST(SlurmReader, ThreeLevelTreeGetsLeafSpineCore) {
  SlurmReadOptions options;
  options.node_model = "hgx-a100";
  auto spec = ReadSlurmTopology(ReadFixture("tree_3level.conf"), "tree_3level.conf", options);
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  std::map<std::string, const SwitchSpec*> by_name;
  for (const SwitchSpec& s : spec->switches) by_name[s.name] = &s;
  ASSERT_EQ(by_name.size(), 8u);
  EXPECT_EQ(by_name["core1"]->level, Level::kCore);
  EXPECT_EQ(by_name["spine-a"]->level, Level::kSpine);
  EXPECT_EQ(by_name["spine-b"]->level, Level::kSpine);
  EXPECT_EQ(by_name["leaf-b2"]->level, Level::kLeaf);
  EXPECT_EQ(by_name["leaf-a3"]->parent, "spine-a");
  EXPECT_DOUBLE_EQ(by_name["spine-a"]->uplink.lane_gbs, 50);  // NDR
  EXPECT_DOUBLE_EQ(by_name["spine-b"]->uplink.lane_gbs, 25);  // HDR
  EXPECT_DOUBLE_EQ(by_name["leaf-b1"]->uplink.lane_gbs, 25);  // 200 Gb/s
  EXPECT_DOUBLE_EQ(by_name["core1"]->uplink.lane_gbs, 0);     // no LinkSpeed

  const Topology t = BuildFixture("tree_3level.conf", options);
  EXPECT_EQ(t.node_count(), 16u + 16 + 12 + 16 + 16);
  EXPECT_EQ(t.gpu_count(), t.node_count() * 8);
  EXPECT_EQ(t.count_at_level(Level::kCore), 1);
  EXPECT_EQ(t.count_at_level(Level::kSpine), 2);
  EXPECT_EQ(t.count_at_level(Level::kLeaf), 5);
  EXPECT_EQ(t.domain(t.root()).name, "core1");
  EXPECT_EQ(ParentName(t, "gpu-x7"), "leaf-a3");
  EXPECT_FALSE(t.find("gpu-x4").valid());
  EXPECT_EQ(ParentName(t, "r2n08"), "leaf-b1");
  EXPECT_EQ(ParentName(t, "r3n01"), "leaf-b2");
  EXPECT_EQ(ParentName(t, "leaf-b2"), "spine-b");
  EXPECT_EQ(ParentName(t, "spine-b"), "core1");
  EXPECT_EQ(t.domain(t.find("r1n01")).kind, "hgx-a100");
}

TEST(SlurmReader, SeveralTopSwitchesAreJoinedByBuild) {
  auto spec = ReadSlurmTopology("SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n[3-4]\n", "two.conf", {});
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  auto t = Topology::Build(*spec);
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->count_at_level(Level::kLeaf), 2);
  EXPECT_EQ(t->node_count(), 4u);
}

TEST(SlurmReader, GresConfFileListsGiveGpuCounts) {
  SlurmReadOptions options;
  options.gres_text = ReadFixture("gres.conf");
  const Topology t = BuildFixture("dgx_h100_2level.conf", options);
  EXPECT_EQ(t.gpu_count(), 1024u);  // 8 files, or 4 + 4 on two lines
}

// Each NodeName= list is bounded by the hostlist limit; a file repeating long lists is bounded
// by the reader's total (kMaxGresNodeNames = 4 x the node limit).
TEST(SlurmReader, GresNodeNamesAreBoundedInAll) {
  SlurmReadOptions options;
  options.gres_filename = "gres.conf";
  for (int i = 0; i < 6; ++i) options.gres_text += "NodeName=n" + std::to_string(i) + "x[1-50000] Name=gpu Count=8\n";
  auto spec = ReadSlurmTopology("SwitchName=s Nodes=n[1-2]\n", "t.conf", options);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().ToString(), "gres.conf:6: NodeName= lists name more than 262144 nodes in all");
}

TEST(SlurmReader, GresCountMismatchNamesNodeAndBothCounts) {
  SlurmReadOptions options;
  options.gres_text = ReadFixture("slurm_nodes.conf");
  options.gres_filename = "slurm_nodes.conf";
  auto spec = ReadSlurmTopology(ReadFixture("dgx_h100_2level.conf"), "dgx_h100_2level.conf", options);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().where, "dgx_h100_2level.conf:11");
  EXPECT_THAT(spec.error().message,
              HasSubstr("GPU count mismatch for node 'dgx125': gres gives 4 (from slurm_nodes.conf:7) "
                        "but model 'dgx-h100' has 8"));
  EXPECT_THAT(spec.error().message, HasSubstr("gpus_per_node"));
}

TEST(SlurmReader, GpusPerNodeAllowsPartialNodesWithAModelVariant) {
  SlurmReadOptions options;
  options.gres_text = ReadFixture("slurm_nodes.conf");
  options.gpus_per_node = 8;
  auto spec = ReadSlurmTopology(ReadFixture("dgx_h100_2level.conf"), "dgx_h100_2level.conf", options);
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  ASSERT_EQ(spec->models.size(), 2u);
  const NodeModel& partial = spec->models[1];
  EXPECT_EQ(partial.name, "dgx-h100-4gpu");
  EXPECT_EQ(partial.gpus, 4);
  EXPECT_EQ(partial.nics, 4);
  ASSERT_EQ(partial.groups.size(), 1u);
  EXPECT_EQ(partial.groups[0].gpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(spec->nodes[123].model, 0);  // dgx124
  EXPECT_EQ(spec->nodes[124].model, 1);  // dgx125
  auto t = Topology::Build(*spec);
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->gpu_count(), 124u * 8 + 4 * 4);
  EXPECT_EQ(t->node_gpu_count(t->find_node("dgx128")), 4u);
  EXPECT_EQ(t->domain(t->find("dgx128")).kind, "dgx-h100-4gpu");
}

TEST(SlurmReader, GpusPerNodeAppliesToNodesWithoutGres) {
  SlurmReadOptions options;
  options.gpus_per_node = 4;
  options.node_model = "l40s-pcie";
  const Topology t = BuildFixture("dgx_h100_2level.conf", options);
  EXPECT_EQ(t.gpu_count(), 128u * 4);
  EXPECT_EQ(t.domain(t.find("dgx001")).kind, "l40s-pcie-4gpu");
  EXPECT_EQ(t.CheckInvariants(), "");
}

TEST(SlurmReader, GresLinesWithoutNodeNameApplyToEveryNode) {
  SlurmReadOptions options;
  options.gres_text = "Name=gpu Type=l40s File=/dev/nvidia[0-1]\nName=gpu Type=l40s File=/dev/nvidia[2-3]\n";
  options.gpus_per_node = 8;
  options.node_model = "l40s-pcie";
  auto spec = ReadSlurmTopology("SwitchName=s1 Nodes=n[1-2]\n", "t.conf", options);
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  ASSERT_EQ(spec->models.size(), 2u);
  EXPECT_EQ(spec->models[1].gpus, 4);
  EXPECT_EQ(spec->nodes[0].model, 1);
  EXPECT_TRUE(Topology::Build(*spec).has_value());
}

TEST(SlurmReader, GresCountAboveTheModelIsAlwaysAnError) {
  SlurmReadOptions options;
  options.gres_text = "NodeName=n[1-2] Name=gpu Count=16\n";
  options.gpus_per_node = 8;
  auto spec = ReadSlurmTopology("SwitchName=s1 Nodes=n[1-2]\n", "t.conf", options);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().where, "t.conf:1");
  EXPECT_THAT(spec.error().message,
              HasSubstr("node 'n1': gres gives 16 (from gres.conf:1) but model 'dgx-h100' has 8"));
}

TEST(SlurmReader, GresConfAndSlurmConfMustAgree) {
  SlurmReadOptions options;
  options.gres_text = "NodeName=n1 Name=gpu File=/dev/nvidia[0-7]\nNodeName=n1 Gres=gpu:4\n";
  auto spec = ReadSlurmTopology("SwitchName=s1 Nodes=n1\n", "t.conf", options);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().where, "t.conf:1");
  EXPECT_THAT(spec.error().message, HasSubstr("gres.conf:1 gives 8 GPUs but Gres= at gres.conf:2 gives 4"));
}

TEST(SlurmReader, BuildErrorsCarryTheFilePosition) {
  // Readable, but a node named like a switch: Topology::Build rejects it at the reader's where.
  auto spec = ReadSlurmTopology("# x\nSwitchName=n1 Nodes=n[1-2]\n", "t.conf", {});
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  auto t = Topology::Build(*spec);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().where, "t.conf:2");
  EXPECT_THAT(t.error().message, HasSubstr("duplicate"));
}

// ---- errors: each names file:line and the problem -------------------------------------------

struct ErrorCase {
  std::string name;
  std::string text;
  std::string where;
  std::string message;  // substring
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class SlurmReaderErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SlurmReaderErrors, NamesFileLineAndProblem) {
  const ErrorCase& c = GetParam();
  auto spec = ReadSlurmTopology(c.text, "t.conf", {});
  ASSERT_FALSE(spec.has_value()) << "read succeeded";
  EXPECT_EQ(spec.error().where, c.where);
  EXPECT_THAT(spec.error().message, HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    SlurmInline, SlurmReaderErrors,
    ::testing::Values(
        ErrorCase{"UnknownKey", "SwitchName=s1 Nodes=n1 Speed=400\n", "t.conf:1",
                  "unknown key 'Speed' (known: SwitchName, Switches, Nodes, LinkSpeed)"},
        ErrorCase{"MissingSwitchName", "# c\nNodes=n[1-2] LinkSpeed=400\n", "t.conf:2", "line has no SwitchName="},
        ErrorCase{"DuplicateSwitch", "SwitchName=s1 Nodes=n1\nSwitchName=s1 Nodes=n2\n", "t.conf:2",
                  "duplicate switch 's1' (first defined at t.conf:1)"},
        ErrorCase{"NodeTwiceInOneSwitch", "SwitchName=s1 Nodes=n[1-2],n2\n", "t.conf:1",
                  "node 'n2' is listed twice in Nodes= of 's1'"},
        ErrorCase{"UnknownSwitch", "SwitchName=s1 Nodes=n1\nSwitchName=top Switches=s[1-2]\n", "t.conf:2",
                  "unknown switch 's2' in Switches= of 'top'"},
        ErrorCase{"SelfChild", "SwitchName=s1 Nodes=n1\nSwitchName=top Switches=top,s1\n", "t.conf:2",
                  "switch 'top' lists itself in Switches="},
        ErrorCase{"BadHostlist", "SwitchName=s1 Nodes=n[3-1]\n", "t.conf:1",
                  "bad Nodes= list: reversed range '3-1' in hostlist 'n[3-1]'"},
        ErrorCase{"BadSwitchList", "SwitchName=s1 Nodes=n1\nSwitchName=top Switches=s[1-x]\n", "t.conf:2",
                  "bad Switches= list: non-numeric range bound 'x'"},
        ErrorCase{"BadLinkSpeedWord", "SwitchName=s1 Nodes=n1 LinkSpeed=fast\n", "t.conf:1",
                  "bad LinkSpeed: bad bandwidth 'fast'"},
        ErrorCase{"BadLinkSpeedUnit", "SwitchName=s1 \\\n  Nodes=n1 \\\n  LinkSpeed=400Gb\n", "t.conf:3",
                  "bad LinkSpeed: unknown bandwidth unit 'Gb'"},
        ErrorCase{"BothNodesAndSwitches", "SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n2 Switches=s1\n", "t.conf:2",
                  "switch 's2' has both Nodes= and Switches="},
        ErrorCase{"NeitherNodesNorSwitches", "SwitchName=s1 LinkSpeed=400\n", "t.conf:1",
                  "switch 's1' has neither Nodes= nor Switches="},
        ErrorCase{"RepeatedKey", "SwitchName=s1 Nodes=n1 nodes=n2\n", "t.conf:1", "key nodes= given twice on one line"},
        ErrorCase{"NotKeyValue", "SwitchName=s1 Nodes=n1 leaf\n", "t.conf:1", "expected Key=Value, got 'leaf'"},
        ErrorCase{"EmptyValue", "SwitchName=s1 Nodes=\n", "t.conf:1", "empty value for Nodes="},
        ErrorCase{"EmptyKey", "SwitchName=s1 =n1\n", "t.conf:1", "missing key before '='"},
        ErrorCase{"BlockTopology", "BlockName=b1 Nodes=n[1-4]\n", "t.conf:1", "topology/block, which is not supported"},
        ErrorCase{"FourLevels",
                  "SwitchName=l Nodes=n1\nSwitchName=s Switches=l\nSwitchName=c Switches=s\nSwitchName=x Switches=c\n",
                  "t.conf:4", "switch 'x' is a 4th switch level above the nodes"},
        ErrorCase{"TooManyNodes", "SwitchName=a Nodes=n[1-40000]\nSwitchName=b Nodes=m[1-40000]\n", "t.conf:2",
                  "Nodes= lists reach 80000 nodes: more than the limit of 65536"},
        ErrorCase{"EmptyFile", "", "t.conf", "no switches defined"},
        ErrorCase{"OnlyComments", "# nothing here\n\n   # still nothing\n", "t.conf", "no switches defined"},
        ErrorCase{"TruncatedMidToken", "SwitchName=s1 Nodes=dgx[001-", "t.conf:1",
                  "unterminated '[' in hostlist 'dgx[001-' (truncated?)"},
        ErrorCase{"DanglingContinuation", "SwitchName=s1 Nodes=n1\nSwitchName=s2 \\", "t.conf:2",
                  "file ends right after a line continuation"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

struct FixtureError {
  std::string file;
  std::string where;
  std::string message;
};

void PrintTo(const FixtureError& c, std::ostream* os) { *os << c.file; }

class SlurmReaderFixtureErrors : public ::testing::TestWithParam<FixtureError> {};

TEST_P(SlurmReaderFixtureErrors, NamesFileLineAndProblem) {
  const FixtureError& c = GetParam();
  auto spec = ReadSlurmTopology(ReadFixture(c.file), c.file, {});
  ASSERT_FALSE(spec.has_value()) << "read succeeded";
  EXPECT_EQ(spec.error().where, c.where);
  EXPECT_THAT(spec.error().message, HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    SlurmFixtures, SlurmReaderFixtureErrors,
    ::testing::Values(FixtureError{"broken_truncated.conf", "broken_truncated.conf:5",
                                   "bad Nodes= list: unterminated '[' in hostlist 'dgx[065-' (truncated?)"},
                      FixtureError{"broken_continuation.conf", "broken_continuation.conf:4",
                                   "file ends right after a line continuation '\\' (truncated file?)"},
                      FixtureError{"broken_cycle.conf", "broken_cycle.conf:4",
                                   "switches form a parent cycle: spine1 -> core1 -> spine1"},
                      FixtureError{"broken_duplicate_node.conf", "broken_duplicate_node.conf:3",
                                   "node 'dgx032' is under two switches: 'ib-leaf01' (broken_duplicate_node.conf:2) "
                                   "and 'ib-leaf02' (broken_duplicate_node.conf:3)"},
                      FixtureError{"broken_two_parents.conf", "broken_two_parents.conf:6",
                                   "switch 'leaf2' has two parents: 'spine1' (broken_two_parents.conf:5) and 'spine2' "
                                   "(broken_two_parents.conf:6)"}),
    [](const ::testing::TestParamInfo<FixtureError>& info) {
  std::string name = info.param.file.substr(0, info.param.file.find('.'));
  for (char& ch : name) ch = ch == '_' ? 'X' : ch;
  return name;
    });

struct OptionError {
  std::string name;
  SlurmReadOptions options;
  std::string where;
  std::string message;
};

void PrintTo(const OptionError& c, std::ostream* os) { *os << c.name; }

class SlurmReaderOptionErrors : public ::testing::TestWithParam<OptionError> {};

TEST_P(SlurmReaderOptionErrors, NamesTheOption) {
  const OptionError& c = GetParam();
  auto spec = ReadSlurmTopology("SwitchName=s1 Nodes=n1\n", "t.conf", c.options);
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().where, c.where);
  EXPECT_THAT(spec.error().message, HasSubstr(c.message));
}

SlurmReadOptions With(auto change) {
  SlurmReadOptions o;
  change(o);
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    SlurmOptions, SlurmReaderOptionErrors,
    ::testing::Values(
        OptionError{"UnknownModel", With([](SlurmReadOptions& o) { o.node_model = "dgx-z9"; }), "options.node_model",
                    "unknown model 'dgx-z9'"},
        OptionError{"TooManyGpus", With([](SlurmReadOptions& o) { o.gpus_per_node = 9; }), "options.gpus_per_node",
                    "gpus_per_node 9 is outside 0..8"},
        OptionError{"NegativeGpus", With([](SlurmReadOptions& o) { o.gpus_per_node = -1; }), "options.gpus_per_node",
                    "outside 0..8"},
        OptionError{"UnknownLevel", With([](SlurmReadOptions& o) {
                      o.oversubscription_by_level = {{"rack", 2}};
                    }),
                    "options.oversubscription_by_level", "unknown switch level 'rack'"},
        OptionError{"RatioBelowOne", With([](SlurmReadOptions& o) {
                      o.oversubscription_by_level = {{"spine", 0.5}};
                    }),
                    "options.oversubscription_by_level", "must be >= 1"},
        OptionError{"BadLinkSpeedUnit", With([](SlurmReadOptions& o) { o.link_speed_unit = "furlongs"; }),
                    "options.link_speed_unit", "bad default bandwidth unit 'furlongs'"},
        OptionError{"BadGresCount",
                    With([](SlurmReadOptions& o) { o.gres_text = "\nNodeName=n1 Name=gpu Count=eight\n"; }),
                    "gres.conf:2", "bad GPU count 'eight' in Count="},
        OptionError{"BadGresFiles",
                    With([](SlurmReadOptions& o) { o.gres_text = "NodeName=n1 Name=gpu File=/dev/nvidia[0-\n"; }),
                    "gres.conf:1", "bad File= list: unterminated '['"},
        OptionError{"BadGresEntry", With([](SlurmReadOptions& o) { o.gres_text = "NodeName=n1 Gres=gpu:h100:x8\n"; }),
                    "gres.conf:1", "bad GPU count 'x8' in Gres=gpu:h100:x8"},
        OptionError{"NodeDefinedTwice", With([](SlurmReadOptions& o) {
                      o.gres_text = "NodeName=n1 Gres=gpu:8\nNodeName=n[1-2] Gres=gpu:8\n";
                    }),
                    "gres.conf:2", "node 'n1' is defined twice (first at gres.conf:1)"},
        OptionError{"NoGpus", With([](SlurmReadOptions& o) {
                      o.gres_text = "NodeName=n1 Gres=mps:100 CPUs=64\n";
                      o.gpus_per_node = 8;
                    }),
                    "t.conf:1", "node 'n1' has no GPUs (from gres.conf:1)"}),
    [](const ::testing::TestParamInfo<OptionError>& info) { return info.param.name; });

}  // namespace
}  // namespace phalanx
