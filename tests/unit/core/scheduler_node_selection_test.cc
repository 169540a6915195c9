// Slurm's --begin, -w/--nodelist, -x/--exclude and -C/--constraint in the core: checked at
// Submit against the topology, and honoured by starting, reserving and growing.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"
#include "util/constraint.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::TwoTier;

// 2 leaves x 2 nodes: leaf0-n0, leaf0-n1 (dgx-h100, 8 GPUs), leaf1-n0, leaf1-n1 (hgx-a100, 8).
std::unique_ptr<Scheduler> TwoModels() {
  TopologySpec spec = TwoTier(2, 2);
  spec.models.push_back(*BuiltinNodeModel("hgx-a100"));
  for (NodeSpec& n : spec.nodes) {
    if (n.parent == "leaf1") n.model = 1;
  }
  SchedulerConfig config;
  config.weights.fairshare = 0;
  auto s = Scheduler::Create(Build(spec), config);
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

JobSpec NodeSelJob(JobId id, uint32_t gpus) {
  JobSpec j;
  j.id = id;
  j.user = "alice";
  j.shape.gpus = gpus;
  j.walltime = 1000;
  return j;
}

std::set<std::string> Nodes(const Scheduler& s, JobId id) {
  std::set<std::string> out;
  const Topology& t = s.topology();
  for (GpuId g : s.job(id)->gpus) out.insert(t.domain(t.node_domain(t.node_of(g))).name);
  return out;
}

TEST(NodeSelection, NodelistPlacesOnlyOnTheListedNodes) {
  auto s = TwoModels();
  JobSpec j = NodeSelJob(1, 8);
  j.nodelist = {"leaf1-n1"};
  ASSERT_TRUE(s->Submit(j, 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf1-n1"}));
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(NodeSelection, ExcludeKeepsTheJobOffThoseNodes) {
  auto s = TwoModels();
  JobSpec j = NodeSelJob(1, 16);
  j.exclude = {"leaf0-n0", "leaf0-n1"};
  ASSERT_TRUE(s->Submit(j, 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf1-n0", "leaf1-n1"}));
}

TEST(NodeSelection, ConstraintMatchesTheModelsWords) {
  auto s = TwoModels();
  JobSpec a = NodeSelJob(1, 8);
  a.constraint = "a100";
  JobSpec h = NodeSelJob(2, 16);
  h.constraint = "h100|v100";
  JobSpec both = NodeSelJob(3, 8);
  both.constraint = "hgx&a100";
  ASSERT_TRUE(s->Submit(a, 0));
  ASSERT_TRUE(s->Submit(h, 0));
  ASSERT_TRUE(s->Submit(both, 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  ASSERT_EQ(s->job(3)->state, JobState::kRunning);
  for (const std::string& n : Nodes(*s, 1)) EXPECT_TRUE(n.starts_with("leaf1")) << n;
  EXPECT_EQ(Nodes(*s, 2), (std::set<std::string>{"leaf0-n0", "leaf0-n1"}));
  for (const std::string& n : Nodes(*s, 3)) EXPECT_TRUE(n.starts_with("leaf1")) << n;
}

TEST(NodeSelection, AJobWaitsForItsNodesEvenWhenOthersAreFree) {
  auto s = TwoModels();
  JobSpec blocker = NodeSelJob(1, 8);
  blocker.nodelist = {"leaf0-n0"};
  ASSERT_TRUE(s->Submit(blocker, 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  JobSpec j = NodeSelJob(2, 8);
  j.nodelist = {"leaf0-n0"};
  ASSERT_TRUE(s->Submit(j, 1));
  s->Schedule(1);
  EXPECT_EQ(s->job(2)->state, JobState::kPending);  // 24 GPUs are free, but not on leaf0-n0
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kResources);
  EXPECT_EQ(s->job(2)->wait.predicted_start, 1000);  // the reservation is on its node
  ASSERT_TRUE(s->JobEnded(1, 500, true));
  s->Schedule(500);
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  EXPECT_EQ(Nodes(*s, 2), (std::set<std::string>{"leaf0-n0"}));
}

TEST(NodeSelection, TooFewAllowedGpusIsUnsatisfiable) {
  auto s = TwoModels();
  JobSpec j = NodeSelJob(1, 16);
  j.nodelist = {"leaf0-n0"};
  ASSERT_TRUE(s->Submit(j, 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(1)->wait.kind, WaitKind::kUnsatisfiable);
  EXPECT_NE(s->job(1)->wait.detail.find("have 8 GPUs, it needs 16"), std::string::npos) << s->job(1)->wait.detail;
}

TEST(NodeSelection, BadSelectionsAreRefusedNamingWhat) {
  auto s = TwoModels();
  JobSpec j = NodeSelJob(1, 8);
  j.nodelist = {"leaf9-n0"};
  auto st = s->Submit(j, 0);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().ToString(), "job 1: nodelist: no node 'leaf9-n0' in this cluster");
  j.nodelist.clear();
  j.exclude = {"nope"};
  st = s->Submit(j, 0);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().ToString(), "job 1: exclude: no node 'nope' in this cluster");
  j.exclude.clear();
  j.constraint = "b200";
  st = s->Submit(j, 0);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("no node of this cluster is allowed by constraint=b200"), std::string::npos)
      << st.error().ToString();
  j.constraint = {};
  j.begin = -5;
  st = s->Submit(j, 0);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().ToString(), "job 1: begin: negative (-5)");
  j.begin = 0;
  j.constraint = "h100&(x)";
  st = s->ValidateSpec(j);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("'(' at position 6 is not supported"), std::string::npos) << st.error().ToString();
}

TEST(NodeSelection, BeginTimeHoldsTheJobUntilThen) {
  auto s = TwoModels();
  JobSpec j = NodeSelJob(1, 8);
  j.begin = 3600;
  ASSERT_TRUE(s->Submit(j, 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(1)->state, JobState::kPending);
  EXPECT_EQ(s->job(1)->wait.kind, WaitKind::kBeginTime);
  EXPECT_EQ(s->job(1)->wait.predicted_start, 3600);
  s->Schedule(3599);
  EXPECT_EQ(s->job(1)->state, JobState::kPending);
  s->Schedule(3600);
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
}

TEST(NodeSelection, RestoreKeepsTheSelection) {
  auto s = TwoModels();
  JobRecord r;
  r.spec = NodeSelJob(1, 8);
  r.spec.exclude = {"leaf0-n0", "leaf0-n1", "leaf1-n0"};
  r.walltime = 1000;
  ASSERT_TRUE(s->Restore(r, 0));
  JobRecord gone;
  gone.spec = NodeSelJob(2, 8);
  gone.spec.nodelist = {"removed-node"};  // no longer in the topology: waits, says why
  gone.walltime = 1000;
  ASSERT_TRUE(s->Restore(gone, 0));
  ASSERT_TRUE(s->FinishRestore(0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf1-n1"}));
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kUnsatisfiable);
}

// --no-requeue: a node failure ends the job instead of requeueing it; the default requeues.
TEST(NodeSelection, NoRequeueEndsTheJobOnANodeFailure) {
  auto s = TwoModels();
  JobSpec keep = NodeSelJob(1, 8);
  keep.nodelist = {"leaf0-n0"};
  JobSpec once = NodeSelJob(2, 8);
  once.nodelist = {"leaf0-n1"};
  once.no_requeue = true;
  ASSERT_TRUE(s->Submit(keep, 0));
  ASSERT_TRUE(s->Submit(once, 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  ASSERT_TRUE(s->SetNodeState("leaf0-n0", NodeState::kDown, 10));
  ASSERT_TRUE(s->SetNodeState("leaf0-n1", NodeState::kDown, 10));
  const std::vector<Decision> ds = s->Schedule(10);
  EXPECT_EQ(s->job(1)->state, JobState::kPending);
  EXPECT_EQ(s->job(2)->state, JobState::kKilled);
  bool killed = false;
  for (const Decision& d : ds)
    killed |= d.kind == DecisionKind::kKill && d.job == 2 && d.reason == "node leaf0-n1 down (no-requeue)";
  EXPECT_TRUE(killed);
  EXPECT_TRUE(s->topology().job_gpus(2).empty());
  EXPECT_EQ(s->CheckInvariants(), "");
}

// A job whose processes vanished without an exit (a launch its node never got, a node that came
// back without it) is requeued as on a node failure; under --no-requeue it ends Killed.
TEST(JobLost, RequeuedAsOnANodeFailureOrKilledUnderNoRequeue) {
  auto s = TwoModels();
  JobSpec again = NodeSelJob(1, 8);
  JobSpec once = NodeSelJob(2, 8);
  once.no_requeue = true;
  ASSERT_TRUE(s->Submit(again, 0));
  ASSERT_TRUE(s->Submit(once, 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  const std::string why = "lost: the agent on leaf0-n0 registered without it";
  ASSERT_TRUE(s->JobLost(1, 10, why));
  ASSERT_TRUE(s->JobLost(2, 10, why));
  EXPECT_EQ(s->job(1)->state, JobState::kPending);
  EXPECT_EQ(s->job(2)->state, JobState::kKilled);
  EXPECT_TRUE(s->topology().job_gpus(2).empty());
  const std::vector<Decision> ds = s->Schedule(10);
  bool requeued = false, killed = false, restarted = false;
  for (const Decision& d : ds) {
    requeued |= d.kind == DecisionKind::kPreempt && d.job == 1 && d.requeue && d.reason == why;
    killed |= d.kind == DecisionKind::kKill && d.job == 2 && d.reason == why + " (no-requeue)";
    restarted |= d.kind == DecisionKind::kStart && d.job == 1;
  }
  EXPECT_TRUE(requeued);
  EXPECT_TRUE(killed);
  EXPECT_TRUE(restarted) << "the requeued job starts again on the free GPUs";
  EXPECT_EQ(s->CheckInvariants(), "");
  // Only a job that holds GPUs can be lost.
  EXPECT_EQ(s->JobLost(2, 11, why).error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(s->JobLost(99, 11, why).error().code, ErrorCode::kNotFound);
}

TEST(Constraint, ParseAndMatch) {
  auto c = ParseConstraint(" h100&nvlink | a100 ", "C");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->ToString(), "h100&nvlink|a100");
  EXPECT_TRUE(c->Matches({"h100", "nvlink"}));
  EXPECT_TRUE(c->Matches({"a100"}));
  EXPECT_FALSE(c->Matches({"h100"}));
  EXPECT_TRUE(ParseConstraint("", "C")->empty());
  EXPECT_EQ(ParseConstraint("a&&b", "C").error().ToString(),
            "C: 'a&&b': an empty feature at position 3 (FEATURE, A&B or A|B)");
  EXPECT_FALSE(ParseConstraint("a|", "C"));
  EXPECT_FALSE(ParseConstraint("h100 a100", "C"));
  EXPECT_FALSE(ParseConstraint("[a|b]", "C"));
  EXPECT_FALSE(ParseConstraint("a*2", "C"));
  EXPECT_EQ(ModelFeatures("DGX-H100"), (std::vector<std::string>{"dgx-h100", "dgx", "h100"}));
  EXPECT_EQ(ModelFeatures("l40s"), (std::vector<std::string>{"l40s"}));
}

}  // namespace
}  // namespace phalanx
