#include "core/topology/topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::AllocateRandomJobs;
using testing::Build;
using testing::NodeGpus;
using testing::TwoTier;

std::string BuildError(const TopologySpec& spec) {
  auto t = Topology::Build(spec);
  return t ? "" : t.error().ToString();
}

TEST(Topology, StructureOfATwoTierCluster) {
  Topology t = Build(TwoTier(2, 3));
  EXPECT_EQ(t.node_count(), 6u);
  EXPECT_EQ(t.gpu_count(), 48u);
  EXPECT_EQ(t.count_at_level(Level::kLeaf), 2);
  EXPECT_EQ(t.count_at_level(Level::kGroup), 6);  // one NVSwitch per node
  EXPECT_EQ(t.domain(t.root()).name, "spine");
  const DomainId leaf1 = t.find("leaf1");
  ASSERT_TRUE(leaf1.valid());
  EXPECT_EQ(t.domain(leaf1).first_gpu, 24u);
  EXPECT_EQ(t.domain(leaf1).gpu_count, 24u);
  // Leaf uplink = 3 nodes x 8 NICs x 50 GB/s at 1:1.
  EXPECT_DOUBLE_EQ(t.domain(leaf1).uplink.gbs, 1200);
  const NodeId n = t.find_node("leaf1-n2");
  EXPECT_EQ(t.node_gpu_count(n), 8u);
  EXPECT_EQ(t.local_index(t.node_gpu(n, 5)), 5u);
  EXPECT_EQ(t.lowest_common_ancestor(t.gpu_domain(GpuId(0)), t.gpu_domain(GpuId(47))), t.root());
  EXPECT_EQ(t.free_nodes(t.root()), 6u);
  EXPECT_EQ(t.nodes_with_free(leaf1, 8), 3u);
}

TEST(Topology, OversubscriptionDividesTheUplink) {
  Topology t = Build(TwoTier(1, 4, "hgx-a100", 2.0));
  // 4 nodes x 8 HDR NICs x 25 GB/s / 2.
  EXPECT_DOUBLE_EQ(t.domain(t.find("leaf0")).uplink.gbs, 400);
}

TEST(Topology, CountersFollowAllocateAndRelease) {
  Topology t = Build(TwoTier(2, 2));
  const DomainId leaf0 = t.find("leaf0");
  ASSERT_TRUE(t.Allocate(7, std::vector<GpuId>{GpuId(0), GpuId(1), GpuId(9)}, 100));
  EXPECT_EQ(t.free_gpus(t.root()), 29u);
  EXPECT_EQ(t.free_gpus(leaf0), 13u);
  EXPECT_EQ(t.free_nodes(leaf0), 0u);
  EXPECT_EQ(t.nodes_with_free(leaf0, 6), 1u);
  EXPECT_EQ(t.nodes_with_free(leaf0, 7), 1u);
  // The ring crosses both nodes' uplinks (and the GPU groups), not the leaf's.
  EXPECT_EQ(t.crossing_jobs(t.find("leaf0-n0")), 1u);
  EXPECT_EQ(t.crossing_jobs(leaf0), 0u);
  EXPECT_DOUBLE_EQ(t.crossing_gbs(t.find("leaf0-n1")), 100);
  EXPECT_EQ(t.CheckInvariants(), "");
  ASSERT_TRUE(t.Release(7));
  EXPECT_EQ(t.free_gpus(t.root()), 32u);
  EXPECT_EQ(t.free_nodes(t.root()), 4u);
  EXPECT_EQ(t.crossing_jobs(t.find("leaf0-n0")), 0u);
  EXPECT_EQ(t.CheckInvariants(), "");
}

TEST(Topology, FailedAllocationChangesNothing) {
  Topology t = Build(TwoTier(1, 2));
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(3)}, 0));
  auto busy = t.Allocate(2, std::vector<GpuId>{GpuId(2), GpuId(3)}, 0);
  ASSERT_FALSE(busy);
  EXPECT_NE(busy.error().message.find("held by job 1"), std::string::npos);
  EXPECT_FALSE(t.Allocate(3, std::vector<GpuId>{GpuId(4), GpuId(4)}, 0));
  EXPECT_FALSE(t.Allocate(4, std::vector<GpuId>{GpuId(99)}, 0));
  EXPECT_FALSE(t.Allocate(1, std::vector<GpuId>{GpuId(5)}, 0));  // job 1 already holds GPUs
  EXPECT_FALSE(t.Allocate(kNoJob, std::vector<GpuId>{GpuId(5)}, 0));
  EXPECT_FALSE(t.Release(42));
  EXPECT_EQ(t.free_gpus(t.root()), 15u);
  EXPECT_TRUE(t.is_free(GpuId(2)));
  EXPECT_EQ(t.CheckInvariants(), "");
}

TEST(Topology, DrainAndDownRemoveCapacityUntilResumed) {
  Topology t = Build(TwoTier(1, 2));
  const NodeId n0 = t.find_node("leaf0-n0");
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(1)}, 0));
  ASSERT_TRUE(t.SetNodeState(n0, NodeState::kDrain));
  EXPECT_EQ(t.free_gpus(t.root()), 8u);
  EXPECT_FALSE(t.is_free(GpuId(2)));
  EXPECT_EQ(t.CheckInvariants(), "");
  ASSERT_TRUE(t.Release(1));  // a running job ends on a drained node
  EXPECT_EQ(t.free_gpus(t.root()), 8u);
  ASSERT_TRUE(t.SetNodeState(n0, NodeState::kDown));
  ASSERT_TRUE(t.SetNodeState(n0, NodeState::kUp));
  EXPECT_EQ(t.free_gpus(t.root()), 16u);
  EXPECT_EQ(t.free_nodes(t.root()), 2u);
  EXPECT_EQ(t.CheckInvariants(), "");
}

// version() numbers the states that stay; what-ifs (Hold, Suspend) leave it and are counted
// while in force, so "same version, no what-if" means the same Topology. A refused change keeps
// the number.
// A domain's fingerprint names its state (free GPUs, crossing loads), not how it came there.
TEST(Topology, FingerprintNamesTheStateBelowADomain) {
  Topology t = Build(TwoTier(2, 2));
  const DomainId leaf0 = t.find("leaf0"), leaf1 = t.find("leaf1"), n0 = t.find("leaf0-n0");
  const Topology::Fingerprint empty0 = t.fingerprint(leaf0), empty1 = t.fingerprint(leaf1);
  EXPECT_NE(empty0, empty1);  // other GPUs
  const std::vector<GpuId> a{GpuId(0), GpuId(1)}, b{GpuId(2), GpuId(9)};
  ASSERT_TRUE(t.Allocate(1, a, 0));
  const Topology::Fingerprint one = t.fingerprint(leaf0);
  EXPECT_NE(one, empty0);
  EXPECT_EQ(t.fingerprint(leaf1), empty1);  // nothing changed below leaf1
  ASSERT_TRUE(t.Allocate(2, b, 10));
  const Topology::Fingerprint both = t.fingerprint(leaf0);
  // The same two jobs in the other order: the same state.
  ASSERT_TRUE(t.Release(1));
  ASSERT_TRUE(t.Release(2));
  EXPECT_EQ(t.fingerprint(leaf0), empty0);
  ASSERT_TRUE(t.Allocate(2, b, 10));
  ASSERT_TRUE(t.Allocate(1, a, 0));
  EXPECT_EQ(t.fingerprint(leaf0), both);
  // The same GPUs, another ring: the loads differ, so does the state.
  ASSERT_TRUE(t.Release(2));
  ASSERT_TRUE(t.Allocate(2, b, 20));
  EXPECT_NE(t.fingerprint(leaf0), both);
  EXPECT_NE(t.fingerprint(n0), t.fingerprint(leaf0));
  // What-ifs change it while in force; undone, it is as before.
  const Topology::Fingerprint now = t.fingerprint(leaf0);
  ASSERT_TRUE(t.Hold(std::vector<GpuId>{GpuId(4)}));
  EXPECT_NE(t.fingerprint(leaf0), now);
  ASSERT_TRUE(t.Unhold(std::vector<GpuId>{GpuId(4)}));
  ASSERT_TRUE(t.Suspend(2));
  EXPECT_NE(t.fingerprint(leaf0), now);
  ASSERT_TRUE(t.Resume(2));
  EXPECT_EQ(t.fingerprint(leaf0), now);
  // A drained node's free GPUs are not free.
  ASSERT_TRUE(t.SetNodeState(t.find_node("leaf0-n1"), NodeState::kDrain));
  EXPECT_NE(t.fingerprint(leaf0), now);
  ASSERT_TRUE(t.SetNodeState(t.find_node("leaf0-n1"), NodeState::kUp));
  EXPECT_EQ(t.fingerprint(leaf0), now);
  EXPECT_EQ(t.CheckInvariants(), "");
}

TEST(Topology, VersionCountsChangesThatStayAndWhatIfsWhileInForce) {
  Topology t = Build(TwoTier(1, 2));
  const uint64_t v0 = t.version();
  EXPECT_TRUE(t.no_what_if());
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(1)}, 10));
  const uint64_t v1 = t.version();
  EXPECT_NE(v1, v0);
  ASSERT_FALSE(t.Allocate(2, std::vector<GpuId>{GpuId(1)}, 0));  // refused: GPU 1 is busy
  ASSERT_FALSE(t.Release(42));
  EXPECT_EQ(t.version(), v1);

  ASSERT_TRUE(t.Hold(std::vector<GpuId>{GpuId(4), GpuId(5)}));
  EXPECT_FALSE(t.no_what_if());
  ASSERT_TRUE(t.Suspend(1));
  ASSERT_TRUE(t.Unhold(std::vector<GpuId>{GpuId(4), GpuId(5)}));
  EXPECT_FALSE(t.no_what_if());  // job 1 is still suspended
  ASSERT_TRUE(t.Resume(1));
  EXPECT_TRUE(t.no_what_if());
  EXPECT_EQ(t.version(), v1);  // what-ifs undone: the same state as before them

  ASSERT_TRUE(t.Release(1));
  const uint64_t v2 = t.version();
  EXPECT_NE(v2, v1);
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(1)}, 10));
  EXPECT_NE(t.version(), v1);  // the same allocation again is a new number: versions never repeat
  EXPECT_NE(t.version(), v2);
  const uint64_t v3 = t.version();
  const uint64_t frees = t.frees();
  ASSERT_TRUE(t.SetNodeState(t.find_node("leaf0-n1"), NodeState::kDrain));
  EXPECT_NE(t.version(), v3);
  EXPECT_EQ(t.frees(), frees);  // a drain frees nothing
  ASSERT_TRUE(t.SetNodeState(t.find_node("leaf0-n1"), NodeState::kUp));
  EXPECT_EQ(t.frees(), frees + 1);  // its GPUs are free again
  ASSERT_TRUE(t.Allocate(3, std::vector<GpuId>{GpuId(8)}, 0));
  EXPECT_EQ(t.frees(), frees + 1);
  ASSERT_TRUE(t.Release(3));
  EXPECT_EQ(t.frees(), frees + 2);
}

// A job suspended with SuspendJob is resumed from what it returned, as Resume(id) would.
TEST(Topology, ResumeFromTheSuspensionAsById) {
  Topology t = Build(TwoTier(1, 2));
  ASSERT_TRUE(t.Allocate(1, std::vector<GpuId>{GpuId(0), GpuId(9)}, 10));
  const Topology::Fingerprint before = t.fingerprint(t.root());
  const uint32_t free = t.free_gpus(t.root());
  EXPECT_FALSE(t.SuspendJob(2));  // no such job
  std::optional<Topology::Suspended> s = t.SuspendJob(1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->job(), 1u);
  EXPECT_FALSE(t.SuspendJob(1));  // already suspended
  EXPECT_EQ(t.free_gpus(t.root()), free + 2);
  EXPECT_TRUE(t.job_gpus(1).empty());
  // A GPU taken while it was suspended: refused, nothing changed.
  ASSERT_TRUE(t.Hold(std::vector<GpuId>{GpuId(9)}));
  EXPECT_FALSE(t.Resume(*s));
  ASSERT_TRUE(t.Unhold(std::vector<GpuId>{GpuId(9)}));
  ASSERT_TRUE(t.Resume(*s));
  EXPECT_FALSE(t.Resume(*s));  // not suspended any more
  EXPECT_EQ(t.free_gpus(t.root()), free);
  EXPECT_EQ(t.fingerprint(t.root()), before);
  EXPECT_EQ(t.job_gpus(1).size(), 2u);
  EXPECT_TRUE(t.no_what_if());
  EXPECT_EQ(t.CheckInvariants(), "");
}

// Every counter a search reads, per domain, and the fingerprints: equal when two Topologies are
// in the same state.
std::string StateOf(const Topology& t) {
  std::string out;
  for (uint32_t i = 0; i < t.domain_count(); ++i) {
    const DomainId d(i);
    out += std::to_string(t.free_gpus(d)) + "/" + std::to_string(t.crossing_mbs(d)) + "/" +
           std::to_string(t.crossing_jobs(d)) + "/" + std::to_string(t.fingerprint(d).a) + "/" +
           std::to_string(t.fingerprint(d).b) + ":";
    for (uint32_t f = 0; f <= t.max_gpus_per_node(); ++f) out += std::to_string(t.nodes_with_free(d, f)) + ",";
    out += ";";
  }
  for (uint32_t g = 0; g < t.gpu_count(); ++g) out += t.is_free(GpuId(g)) ? "f" : "b";
  return out;
}

TEST(Topology, SuspendsAndResumesManyAsOneByOne) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; ++round) {
    Topology one = Build(TwoTier(2, 3));  // 2 leaves x 3 nodes x 8 GPUs
    // Jobs on random GPUs, some across nodes and leaves (a ring with crossed domains).
    const std::vector<std::vector<GpuId>> gpus_of = AllocateRandomJobs(one, rng, 4, 8);  // by id - 1
    std::vector<JobId> ids(gpus_of.size());
    std::iota(ids.begin(), ids.end(), JobId{1});
    (void)one.fingerprint(one.root());  // the prints kept from here on
    Topology many = one;
    // A random subset, with an unknown job and one listed twice.
    std::vector<JobId> chosen;
    for (JobId id : ids) {
      if (rng() % 2) chosen.push_back(id);
    }
    chosen.push_back(ids.size() + 10);
    if (!chosen.empty()) chosen.push_back(chosen.front());
    std::vector<Topology::Suspended> by_one, by_many;
    for (JobId id : chosen) {
      if (auto s = one.SuspendJob(id)) by_one.push_back(*s);
    }
    std::vector<GpuId> none;
    many.SuspendJobsAndHold(chosen, by_many, {}, none);  // nothing wanted
    EXPECT_TRUE(none.empty());
    ASSERT_EQ(by_one.size(), by_many.size());
    for (size_t i = 0; i < by_one.size(); ++i) EXPECT_EQ(by_one[i].job(), by_many[i].job());
    EXPECT_EQ(StateOf(one), StateOf(many));
    EXPECT_EQ(one.CheckInvariants(), "");
    EXPECT_EQ(many.CheckInvariants(), "");
    // A GPU of one suspended job taken meanwhile: that job is refused, the others resume.
    std::vector<GpuId> taken;
    size_t victim = by_one.size();
    if (!by_one.empty() && rng() % 4 != 0) {
      victim = rng() % by_one.size();
      taken.push_back(gpus_of[by_one[victim].job() - 1].back());
      ASSERT_TRUE(one.Hold(taken));
      ASSERT_TRUE(many.Hold(taken));
    }
    size_t refused_one = 0;
    for (auto it = by_one.rbegin(); it != by_one.rend(); ++it) refused_one += !one.Resume(*it);
    EXPECT_EQ(refused_one, victim < by_one.size() ? 1u : 0u);
    EXPECT_EQ(many.ResumeJobs(by_many), refused_one);
    EXPECT_EQ(StateOf(one), StateOf(many));
    EXPECT_EQ(many.CheckInvariants(), "");
    if (victim < by_one.size()) {  // the refused one stays suspended; it resumes once given back
      EXPECT_FALSE(many.no_what_if());
      ASSERT_TRUE(many.Unhold(taken));
      ASSERT_TRUE(many.Resume(by_many[victim]));
      ASSERT_TRUE(one.Unhold(taken));
      ASSERT_TRUE(one.Resume(by_one[victim]));
      EXPECT_EQ(StateOf(one), StateOf(many));
    }
    EXPECT_TRUE(many.no_what_if());
  }
}

TEST(Topology, ReleasesAndHoldsAtOnceAsOneAfterTheOther) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 40; ++round) {
    Topology one = Build(TwoTier(2, 3));
    std::vector<JobId> ids(AllocateRandomJobs(one, rng, rng() % 6, 8).size());  // a few GPUs left free
    std::iota(ids.begin(), ids.end(), JobId{1});
    (void)one.fingerprint(one.root());
    Topology both = one;
    std::vector<JobId> chosen;
    for (JobId id : ids) {
      if (rng() % 2) chosen.push_back(id);
    }
    // Wanted: a random set of GPUs (some free now, some released, some still busy).
    std::vector<GpuId> want;
    for (uint32_t g = 0; g < one.gpu_count(); ++g) {
      if (rng() % 3 == 0) want.push_back(GpuId(g));
    }
    std::vector<Topology::Suspended> by_one, by_both;
    for (JobId id : chosen) {
      if (auto s = one.SuspendJob(id)) by_one.push_back(*s);
    }
    std::vector<GpuId> held_one, held_both;
    for (GpuId g : want) {
      if (one.is_free(g)) held_one.push_back(g);
    }
    ASSERT_TRUE(one.Hold(held_one));
    both.SuspendJobsAndHold(chosen, by_both, want, held_both);
    EXPECT_EQ(held_one, held_both);
    ASSERT_EQ(by_one.size(), by_both.size());
    EXPECT_EQ(StateOf(one), StateOf(both));
    EXPECT_EQ(both.held_gpus(), held_one.size());
    EXPECT_EQ(both.CheckInvariants(), "");
    // Given back: refused while a GPU listed is not held, then as Unhold and each Resume.
    if (!held_both.empty()) {
      std::vector<GpuId> wrong = held_both;
      for (uint32_t g = 0; g < both.gpu_count(); ++g) {
        if (both.owner(GpuId(g)) != Topology::kHeld) {
          wrong.push_back(GpuId(g));
          break;
        }
      }
      const std::string before = StateOf(both);
      EXPECT_FALSE(both.UnholdAndResume(wrong, by_both));
      EXPECT_EQ(StateOf(both), before);
      std::vector<GpuId> twice = held_both;  // one GPU listed twice
      twice.push_back(held_both[rng() % held_both.size()]);
      EXPECT_FALSE(both.UnholdAndResume(twice, by_both));
      EXPECT_EQ(StateOf(both), before);
      EXPECT_EQ(both.held_gpus(), held_one.size());
    }
    ASSERT_TRUE(one.Unhold(held_one));
    size_t refused = 0;
    for (auto it = by_one.rbegin(); it != by_one.rend(); ++it) refused += !one.Resume(*it);
    EXPECT_EQ(both.UnholdAndResume(held_both, by_both), std::optional<size_t>(refused));
    EXPECT_EQ(StateOf(one), StateOf(both));
    EXPECT_TRUE(both.no_what_if());
    EXPECT_EQ(both.CheckInvariants(), "");
  }
}

TEST(Topology, BuildErrorsNameThePlace) {
  TopologySpec dup = TwoTier(1, 2);
  dup.nodes.push_back(NodeSpec{"leaf0-n1", "leaf0", 0, "conf:9"});
  EXPECT_EQ(BuildError(dup), "conf:9: duplicate node 'leaf0-n1' (first at t:3)");

  TopologySpec unknown = TwoTier(1, 1);
  unknown.nodes.push_back(NodeSpec{"x", "nope", 0, "conf:4"});
  EXPECT_EQ(BuildError(unknown), "conf:4: node 'x' is under unknown switch 'nope'");

  TopologySpec cycle = TwoTier(1, 1);
  cycle.switches.push_back(SwitchSpec{"a", Level::kSpine, "b", {}, 1.0, false, "conf:5"});
  cycle.switches.push_back(SwitchSpec{"b", Level::kSpine, "a", {}, 1.0, false, "conf:6"});
  EXPECT_NE(BuildError(cycle).find("cycle"), std::string::npos);

  TopologySpec inverted = TwoTier(1, 1);
  inverted.switches.push_back(SwitchSpec{"top", Level::kLeaf, "", {}, 1.0, false, "conf:7"});
  inverted.switches[0].parent = "top";
  EXPECT_NE(BuildError(inverted).find("levels must grow upwards"), std::string::npos);

  TopologySpec oversub = TwoTier(1, 1);
  oversub.switches[1].oversubscription = 0.5;
  EXPECT_NE(BuildError(oversub).find("oversubscription must be >= 1"), std::string::npos);

  TopologySpec no_nic = TwoTier(1, 1);
  no_nic.models[0].nics = 0;
  EXPECT_NE(BuildError(no_nic).find("has no NIC"), std::string::npos);

  TopologySpec twice = TwoTier(1, 1);
  twice.models[0].groups[0].gpus.push_back(3);
  EXPECT_NE(BuildError(twice).find("GPU 3 is in two groups"), std::string::npos);

  TopologySpec empty;
  empty.name = "x.yaml";
  EXPECT_EQ(BuildError(empty), "x.yaml: no nodes");
}

TEST(Topology, DisconnectedTreesGetASyntheticRoot) {
  TopologySpec spec = TwoTier(1, 1);
  spec.switches.push_back(SwitchSpec{"island", Level::kLeaf, "", {}, 1.0, false, "t:9"});
  spec.nodes.push_back(NodeSpec{"island-n0", "island", 0, "t:10"});
  Topology t = Build(spec);
  EXPECT_EQ(t.domain(t.root()).name, "cluster");
  EXPECT_EQ(t.domain(t.root()).kind, "disconnected");
  EXPECT_EQ(t.gpu_count(), 16u);
}

TEST(Topology, NonContiguousGroupsKeepRealLocalIndices) {
  NodeModel m;
  m.name = "odd";
  m.gpus = 4;
  GroupSpec a{"nvlink", {0, 2}, {}, 50, LinkType::kNvlink, {32, 0, 0, LinkType::kPcie}, -1};
  GroupSpec b{"nvlink", {1, 3}, {}, 50, LinkType::kNvlink, {32, 0, 0, LinkType::kPcie}, -1};
  m.groups = {a, b};
  TopologySpec spec;
  spec.models.push_back(m);
  spec.nodes.push_back(NodeSpec{"box", "", 0, "t:1"});
  Topology t = Build(spec);
  EXPECT_EQ(t.local_index(GpuId(1)), 2u);
  EXPECT_EQ(t.domain(t.gpu_domain(GpuId(1))).name, "box/gpu2");
  EXPECT_EQ(t.node_gpu(NodeId(0), 1), GpuId(2));
}

// Topology::Build checks the limits of core/topology/limits.h before allocating per node or GPU.
TEST(Topology, BuildRefusesSpecsOverTheSizeLimits) {
  NodeModel nine;  // 9 GPUs: 65,536 such nodes are over the GPU limit
  nine.name = "nine";
  nine.gpus = 9;
  nine.gpu_link_gbs = 100;
  TopologySpec spec;
  spec.name = "big";
  spec.models.push_back(nine);
  for (int i = 0; i < 65537; ++i) spec.nodes.push_back(NodeSpec{"n" + std::to_string(i), "", 0, "t"});
  EXPECT_EQ(BuildError(spec), "big: 65537 nodes: more than the limit of 65536");
  spec.nodes.pop_back();
  EXPECT_EQ(BuildError(spec), "big: 589824 GPUs: more than the limit of 524288");
  spec.nodes.resize(58254);  // 524,286 GPUs
  for (int i = 0; i < 131073; ++i) {
    SwitchSpec sw;
    sw.name = "s" + std::to_string(i);
    spec.switches.push_back(std::move(sw));
  }
  EXPECT_EQ(BuildError(spec), "big: 131073 switches: more than the limit of 131072");
  NodeModel huge = nine;
  huge.gpus = 1025;
  TopologySpec one;
  one.models.push_back(huge);
  one.nodes.push_back(NodeSpec{"n", "", 0, "t"});
  EXPECT_EQ(BuildError(one), "node model 'nine': 1025 GPUs: more than the limit of 1024");
}

}  // namespace
}  // namespace phalanx
