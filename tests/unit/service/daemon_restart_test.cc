// Restart: stop phalanxd, start a new one on the same store file. Pending and running jobs
// come back as they were; nodes with running jobs wait (drained) for their agents; agents
// re-register and reconcile: a part the daemon knows is adopted, an unknown one is killed, a
// part the agent no longer has fails its job. A changed topology under running jobs is refused.
#include "daemon_harness.h"

namespace phalanx::service::testing {
namespace {

v1::NodeState NodeStateOf(Harness& h, const std::string& node) {
  grpc::ClientContext ctx;
  v1::ListNodesRequest req;
  v1::ListNodesResponse resp;
  (void)h.cluster->ListNodes(&ctx, req, &resp);
  for (const auto& n : resp.nodes()) {
    if (n.name() == node) return n.state();
  }
  return v1::NODE_STATE_UNSPECIFIED;
}

TEST(DaemonRestart, JobsComeBackAndAgentsReconcile) {
  Harness h;
  h.Start();
  std::vector<std::unique_ptr<FakeAgent>> agents;
  for (int n = 0; n < 4; ++n) {
    agents.push_back(std::make_unique<FakeAgent>(h.AgentTarget(), "node" + std::to_string(n)));
    ASSERT_TRUE(agents.back()->Join());
  }
  ASSERT_TRUE(WaitFor([&] { return NodeStateOf(h, "node3") == v1::NODE_STATE_UP; }));
  v1::JobSpec one = Harness::Spec(0, "a");
  one.set_nodes(1);
  one.set_gpus_per_node(8);
  const uint64_t a = h.SubmitOk(one);
  one.set_name("c");
  const uint64_t c = h.SubmitOk(one);
  v1::JobSpec held = Harness::Spec(4, "b");
  held.set_hold(true);
  const uint64_t b = h.SubmitOk(held);
  // Where a and c run, and their launch ids.
  std::map<uint64_t, std::pair<FakeAgent*, v1::LaunchCommand>> where;
  ASSERT_TRUE(WaitFor([&] {
    for (auto& ag : agents) {
      for (const auto& cmd : ag->Commands()) {
        if (cmd.has_launch()) where[cmd.launch().job_id()] = {ag.get(), cmd.launch()};
      }
    }
    return where.contains(a) && where.contains(c);
  }));
  FakeAgent* agent_a = where[a].first;
  FakeAgent* agent_c = where[c].first;
  ASSERT_NE(agent_a, agent_c);

  // Stop the daemon; the agents' streams break.
  h.Stop();
  for (auto& ag : agents) ag->Disconnect();

  // A different topology with jobs holding GPUs: refused, naming the way out.
  h.clock.Advance(10);
  {
    DaemonConfig other = h.config;
    other.topology = "gen:leafspine:4:2";
    Daemon::Options o;
    o.clock = &h.clock;
    auto d = Daemon::Start(other, o);
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().ToString().find("the topology changed"), std::string::npos) << d.error().ToString();
    EXPECT_NE(d.error().ToString().find("--force-topology"), std::string::npos) << d.error().ToString();
  }

  h.Start();
  EXPECT_EQ(h.State(a), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(h.State(c), v1::JOB_STATE_RUNNING);
  v1::Job jb = h.Get(b);
  EXPECT_EQ(jb.state(), v1::JOB_STATE_PENDING);
  EXPECT_TRUE(jb.held());
  EXPECT_EQ(h.Get(a, true).spec().env().at("SECRET"), "xyzzy") << "launch info survives";
  // Nodes with running jobs wait for their agents (no new work); the others are down.
  EXPECT_EQ(NodeStateOf(h, agent_a->node()), v1::NODE_STATE_DRAIN);
  EXPECT_EQ(NodeStateOf(h, agent_c->node()), v1::NODE_STATE_DRAIN);

  // a's agent still runs a (and a job the daemon never heard of); c's agent lost c.
  FakeAgent again_a(h.AgentTarget(), agent_a->node());
  v1::RunningPart pa;
  pa.set_job_id(a);
  pa.set_launch_id(where[a].second.launch_id());
  pa.set_pid(100);
  v1::RunningPart stray;
  stray.set_job_id(999);
  stray.set_launch_id(5);
  v1::RegisterResponse resp;
  ASSERT_TRUE(again_a.Register({pa, stray}, &resp).ok());
  ASSERT_EQ(resp.kill_jobs_size(), 1);
  EXPECT_EQ(resp.kill_jobs(0), 999u);
  ASSERT_TRUE(again_a.Connect());
  // A stale launch of a, still dying there: only that launch is stopped.
  v1::AgentReport hb;
  *hb.mutable_heartbeat()->add_running() = pa;
  v1::RunningPart old = pa;
  old.set_launch_id(pa.launch_id() + 1000);
  *hb.mutable_heartbeat()->add_running() = old;
  ASSERT_TRUE(again_a.Report(hb));
  ASSERT_TRUE(again_a.WaitKill(a));
  for (const auto& cmd : again_a.Commands()) {
    if (cmd.has_kill()) {
      EXPECT_EQ(cmd.kill().launch_id(), old.launch_id());
    }
  }
  FakeAgent again_c(h.AgentTarget(), agent_c->node());
  ASSERT_TRUE(again_c.Join());
  ASSERT_TRUE(h.WaitState(c, v1::JOB_STATE_FAILED));
  EXPECT_EQ(h.State(a), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(NodeStateOf(h, agent_a->node()), v1::NODE_STATE_UP);
  // a's part ends normally: completed.
  ASSERT_TRUE(again_a.Exit(a, where[a].second.launch_id(), 0));
  ASSERT_TRUE(h.WaitState(a, v1::JOB_STATE_COMPLETED));
  // Ids continue after the recovered ones.
  EXPECT_GT(h.SubmitOk(Harness::Spec(1)), b);
}

// --force-topology: the running job's GPU indices are void on the new cluster; it is requeued
// (pending, a preemption more) and what still runs of it is killed when the agents come back.
TEST(DaemonRestart, ForcedTopologyChangeRequeuesRunningJobs) {
  Harness h;
  h.Start();
  FakeAgent agent(h.AgentTarget(), "node0");
  ASSERT_TRUE(agent.Join());
  const uint64_t id = h.SubmitOk(Harness::Spec(8, "was-running"));
  auto launch = agent.WaitLaunch(id);
  ASSERT_TRUE(launch);
  h.Stop();
  agent.Disconnect();
  h.clock.Advance(5);
  h.config.topology = "gen:leafspine:4:2";  // node000..node003
  h.config.force_topology = true;
  h.Start();
  v1::Job job = h.Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.preemptions(), 1u);
  EXPECT_EQ(job.gpus_size(), 0);
  // An agent of the new cluster that still runs the old part: it is told to kill it, and the
  // job starts again under a new launch.
  FakeAgent fresh(h.AgentTarget(), "node000");
  v1::RunningPart old;
  old.set_job_id(id);
  old.set_launch_id(launch->launch_id());
  v1::RegisterResponse resp;
  ASSERT_TRUE(fresh.Register({old}, &resp).ok());
  ASSERT_EQ(resp.kill_jobs_size(), 1);
  EXPECT_EQ(resp.kill_jobs(0), id);
  ASSERT_TRUE(fresh.Connect());
  auto again = fresh.WaitLaunch(id);
  ASSERT_TRUE(again);
  EXPECT_NE(again->launch_id(), launch->launch_id());
}

}  // namespace
}  // namespace phalanx::service::testing
