// The pure part of the Slurm mode: AdminComment tags, TRES/GRES GPU counts, the core spec of a
// managed job, node lists in Slurm's order, GPUs busy with unmanaged jobs.
#include <gtest/gtest.h>

#include "adapters/slurm/slurm_mapping.h"
#include "adapters/slurm/slurm_tres.h"
#include "adapters/topology/topology_reader_slurm.h"

namespace phalanx::slurm {
namespace {

Topology TwoLeaves() {
  auto spec = ReadSlurmTopology(
      "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\nSwitchName=spine Switches=leaf[1-2]\n",
      "topology.conf", SlurmReadOptions{});
  EXPECT_TRUE(spec) << spec.error().ToString();
  auto topo = Topology::Build(*spec);
  EXPECT_TRUE(topo) << topo.error().ToString();
  return std::move(*topo);
}

TEST(SlurmTres, GpuCountsIn2205And23Formats) {
  EXPECT_EQ(GpusInTres("gres:gpu:8"), 8u);                 // 22.05
  EXPECT_EQ(GpusInTres("gres/gpu:4"), 4u);                 // 23.02+
  EXPECT_EQ(GpusInTres("gres:gpu:a100:2"), 2u);            // typed
  EXPECT_EQ(GpusInTres("cpu=4,gres/gpu=3,mem=100M"), 3u);  // tres_alloc style
  EXPECT_EQ(GpusInTres("gres:shard:4;gres:gpu:1"), 1u);    // other gres ignored
  EXPECT_EQ(GpusInTres(""), 0u);
  EXPECT_EQ(GpusInTres("gres:gpu:many"), 0u);
  EXPECT_EQ(GpusInGres("gpu:8"), 8u);
  EXPECT_EQ(GpusInGres("gpu:h100:4(S:0-1),gpu:a100:4(S:1)"), 8u);
  EXPECT_EQ(GpusInGres("(null)"), 0u);
}

// slurm.conf's AuthInfo as Slurm 22.05 reads cred_expire (slurm_cred.c: atoi after
// "cred_expire=", under 5 or none: 120).
TEST(SlurmCredExpire, ReadAsSlurmReadsIt) {
  EXPECT_EQ(slurm::CredExpire(""), 120);
  EXPECT_EQ(slurm::CredExpire("socket=/run/munge/munge.socket.2"), 120);
  EXPECT_EQ(slurm::CredExpire("cred_expire=10"), 10);
  EXPECT_EQ(slurm::CredExpire("socket=/x,cred_expire=30,ttl=60"), 30);
  EXPECT_EQ(slurm::CredExpire("cred_expire=45s"), 45);
  EXPECT_EQ(slurm::CredExpire("cred_expire=4"), 120);  // Slurm: "AuthInfo=cred_expire=4 invalid"
  EXPECT_EQ(slurm::CredExpire("cred_expire=-10"), 120);
  EXPECT_EQ(slurm::CredExpire("cred_expire=x"), 120);
  EXPECT_EQ(slurm::CredExpire("CRED_EXPIRE=10"), 120);  // case matters to Slurm too
}

TEST(SlurmTag, ParsesWhatJobSubmitLuaWrites) {
  auto o =
      ParsePhalanxTag("phalanx:topology=leaf:prefer,elastic=2:8,checkpoint=10@120,preemptible=1,class=high", "job 7");
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->level, Level::kLeaf);
  EXPECT_TRUE(o->prefer);
  EXPECT_EQ(o->elastic_min, 2u);
  EXPECT_EQ(o->elastic_max, 8u);
  EXPECT_EQ(o->checkpoint_signal, 10);
  EXPECT_EQ(o->checkpoint_warning, 120);
  EXPECT_EQ(o->preemptible, true);
  EXPECT_EQ(o->priority_class, "high");
  auto any = ParsePhalanxTag("phalanx:topology=any", "job 7");
  ASSERT_TRUE(any);
  EXPECT_FALSE(any->level.has_value());
  auto part = ParsePhalanxTag("phalanx:partition=gpu", "job 7");
  ASSERT_TRUE(part);
  EXPECT_EQ(part->partition, "gpu");
}

TEST(SlurmTag, BadTagsNameTheJobAndTheValue) {
  auto rack = ParsePhalanxTag("phalanx:topology=rack", "job 7");
  ASSERT_FALSE(rack);
  EXPECT_EQ(rack.error().ToString(),
            "job 7: AdminComment phalanx:topology=rack: topology=rack: 'rack' is not a level (node, nvlink, leaf, "
            "spine or any)");
  auto key = ParsePhalanxTag("phalanx:bogus=1", "job 7");
  ASSERT_FALSE(key);
  EXPECT_NE(key.error().message.find("unknown key 'bogus'"), std::string::npos);
  EXPECT_FALSE(ParsePhalanxTag("phalanx:elastic=8:2", "job 7"));
  EXPECT_FALSE(ParsePhalanxTag("phalanx:checkpoint=99@1", "job 7"));
  EXPECT_FALSE(ParsePhalanxTag("phalanx:class=a b", "job 7"));
}

TEST(SlurmManaged, ByTagPartitionOrQos) {
  ManagedRule rule;
  rule.partitions = {"phx"};
  rule.qos = {"gang"};
  SlurmJob j;
  j.id = 3;
  j.partition = "gpu";
  auto none = ManagedBy(j, rule);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  j.admin_comment = "phalanx:topology=node";
  EXPECT_TRUE(ManagedBy(j, rule)->has_value());
  j.admin_comment = "someone else's comment";
  j.partition = "phx";
  EXPECT_TRUE(ManagedBy(j, rule)->has_value());
  j.partition = "gpu";
  j.qos = "gang";
  EXPECT_TRUE(ManagedBy(j, rule)->has_value());
  j.admin_comment = "phalanx:topology=rack";
  EXPECT_FALSE(ManagedBy(j, rule));
}

// Slurm takes any job name; the core refuses control characters (issue 12): they are shown
// escaped instead, and a long name is cut at a character boundary.
TEST(SlurmSpec, NamesAreMadePrintable) {
  EXPECT_EQ(SlurmName("train\n\x1b[2J"), "train\\n\\x1b[2J");
  EXPECT_EQ(SlurmName("训练"), "训练");
  std::string long_name;
  for (int i = 0; i < 100; ++i) long_name += "训";  // 300 bytes
  const std::string cut = SlurmName(long_name);
  EXPECT_EQ(cut.size(), 255u);  // 85 whole characters
  EXPECT_EQ(cut, long_name.substr(0, 255));
  SlurmJob j;
  j.id = 3;
  j.name = std::string("a\0b", 3);
  j.gpus_per_job = 1;
  auto s = ToJobSpec(j, ManagedOptions{}, "alice");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "a\\x00b");
}

TEST(SlurmSpec, NodeShapedGpusAnywhereAndElastic) {
  SlurmJob j;
  j.id = 9;
  j.name = "train";
  j.num_nodes = 2;
  j.gpus_per_node = 8;
  j.time_limit = 600;
  ManagedOptions o;
  o.level = Level::kLeaf;
  auto s = ToJobSpec(j, o, "alice");
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->shape.nodes, 2u);
  EXPECT_EQ(s->shape.gpus_per_node, 8u);
  EXPECT_EQ(s->shape.gpus, 16u);
  EXPECT_EQ(s->shape.level, Level::kLeaf);
  EXPECT_EQ(s->shape.fit, FitMode::kRequire);
  EXPECT_EQ(s->walltime, 600);
  EXPECT_EQ(s->user, "alice");

  SlurmJob g;
  g.id = 10;
  g.num_nodes = 1;
  g.gpus_per_job = 12;
  auto any = ToJobSpec(g, ManagedOptions{}, "bob");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->shape.nodes, 0u);
  EXPECT_EQ(any->shape.gpus, 12u);
  EXPECT_EQ(any->shape.fit, FitMode::kAny);

  ManagedOptions el;
  el.elastic_min = 4;
  el.elastic_max = 16;
  auto e = ToJobSpec(g, el, "bob");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->min_gpus, 4u);
  EXPECT_EQ(e->shape.gpus, 16u);
  EXPECT_FALSE(ToJobSpec(j, el, "bob"));  // elastic needs --gpus

  SlurmJob cpu;
  cpu.id = 11;
  auto none = ToJobSpec(cpu, ManagedOptions{}, "bob");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().ToString(), "job 11: asks for no GPUs (--gres=gpu:N or --gpus=N)");
}

// Slurm sorts a ReqNodeList by name: n10 after n9, whatever order the topology has.
TEST(SlurmNodeList, SortedAsSlurmSortsThem) {
  auto spec = ReadSlurmTopology("SwitchName=a Nodes=n10,n9\nSwitchName=b Nodes=n2\nSwitchName=s Switches=a,b\n",
                                "topology.conf", SlurmReadOptions{});
  ASSERT_TRUE(spec) << spec.error().ToString();
  auto topo = Topology::Build(*spec);
  ASSERT_TRUE(topo);
  std::vector<GpuId> gpus;
  for (const char* n : {"n10", "n9", "n2"}) gpus.push_back(topo->node_gpu(topo->find_node(n), 0));
  EXPECT_EQ(TopologyOrder(*topo, gpus), (std::vector<std::string>{"n10", "n9", "n2"}));
  EXPECT_EQ(SlurmNodeList(*topo, gpus), (std::vector<std::string>{"n2", "n9", "n10"}));
  const Topology two = TwoLeaves();
  EXPECT_EQ(SlurmNodeList(two, {two.node_gpu(two.find_node("n4"), 3), two.node_gpu(two.find_node("n3"), 0)}),
            (std::vector<std::string>{"n3", "n4"}));
}

TEST(SlurmExternalLoad, RunningUnmanagedJobsPerNode) {
  SlurmJob a;
  a.id = 1;
  a.state = SlurmJobState::kRunning;
  a.nodes = {"n1", "n2"};
  a.gpus_per_node = 4;
  a.end = 100;
  SlurmJob b;
  b.id = 2;
  b.state = SlurmJobState::kRunning;
  b.nodes = {"n2"};
  b.gpus_per_job = 2;
  b.end = 200;
  SlurmJob pending;
  pending.id = 3;
  pending.nodes = {"n3"};
  pending.gpus_per_node = 8;
  const auto load = ExternalLoadByNode({a, b, pending});
  ASSERT_EQ(load.size(), 2u);
  EXPECT_EQ(load.at("n1").gpus, 4u);
  EXPECT_EQ(load.at("n2").gpus, 6u);
  EXPECT_EQ(load.at("n2").until, 200);
  EXPECT_EQ(load.at("n2").jobs, (std::vector<SlurmJobId>{1, 2}));
}

TEST(SlurmExternalLoad, SlurmsPerNodeDetailWinsAndCpuOnlyJobsTakeNoGpus) {
  SlurmJob a;
  a.id = 5;
  a.state = SlurmJobState::kRunning;
  a.nodes = {"n1", "n2"};
  a.gpus_per_job = 3;  // evenly: 2 each; Slurm gave 1 + 2
  a.gpus_by_node = {1, 2};
  a.end = 100;
  SlurmJob cpu;
  cpu.id = 4;
  cpu.state = SlurmJobState::kRunning;
  cpu.nodes = {"n1", "n3"};
  cpu.end = 900;
  SlurmJob uneven = a;
  uneven.id = 6;
  uneven.nodes = {"n3", "n4"};
  uneven.gpus_by_node = {1};  // does not match the node list: the even split is used
  const auto load = ExternalLoadByNode({a, cpu, uneven});
  EXPECT_EQ(load.at("n1").gpus, 1u);
  EXPECT_EQ(load.at("n1").until, 100);  // the CPU-only job does not count
  EXPECT_EQ(load.at("n1").jobs, (std::vector<SlurmJobId>{5}));
  EXPECT_EQ(load.at("n2").gpus, 2u);
  EXPECT_EQ(load.at("n3").gpus, 2u);
  EXPECT_EQ(load.at("n4").gpus, 2u);
}

}  // namespace
}  // namespace phalanx::slurm
