// Restart: stop phalanxd, start a new one on the same store file. Pending and running jobs
// come back as they were; nodes with running jobs wait (drained) for their agents; agents
// re-register and reconcile: a part the daemon knows is adopted, an unknown one is killed, a
// part the agent no longer has requeues its job (it never ended by itself). A changed topology
// under running jobs is refused.
#include <map>

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

// Agents for node0..node{count-1} of `h`, joined, into `agents`; returns once every one is UP.
void JoinAgents(Harness& h, int count, std::vector<std::unique_ptr<FakeAgent>>& agents) {
  for (int n = 0; n < count; ++n) {
    agents.push_back(std::make_unique<FakeAgent>(h.AgentTarget(), "node" + std::to_string(n)));
    ASSERT_TRUE(agents.back()->Join());
  }
  ASSERT_TRUE(WaitFor([&] {
    for (int n = 0; n < count; ++n) {
      if (NodeStateOf(h, "node" + std::to_string(n)) != v1::NODE_STATE_UP) return false;
    }
    return true;
  }));
}

TEST(DaemonRestart, JobsComeBackAndAgentsReconcile) {
  Harness h;
  h.Start();
  std::vector<std::unique_ptr<FakeAgent>> agents;
  ASSERT_NO_FATAL_FAILURE(JoinAgents(h, 4, agents));
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
  // c never ended by itself (its launch lost in the restart, or with the agent's state): it is
  // requeued, as on a node failure, and launched again (the only free 8 GPUs: c's node).
  auto relaunch = again_c.WaitLaunch(c);
  ASSERT_TRUE(relaunch);
  EXPECT_NE(relaunch->launch_id(), where[c].second.launch_id());
  ASSERT_TRUE(h.WaitState(c, v1::JOB_STATE_RUNNING));
  EXPECT_EQ(h.State(a), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(NodeStateOf(h, agent_a->node()), v1::NODE_STATE_UP);
  // a's part ends normally: completed.
  ASSERT_TRUE(again_a.Exit(a, where[a].second.launch_id(), 0));
  ASSERT_TRUE(h.WaitState(a, v1::JOB_STATE_COMPLETED));
  // Ids continue after the recovered ones.
  EXPECT_GT(h.SubmitOk(Harness::Spec(1)), b);
}

// A two-node job whose part one agent does not have after a restart (its launch never reached
// that node: the daemon died between the commit and the send): the job is requeued, never
// failed; its part on the other node is stopped, and it starts again under a new launch.
TEST(DaemonRestart, APartAnAgentNeverGotRequeuesTheJobAndStopsItsOtherPart) {
  Harness h;
  h.Start();
  FakeAgent n0(h.AgentTarget(), "node0"), n1(h.AgentTarget(), "node1");
  ASSERT_TRUE(n0.Join());
  ASSERT_TRUE(n1.Join());
  v1::JobSpec two = Harness::Spec(0, "two");
  two.set_nodes(2);
  two.set_gpus_per_node(8);
  const uint64_t id = h.SubmitOk(two);  // only node0 and node1 have agents: it runs there
  auto first0 = n0.WaitLaunch(id);
  auto first1 = n1.WaitLaunch(id);
  ASSERT_TRUE(first0 && first1);
  ASSERT_EQ(first0->launch_id(), first1->launch_id());
  h.Stop();
  n0.Disconnect();
  n1.Disconnect();

  h.Start();
  FakeAgent again0(h.AgentTarget(), "node0"), again1(h.AgentTarget(), "node1");
  v1::RunningPart part;
  part.set_job_id(id);
  part.set_launch_id(first0->launch_id());
  ASSERT_TRUE(again0.Join({part}));
  ASSERT_TRUE(again1.Join());  // without its part
  ASSERT_TRUE(again0.WaitKill(id)) << "the part that still runs is stopped";
  for (const auto& cmd : again0.Commands()) {
    if (cmd.has_kill() && cmd.kill().job_id() == id) {
      EXPECT_EQ(cmd.kill().launch_id(), first0->launch_id());
    }
  }
  auto next0 = again0.WaitLaunch(id);
  auto next1 = again1.WaitLaunch(id);
  ASSERT_TRUE(next0 && next1) << "requeued, it starts again on both nodes";
  EXPECT_EQ(next0->launch_id(), next1->launch_id());
  EXPECT_NE(next0->launch_id(), first0->launch_id());
  ASSERT_TRUE(h.WaitState(id, v1::JOB_STATE_RUNNING));
}

// A suspended job (phalanx job suspend) is SUSPENDED again after a restart (the store keeps
// it), its walltime clock still stopped; its agent, registering again, is told to suspend it
// again; resumed, its run is extended by the time it was suspended. A topped job keeps its place.
TEST(DaemonRestart, SuspendedJobStaysSuspendedAndItsAgentIsToldAgain) {
  Harness h;
  h.Start();
  FakeAgent agent(h.AgentTarget(), "node0");
  ASSERT_TRUE(agent.Join());
  v1::JobSpec spec = Harness::Spec(8, "paused");
  spec.set_walltime_s(100);
  const uint64_t id = h.SubmitOk(spec);
  auto launch = agent.WaitLaunch(id);
  ASSERT_TRUE(launch);
  ASSERT_TRUE(h.WaitState(id, v1::JOB_STATE_RUNNING));
  const auto suspend = [&](bool resume) {
    grpc::ClientContext ctx;
    v1::SuspendRequest req;
    req.set_job_id(id);
    req.set_resume(resume);
    v1::Job out;
    return h.jobs->Suspend(&ctx, req, &out);
  };
  const auto told = [id](const FakeAgent& a, bool resume) {
    return WaitFor([&] {
      for (const auto& c : a.Commands()) {
        if (c.has_suspend() && c.suspend().job_id() == id && c.suspend().resume() == resume) return true;
      }
      return false;
    });
  };
  ASSERT_TRUE(suspend(false).ok());
  EXPECT_EQ(h.State(id), v1::JOB_STATE_SUSPENDED);
  EXPECT_TRUE(told(agent, false));
  // Two pending jobs (the whole cluster each), the second topped (phalanx job top): also stored.
  const uint64_t p1 = h.SubmitOk(Harness::Spec(32));
  const uint64_t p2 = h.SubmitOk(Harness::Spec(32));
  const auto position = [&](uint64_t job) {
    grpc::ClientContext ctx;
    v1::ExplainPendingRequest req;
    req.set_job_id(job);
    v1::ExplainPendingResponse resp;
    return h.cluster->ExplainPending(&ctx, req, &resp).ok() ? resp.queue_position() : 0u;
  };
  {
    grpc::ClientContext ctx;
    v1::JobRef ref;
    ref.set_job_id(p2);
    v1::Job out;
    ASSERT_TRUE(h.jobs->Top(&ctx, ref, &out).ok());
  }
  ASSERT_TRUE(WaitFor([&] { return position(p2) == 1; })) << position(p2);

  h.Stop();
  agent.Disconnect();
  h.clock.Advance(500);  // five walltimes
  h.Start();
  const v1::Job back = h.Get(id);
  EXPECT_EQ(back.state(), v1::JOB_STATE_SUSPENDED);
  EXPECT_EQ(back.suspend_time(), kT0);
  EXPECT_TRUE(WaitFor([&] { return position(p2) == 1 && position(p1) == 2; })) << "topped before the restart";
  FakeAgent again(h.AgentTarget(), "node0");
  v1::RunningPart part;
  part.set_job_id(id);
  part.set_launch_id(launch->launch_id());
  part.set_pid(100);
  ASSERT_TRUE(again.Join({part}));
  EXPECT_TRUE(told(again, false)) << "the agent that registered again is told to keep it suspended";
  EXPECT_EQ(h.State(id), v1::JOB_STATE_SUSPENDED) << "not killed at its walltime while suspended";

  ASSERT_TRUE(suspend(true).ok());
  EXPECT_TRUE(told(again, true));
  EXPECT_EQ(h.State(id), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(h.Get(id).suspend_time(), 0);
  h.clock.Advance(90);  // 590 s after its start: within its 100 s + 500 s suspended
  ASSERT_TRUE(again.Barrier());
  EXPECT_EQ(h.State(id), v1::JOB_STATE_RUNNING);
}

// order: attained (Tiresias' least attained service first): a job's service lives in the store
// (schema v6), so after a restart a requeued job that ran stays in the queue it reached, behind
// a newer job that has not run, as before the restart. (Without it the requeued job, older and
// back to no service, went first.)
TEST(DaemonRestart, AttainedServiceKeepsTheQueueOrder) {
  Harness h;
  h.config.scheduler.order = QueueOrder::kAttained;
  h.config.scheduler.service_queues = {1000};  // GPU-seconds: queue 1 from 1,000
  h.Start();
  std::vector<std::unique_ptr<FakeAgent>> agents;
  ASSERT_NO_FATAL_FAILURE(JoinAgents(h, 3, agents));
  const uint64_t ran = h.SubmitOk(Harness::Spec(8, "ran"));
  const uint64_t b1 = h.SubmitOk(Harness::Spec(8, "b1"));
  const uint64_t b2 = h.SubmitOk(Harness::Spec(8, "b2"));
  for (uint64_t id : {ran, b1, b2}) ASSERT_TRUE(h.WaitState(id, v1::JOB_STATE_RUNNING)) << id;
  const std::string node = h.Get(ran).nodelist();  // one node: its name
  ASSERT_TRUE(node.starts_with("node") && node.size() == 5) << node;
  // 200 s on 8 GPUs: 1,600 GPU-seconds, queue 1. Then its node goes down: requeued, pending.
  h.clock.Advance(200);
  {
    grpc::ClientContext ctx;
    v1::NodeRequest req;
    req.set_node(node);
    req.set_reason("psu");
    v1::Node out;
    ASSERT_TRUE(h.cluster->DownNode(&ctx, req, &out).ok());
  }
  ASSERT_TRUE(h.WaitState(ran, v1::JOB_STATE_PENDING));
  EXPECT_EQ(h.Get(ran).preemptions(), 1u);
  h.clock.Advance(10);
  const uint64_t fresh = h.SubmitOk(Harness::Spec(8, "fresh"));  // queue 0, newer
  const auto position = [&](uint64_t job) {
    grpc::ClientContext ctx;
    v1::ExplainPendingRequest req;
    req.set_job_id(job);
    v1::ExplainPendingResponse resp;
    return h.cluster->ExplainPending(&ctx, req, &resp).ok() ? resp.queue_position() : 0u;
  };
  ASSERT_TRUE(WaitFor([&] { return position(fresh) == 1 && position(ran) == 2; }))
      << position(fresh) << " " << position(ran);

  h.Stop();
  for (auto& ag : agents) ag->Disconnect();
  h.clock.Advance(10);
  h.Start();
  EXPECT_EQ(h.State(ran), v1::JOB_STATE_PENDING);
  EXPECT_EQ(h.State(fresh), v1::JOB_STATE_PENDING);
  EXPECT_TRUE(WaitFor([&] { return position(fresh) == 1 && position(ran) == 2; }))
      << "after the restart: fresh " << position(fresh) << ", ran " << position(ran);
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

// Finished jobs keep their outcome across a restart: the exit code, how they ended and where
// they last ran are written with their final state (in the launch info), not kept in memory.
// One failed (a part exited 3), one cancelled while running, one killed at its walltime, one
// completed; after the restart GetJob and ListJobs(include_finished) say the same as before.
TEST(DaemonRestart, FinishedJobsKeepExitCodeReasonAndNodelist) {
  std::vector<std::unique_ptr<FakeAgent>> agents;  // destroyed after the daemon
  Harness h;
  h.Start();
  ASSERT_NO_FATAL_FAILURE(JoinAgents(h, 4, agents));
  // Where each part of `job` was launched: (agent, launch id).
  const auto parts = [&](uint64_t job, size_t n) {
    std::vector<std::pair<FakeAgent*, uint64_t>> out;
    WaitFor([&] {
      out.clear();
      for (auto& a : agents) {
        for (const auto& c : a->Commands()) {
          if (c.has_launch() && c.launch().job_id() == job) out.push_back({a.get(), c.launch().launch_id()});
        }
      }
      return out.size() >= n;
    });
    return out;
  };

  v1::JobSpec gang = Harness::Spec(0, "gang");
  gang.set_nodes(2);
  gang.set_gpus_per_node(8);
  const uint64_t failed = h.SubmitOk(gang);
  auto fp = parts(failed, 2);
  ASSERT_EQ(fp.size(), 2u);
  ASSERT_TRUE(fp[0].first->Exit(failed, fp[0].second, 3));
  ASSERT_TRUE(fp[1].first->WaitKill(failed));
  ASSERT_TRUE(fp[1].first->Exit(failed, fp[1].second, -1));
  ASSERT_TRUE(h.WaitState(failed, v1::JOB_STATE_FAILED));

  const uint64_t cancelled = h.SubmitOk(Harness::Spec(8, "cancelled"));
  ASSERT_EQ(parts(cancelled, 1).size(), 1u);
  ASSERT_TRUE(h.Cancel(cancelled).ok());

  const uint64_t completed = h.SubmitOk(Harness::Spec(2, "completed"));
  auto cp = parts(completed, 1);
  ASSERT_EQ(cp.size(), 1u);
  ASSERT_TRUE(cp[0].first->Exit(completed, cp[0].second, 0));
  ASSERT_TRUE(h.WaitState(completed, v1::JOB_STATE_COMPLETED));

  v1::JobSpec short_one = Harness::Spec(4, "walltime");
  short_one.set_walltime_s(60);
  const uint64_t killed = h.SubmitOk(short_one);
  ASSERT_EQ(parts(killed, 1).size(), 1u);
  h.clock.Advance(61);
  ASSERT_TRUE(h.WaitState(killed, v1::JOB_STATE_KILLED));

  const std::vector<uint64_t> ids = {failed, cancelled, completed, killed};
  std::map<uint64_t, v1::Job> before;
  for (uint64_t id : ids) before[id] = h.Get(id);
  const v1::Job& f = before[failed];
  EXPECT_EQ(f.exit_code(), 3);
  EXPECT_EQ(f.reason(), "failed on " + fp[0].first->node());
  EXPECT_EQ(f.gpus_size(), 16);
  EXPECT_EQ(f.nodelist().find("node["), 0u) << f.nodelist();
  EXPECT_EQ(before[cancelled].reason(), "cancelled by root");
  EXPECT_EQ(before[cancelled].gpus_size(), 8);
  EXPECT_FALSE(before[cancelled].nodelist().empty());
  EXPECT_EQ(before[completed].exit_code(), 0);
  EXPECT_EQ(before[completed].reason(), "exit 0");
  EXPECT_EQ(before[completed].nodelist(), cp[0].first->node());
  EXPECT_EQ(before[killed].reason(), "walltime of 60s exceeded");
  EXPECT_EQ(before[killed].gpus_size(), 4);

  h.Stop();
  for (auto& a : agents) a->Disconnect();
  h.clock.Advance(10);
  h.Start();
  for (uint64_t id : ids) {
    const v1::Job after = h.Get(id);
    const v1::Job& was = before[id];
    EXPECT_EQ(after.state(), was.state()) << id;
    EXPECT_EQ(after.exit_code(), was.exit_code()) << id;
    EXPECT_EQ(after.reason(), was.reason()) << id;
    EXPECT_EQ(after.nodelist(), was.nodelist()) << id;
    ASSERT_EQ(after.gpus_size(), was.gpus_size()) << id;
    for (int g = 0; g < after.gpus_size(); ++g) {
      EXPECT_EQ(after.gpus(g).node(), was.gpus(g).node()) << id;
      EXPECT_EQ(after.gpus(g).index(), was.gpus(g).index()) << id;
    }
    EXPECT_EQ(after.spec().command(0), "/bin/true") << id << ": the launch info is still there";
  }
  grpc::ClientContext ctx;
  v1::ListJobsRequest req;
  req.set_include_finished(true);
  v1::ListJobsResponse listed;
  ASSERT_TRUE(h.jobs->List(&ctx, req, &listed).ok());
  size_t seen = 0;
  for (const v1::Job& j : listed.jobs()) {
    if (!before.contains(j.id())) continue;
    ++seen;
    EXPECT_EQ(j.exit_code(), before[j.id()].exit_code()) << j.id();
    EXPECT_EQ(j.reason(), before[j.id()].reason()) << j.id();
    EXPECT_EQ(j.nodelist(), before[j.id()].nodelist()) << j.id();
  }
  EXPECT_EQ(seen, ids.size());
}

// An agent keeps an ended part, lists it in its registration and re-sends its exit until the
// daemon answers ExitStored. After a restart: an exit the store already has (the answer was lost
// with the daemon) is answered again and changes nothing; the exit of a part that ended while
// the daemon was away (or whose commit the daemon did not live to make) completes its job.
TEST(DaemonRestart, ExitsSentAgainAfterARestartAreAnsweredOnce) {
  std::vector<std::unique_ptr<FakeAgent>> agents;  // destroyed after the daemon
  Harness h;
  h.Start();
  ASSERT_NO_FATAL_FAILURE(JoinAgents(h, 4, agents));
  const uint64_t done = h.SubmitOk(Harness::Spec(8, "done"));
  const uint64_t outage = h.SubmitOk(Harness::Spec(8, "outage"));
  std::map<uint64_t, std::pair<FakeAgent*, uint64_t>> where;  // job -> (agent, launch id)
  ASSERT_TRUE(WaitFor([&] {
    for (auto& a : agents) {
      for (const auto& c : a->Commands()) {
        if (c.has_launch()) where[c.launch().job_id()] = {a.get(), c.launch().launch_id()};
      }
    }
    return where.contains(done) && where.contains(outage);
  }));
  ASSERT_TRUE(where[done].first->Exit(done, where[done].second, 0));
  ASSERT_TRUE(where[done].first->WaitExitStored(where[done].second));
  ASSERT_TRUE(h.WaitState(done, v1::JOB_STATE_COMPLETED));
  const v1::Job done_before = h.Get(done);

  h.Stop();
  for (auto& a : agents) a->Disconnect();
  h.clock.Advance(10);
  h.Start();
  // Each agent lists its ended parts (as if `done`'s answer had been lost) and sends the exits.
  std::map<std::string, std::unique_ptr<FakeAgent>> again;
  for (uint64_t job : {done, outage}) {
    const std::string node = where[job].first->node();
    auto& agent = again[node];
    if (!agent) agent = std::make_unique<FakeAgent>(h.AgentTarget(), node);
  }
  for (auto& [node, agent] : again) {
    std::vector<v1::RunningPart> listed;
    for (uint64_t job : {done, outage}) {
      if (where[job].first->node() != node) continue;
      v1::RunningPart p;
      p.set_job_id(job);
      p.set_launch_id(where[job].second);
      p.set_pid(4242);
      listed.push_back(p);
    }
    ASSERT_TRUE(agent->Join(listed)) << node;
  }
  FakeAgent& at_done = *again[where[done].first->node()];
  FakeAgent& at_outage = *again[where[outage].first->node()];
  EXPECT_EQ(h.State(outage), v1::JOB_STATE_RUNNING) << "the listed ended part is not lost";
  ASSERT_TRUE(at_done.Exit(done, where[done].second, 0));
  ASSERT_TRUE(at_outage.Exit(outage, where[outage].second, 0));
  EXPECT_TRUE(at_done.WaitExitStored(where[done].second));
  EXPECT_TRUE(at_outage.WaitExitStored(where[outage].second));
  ASSERT_TRUE(h.WaitState(outage, v1::JOB_STATE_COMPLETED));
  EXPECT_EQ(h.Get(outage).exit_code(), 0);
  ASSERT_TRUE(at_done.Barrier());
  const v1::Job done_after = h.Get(done);
  EXPECT_EQ(done_after.state(), v1::JOB_STATE_COMPLETED);
  EXPECT_EQ(done_after.end_time(), done_before.end_time()) << "the duplicate changed nothing";
  EXPECT_EQ(done_after.reason(), done_before.reason());
  EXPECT_EQ(at_done.ExitsStored(where[done].second), 1u);
  EXPECT_EQ(at_outage.Count([](const v1::DaemonCommand& c) { return c.has_launch(); }), 0u)
      << "nothing is launched again";
}

}  // namespace
}  // namespace phalanx::service::testing

namespace phalanx::service::testing {
namespace {

// Arrays and dependencies live in the store: after a restart the tasks are still the array's
// (gcancel of the array or one task works), their %N and the dependency text are kept, and the
// array size limit (max_array_size) is the config's, with a clear error.
TEST(DaemonRestart, ArrayMembershipAndDependenciesSurviveARestart) {
  Harness h;
  h.config.scheduler.max_array_size = 10;
  h.Start();
  v1::JobSpec arr = Harness::Spec(1, "arr");
  arr.set_array("0-4%2");
  arr.set_hold(true);
  const uint64_t a = h.SubmitOk(arr);
  v1::JobSpec dep = Harness::Spec(1, "dep");
  dep.set_dependency("afterok:" + std::to_string(a) + "_3,afterany:" + std::to_string(a));
  const uint64_t d = h.SubmitOk(dep);
  EXPECT_EQ(d, a + 6) << "the array's id, then its 5 tasks'";
  v1::JobSpec big = Harness::Spec(1, "big");
  big.set_array("0-10");
  uint64_t unused = 0;
  const grpc::Status refused = h.Submit(big, &unused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.error_message(), "spec.array: index 10 is not below the array size limit 10 (MaxArraySize)");
  v1::JobSpec unknown = Harness::Spec(1, "x");
  unknown.set_dependency("afterok:" + std::to_string(a) + "_7");
  EXPECT_EQ(h.Submit(unknown, &unused).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  h.Stop();
  h.clock.Advance(10);
  h.Start();
  for (uint32_t i = 0; i < 5; ++i) {
    const v1::Job t = h.Get(a + 1 + i);
    EXPECT_EQ(t.array_job_id(), a) << i;
    EXPECT_EQ(t.array_task_id(), i);
    EXPECT_EQ(t.spec().array(), "0-4%2");
  }
  EXPECT_EQ(h.Get(d).spec().dependency(), "afterok:" + std::to_string(a) + "_3,afterany:" + std::to_string(a));
  EXPECT_EQ(h.Get(d).reason(), "Dependency");
  // One task, then the whole array, by the array's id.
  {
    grpc::ClientContext ctx;
    v1::CancelRequest req;
    req.set_job_id(a);
    req.set_array_task_id(3);
    v1::CancelResponse resp;
    ASSERT_TRUE(h.jobs->Cancel(&ctx, req, &resp).ok());
    EXPECT_EQ(h.State(a + 4), v1::JOB_STATE_CANCELLED);
    EXPECT_EQ(h.State(a + 1), v1::JOB_STATE_PENDING);
  }
  {
    grpc::ClientContext ctx;
    v1::CancelRequest req;
    req.set_job_id(a);
    v1::CancelResponse resp;
    ASSERT_TRUE(h.jobs->Cancel(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.state(), v1::JOB_STATE_CANCELLED);
    for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(h.State(a + 1 + i), v1::JOB_STATE_CANCELLED) << i;
  }
  // Task 3 cancelled: afterok on it can never be met; the job stays pending.
  ASSERT_TRUE(WaitFor([&] { return h.Get(d).reason() == "DependencyNeverSatisfied"; })) << h.Get(d).ShortDebugString();
  EXPECT_EQ(h.State(d), v1::JOB_STATE_PENDING);
}

}  // namespace
}  // namespace phalanx::service::testing
