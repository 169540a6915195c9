// phalanxd with fake agents over TCP: authentication, gang launches (torchrun fields), exits
// and their ExitStored answers (only once the outcome is committed), first-failure kills,
// checkpoint-based preemption, a broken stream taking its node down, scripts with arguments.
#include <sqlite3.h>

#include <fstream>
#include <sstream>

#include "daemon_harness.h"
#include "service/controller.h"

namespace phalanx::service::testing {
namespace {

// Holds the store file's write lock (another connection's BEGIN IMMEDIATE), so that phalanxd's
// commits wait (its busy timeout is 5 s) until Release.
class StoreWriteLock {
 public:
  explicit StoreWriteLock(const std::string& db) {
    EXPECT_EQ(sqlite3_open(db.c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
  }
  ~StoreWriteLock() { Release(); }
  void Release() {
    if (db_ == nullptr) return;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
  }

 private:
  sqlite3* db_ = nullptr;
};

// The job's state as the store file has it ("" when it has no such job).
std::string StoredState(const std::string& db, uint64_t id) {
  sqlite3* h = nullptr;
  std::string out;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(h, 5000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, "SELECT state FROM jobs WHERE id = ?", -1, &st, nullptr) == SQLITE_OK) {
      sqlite3_bind_int64(st, 1, static_cast<sqlite3_int64>(id));
      if (sqlite3_step(st) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return out;
}

struct Cluster4 {
  std::vector<std::unique_ptr<FakeAgent>> agents;  // destroyed after the daemon
  Harness h;

  void Start() {
    h.Start();
    for (int n = 0; n < 4; ++n) {
      agents.push_back(std::make_unique<FakeAgent>(h.AgentTarget(), "node" + std::to_string(n)));
      ASSERT_TRUE(agents.back()->Join()) << "node" << n;
    }
    ASSERT_TRUE(WaitFor([&] {
      grpc::ClientContext ctx;
      v1::ListNodesRequest req;
      v1::ListNodesResponse resp;
      if (!h.cluster->ListNodes(&ctx, req, &resp).ok()) return false;
      for (const auto& n : resp.nodes()) {
        if (n.state() != v1::NODE_STATE_UP || !n.agent_connected()) return false;
      }
      return resp.nodes_size() == 4;
    }));
  }
  // The agents that got a launch of `job`, with their launch commands.
  std::vector<std::pair<FakeAgent*, v1::LaunchCommand>> Launches(uint64_t job, size_t parts, size_t nth = 0) {
    std::vector<std::pair<FakeAgent*, v1::LaunchCommand>> out;
    WaitFor([&] {
      out.clear();
      for (auto& a : agents) {
        size_t seen = 0;
        for (const auto& c : a->Commands()) {
          if (c.has_launch() && c.launch().job_id() == job && seen++ == nth) out.push_back({a.get(), c.launch()});
        }
      }
      return out.size() >= parts;
    });
    return out;
  }
};

TEST(DaemonAgents, AgentsWithoutTheTokenAreUnauthenticated) {
  Harness h;
  h.Start();
  FakeAgent none(h.AgentTarget(), "node0", "");
  EXPECT_EQ(none.Register().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  FakeAgent wrong(h.AgentTarget(), "node0", "not-the-token");
  auto st = wrong.Register();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(st.error_message(), "invalid agent token");
  // A stream without the token is refused too.
  FakeAgent stream(h.AgentTarget(), "node0", "");
  EXPECT_FALSE(stream.Connect());
  EXPECT_TRUE(WaitFor([&] { return stream.ended(); }));
  FakeAgent stranger(h.AgentTarget(), "node9");
  EXPECT_EQ(stranger.Register().error_code(), grpc::StatusCode::NOT_FOUND);
  FakeAgent good(h.AgentTarget(), "node0");
  EXPECT_TRUE(good.Join());
  // An agent may also skip Register and say hello as the stream's first report.
  FakeAgent direct(h.AgentTarget(), "node1");
  direct.PrepareHello();
  ASSERT_TRUE(direct.Connect());
  for (const auto& cmd : direct.Commands()) {
    if (cmd.has_welcome()) {
      EXPECT_EQ(cmd.welcome().session().size(), 32u);
    }
  }
  // A stream with neither a known session nor a hello is refused.
  FakeAgent nobody(h.AgentTarget(), "node2");
  EXPECT_FALSE(nobody.Connect(false));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Mutual TLS instead of a token: agents with a certificate from the configured CA register;
// a client without one does not get through the handshake.
TEST(DaemonAgents, MutualTlsAuthenticatesAgents) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl to make certificates";
  Harness h;
  const auto f = [&](const char* name) { return h.dir.File(name); };
  { std::ofstream(f("san.ext")) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n"; }
  const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string script =
      "cd " + h.dir.File("") + " && " + "openssl req -x509 " + ec +
      " -keyout ca.key -out ca.crt -days 1 -subj /CN=test-ca && " + "openssl req " + ec +
      " -keyout server.key -out server.csr -subj /CN=localhost && " +
      "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 -extfile "
      "san.ext && " +
      "openssl req " + ec + " -keyout client.key -out client.csr -subj /CN=node0 && " +
      "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 1";
  ASSERT_EQ(std::system((script + " >/dev/null 2>&1").c_str()), 0) << script;
  h.config.agents.token_file.clear();
  h.config.agents.tls_cert = f("server.crt");
  h.config.agents.tls_key = f("server.key");
  h.config.agents.tls_client_ca = f("ca.crt");
  h.Start();
  const std::string target = "127.0.0.1:" + std::to_string(h.daemon->agent_port());  // verified by the IP SAN
  grpc::SslCredentialsOptions with_cert{ReadFile(f("ca.crt")), ReadFile(f("client.key")), ReadFile(f("client.crt"))};
  FakeAgent good(target, "node0", "", grpc::SslCredentials(with_cert));
  ASSERT_TRUE(good.Join());
  grpc::SslCredentialsOptions no_cert{ReadFile(f("ca.crt")), "", ""};
  FakeAgent anonymous(target, "node1", "", grpc::SslCredentials(no_cert));
  auto st = anonymous.Register();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  FakeAgent plain(target, "node1", "");
  EXPECT_EQ(plain.Register().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(DaemonAgents, GangJobLaunchesOnePartPerNodeAndCompletes) {
  Cluster4 c;
  c.Start();
  v1::JobSpec spec = Harness::Spec(0, "gang");
  spec.set_nodes(2);
  spec.set_gpus_per_node(8);
  const uint64_t id = c.h.SubmitOk(spec);
  auto launches = c.Launches(id, 2);
  ASSERT_EQ(launches.size(), 2u);
  std::sort(launches.begin(), launches.end(),
            [](const auto& a, const auto& b) { return a.second.node_rank() < b.second.node_rank(); });
  const v1::LaunchCommand& first = launches[0].second;
  const std::string master = "10.0.0." + launches[0].first->node().substr(4);
  for (uint32_t r = 0; r < 2; ++r) {
    const v1::LaunchCommand& l = launches[r].second;
    EXPECT_EQ(l.node_rank(), r);
    EXPECT_EQ(l.world_size(), 16u);
    EXPECT_EQ(l.nnodes(), 2u);
    EXPECT_EQ(l.gpu_indices_size(), 8);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(l.gpu_indices(i), static_cast<uint32_t>(i));
    EXPECT_EQ(l.master_addr(), master) << "the first node's agent address";
    EXPECT_EQ(l.master_port(), first.master_port());
    EXPECT_EQ(l.launch_id(), first.launch_id());
    EXPECT_EQ(l.uid(), 0u);
    EXPECT_EQ(l.user(), "root");
    EXPECT_EQ(l.spec().command(0), "/bin/true");
    EXPECT_EQ(l.spec().env().at("SECRET"), "xyzzy");
    EXPECT_EQ(l.walltime_s(), 3600 + 60);  // the agent's backstop fires a minute after the core's kill
  }
  EXPECT_GE(first.master_port(), 29500u);
  EXPECT_LE(first.master_port(), 29999u);
  EXPECT_EQ(first.nodelist(),
            "node[" + launches[0].first->node().substr(4) + "-" + launches[1].first->node().substr(4) + "]");
  v1::Job job = c.h.Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.gpus_size(), 16);
  EXPECT_EQ(job.nodelist(), first.nodelist());
  // Both parts exit 0: completed.
  ASSERT_TRUE(launches[0].first->Exit(id, first.launch_id(), 0));
  // The daemon has handled that exit (and sent what it sends for it) once both barriers are back.
  ASSERT_TRUE(launches[0].first->Barrier());
  ASSERT_TRUE(launches[1].first->Barrier());
  EXPECT_EQ(c.h.State(id), v1::JOB_STATE_RUNNING) << "one part still runs";
  const auto killed = [&](const v1::DaemonCommand& cmd) { return cmd.has_kill() && cmd.kill().job_id() == id; };
  EXPECT_EQ(launches[1].first->Count(killed), 0u) << "a part that exits 0 does not stop the others";
  // Nothing of that exit is stored yet (the job runs): its agent must keep the part.
  EXPECT_EQ(launches[0].first->ExitsStored(first.launch_id()), 0u);
  ASSERT_TRUE(launches[1].first->Exit(id, first.launch_id(), 0));
  ASSERT_TRUE(c.h.WaitState(id, v1::JOB_STATE_COMPLETED));
  EXPECT_EQ(c.h.Get(id).exit_code(), 0);
  // The job's outcome is stored: both exits are answered.
  EXPECT_TRUE(launches[0].first->WaitExitStored(first.launch_id()));
  EXPECT_TRUE(launches[1].first->WaitExitStored(first.launch_id()));
}

// An agent forgets an ended part once phalanxd answers its PartExited with ExitStored, so the
// answer comes only after the commit that stores the job's outcome: a daemon killed between the
// exit and that commit must hear the exit again after its restart. A duplicate exit changes
// nothing and is answered again.
TEST(DaemonAgents, ExitIsAnsweredOnlyOnceItsOutcomeIsCommitted) {
  Cluster4 c;
  c.Start();
  const auto tells = [](const v1::DaemonCommand& cmd) { return cmd.has_welcome() && cmd.welcome().stores_exits(); };
  EXPECT_EQ(c.agents[0]->Count(tells), 1u) << "agents are told to wait for ExitStored";

  const uint64_t id = c.h.SubmitOk(Harness::Spec(1, "short"));
  auto parts = c.Launches(id, 1);
  ASSERT_EQ(parts.size(), 1u);
  FakeAgent* agent = parts[0].first;
  const uint64_t launch = parts[0].second.launch_id();
  ASSERT_TRUE(WaitFor([&] { return StoredState(c.h.config.db_path, id) == "running"; }));
  {
    StoreWriteLock lock(c.h.config.db_path);
    ASSERT_TRUE(agent->Exit(id, launch, 0));
    ASSERT_TRUE(agent->Barrier());  // the exit is handled; its commit waits for the lock
    EXPECT_EQ(c.h.State(id), v1::JOB_STATE_COMPLETED) << "the core knows";
    EXPECT_EQ(agent->ExitsStored(launch), 0u) << "answered before the outcome was committed";
    lock.Release();
  }
  ASSERT_TRUE(agent->WaitExitStored(launch));
  EXPECT_EQ(StoredState(c.h.config.db_path, id), "completed") << "the answer follows the commit";

  // The same exit again (as an agent re-sends it on a new stream): answered, nothing changes.
  const v1::Job before = c.h.Get(id);
  ASSERT_TRUE(agent->Exit(id, launch, 0));
  ASSERT_TRUE(agent->WaitExitStored(launch, 2));
  ASSERT_TRUE(agent->Barrier());
  const v1::Job after = c.h.Get(id);
  EXPECT_EQ(after.state(), v1::JOB_STATE_COMPLETED);
  EXPECT_EQ(after.end_time(), before.end_time());
  EXPECT_EQ(after.reason(), before.reason());
  EXPECT_EQ(agent->ExitsStored(launch), 2u);
}

TEST(DaemonAgents, FirstFailingPartKillsTheRestAndTheJobFails) {
  Cluster4 c;
  c.Start();
  v1::JobSpec spec = Harness::Spec(0, "gang");
  spec.set_nodes(2);
  spec.set_gpus_per_node(8);
  const uint64_t id = c.h.SubmitOk(spec);
  auto launches = c.Launches(id, 2);
  ASSERT_EQ(launches.size(), 2u);
  const uint64_t launch = launches[0].second.launch_id();
  ASSERT_TRUE(launches[0].first->Exit(id, launch, 3));
  ASSERT_TRUE(launches[1].first->WaitKill(id)) << "the other part is told to stop";
  ASSERT_TRUE(launches[1].first->Exit(id, launch, -1));
  ASSERT_TRUE(c.h.WaitState(id, v1::JOB_STATE_FAILED));
  EXPECT_EQ(c.h.Get(id).exit_code(), 3);
}

// A low-priority job fills the cluster; a high-priority job arrives: the low job is told to
// checkpoint (its signal), reports the checkpoint through its agent, is preempted (killed,
// requeued with its checkpoint) and the high job starts.
TEST(DaemonAgents, CheckpointPreemptionThroughTheAgents) {
  Cluster4 c;
  c.Start();
  v1::JobSpec low = Harness::Spec(32, "low");
  low.set_priority_class("low");
  low.set_checkpoint_signal(12);
  const uint64_t low_id = c.h.SubmitOk(low);
  auto parts = c.Launches(low_id, 4);
  ASSERT_EQ(parts.size(), 4u);
  const uint64_t launch = parts[0].second.launch_id();
  c.h.clock.Advance(700);  // past the class's minimum runtime before preemption
  v1::JobSpec high = Harness::Spec(8, "high");
  high.set_priority_class("high");
  const uint64_t high_id = c.h.SubmitOk(high);
  // Every part of the victim gets its checkpoint signal.
  for (auto& [agent, l] : parts) {
    ASSERT_TRUE(WaitFor([&, a = agent] {
      return a->Count([&](const v1::DaemonCommand& cmd) {
        return cmd.has_signal() && cmd.signal().job_id() == low_id && cmd.signal().checkpoint() &&
               cmd.signal().signal() == 12 && cmd.signal().deadline() > kT0;
      }) == 1;
    })) << agent->node();
  }
  EXPECT_EQ(c.h.State(low_id), v1::JOB_STATE_CHECKPOINTING);
  ASSERT_TRUE(parts[0].first->Checkpoint(low_id, 1, "/ckpt/low/1"));
  for (auto& [agent, l] : parts) ASSERT_TRUE(agent->WaitKill(low_id)) << agent->node();
  ASSERT_TRUE(c.h.WaitState(high_id, v1::JOB_STATE_RUNNING));
  v1::Job victim = c.h.Get(low_id);
  EXPECT_EQ(victim.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(victim.checkpoint_epoch(), 1u);
  EXPECT_EQ(victim.preemptions(), 1u);
  auto started = c.Launches(high_id, 1);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].second.world_size(), 8u);
  // The victim's parts exit after the kill: stale for the daemon, nothing changes (checked once
  // every agent's barrier says its exit was handled).
  for (auto& [agent, l] : parts) ASSERT_TRUE(agent->Exit(low_id, launch, -1));
  for (auto& [agent, l] : parts) ASSERT_TRUE(agent->Barrier()) << agent->node();
  c.h.clock.Advance(1);
  victim = c.h.Get(low_id);
  EXPECT_EQ(victim.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(victim.preemptions(), 1u);
  EXPECT_EQ(victim.checkpoint_epoch(), 1u);
  EXPECT_EQ(c.h.State(high_id), v1::JOB_STATE_RUNNING);
}

TEST(DaemonAgents, BrokenStreamTakesTheNodeDownAfterTheGraceAndRequeues) {
  Cluster4 c;
  c.h.config.agent_grace_s = 0.3;
  c.Start();
  v1::JobSpec spec = Harness::Spec(0, "one-node");
  spec.set_nodes(1);
  spec.set_gpus_per_node(8);
  const uint64_t id = c.h.SubmitOk(spec);
  auto parts = c.Launches(id, 1);
  ASSERT_EQ(parts.size(), 1u);
  FakeAgent* agent = parts[0].first;
  const std::string node = agent->node();
  agent->Disconnect();
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext ctx;
    v1::ListNodesRequest req;
    v1::ListNodesResponse resp;
    (void)c.h.cluster->ListNodes(&ctx, req, &resp);
    for (const auto& n : resp.nodes()) {
      if (n.name() == node) return n.state() == v1::NODE_STATE_DOWN;
    }
    return false;
  }));
  // Requeued by the core, and started again elsewhere (new launch id).
  ASSERT_TRUE(WaitFor([&] { return c.h.Get(id).preemptions() == 1; }));
  auto again = c.Launches(id, 1, 0);
  bool relaunched = WaitFor([&] {
    for (auto& a : c.agents) {
      if (a.get() == agent) continue;
      if (a->Count([&](const v1::DaemonCommand& cmd) { return cmd.has_launch() && cmd.launch().job_id() == id; }) > 0)
        return true;
    }
    return false;
  });
  EXPECT_TRUE(relaunched);
  EXPECT_EQ(c.h.State(id), v1::JOB_STATE_RUNNING);
  // The agent comes back: its node is up again.
  ASSERT_TRUE(agent->Join());
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext ctx;
    v1::ListNodesRequest req;
    v1::ListNodesResponse resp;
    (void)c.h.cluster->ListNodes(&ctx, req, &resp);
    for (const auto& n : resp.nodes()) {
      if (n.name() == node) return n.state() == v1::NODE_STATE_UP;
    }
    return false;
  }));
}

// Cancelling a running job: CANCELLED at once (the core's contract), its parts told to stop.
TEST(DaemonAgents, CancelOfARunningJobKillsItsParts) {
  Cluster4 c;
  c.Start();
  const uint64_t id = c.h.SubmitOk(Harness::Spec(8));
  auto parts = c.Launches(id, 1);
  ASSERT_EQ(parts.size(), 1u);
  ASSERT_TRUE(c.h.Cancel(id).ok());
  EXPECT_EQ(c.h.State(id), v1::JOB_STATE_CANCELLED);
  ASSERT_TRUE(parts[0].first->WaitKill(id));
  v1::KillCommand kill;
  for (const auto& cmd : parts[0].first->Commands()) {
    if (cmd.has_kill()) kill = cmd.kill();
  }
  EXPECT_EQ(kill.grace_s(), 5);
  EXPECT_NE(kill.reason().find("cancelled by root"), std::string::npos) << kill.reason();
  EXPECT_EQ(c.h.Get(id).reason(), "cancelled by root");
  // The killed part's exit concerns a launch the daemon no longer runs: answered all the same.
  ASSERT_TRUE(parts[0].first->Exit(id, kill.launch_id(), -1));
  EXPECT_TRUE(parts[0].first->WaitExitStored(kill.launch_id()));
  EXPECT_EQ(c.h.Get(id).state(), v1::JOB_STATE_CANCELLED);
}

// gsub script.sh ARGS: the script's text and its arguments (command) are accepted together and
// reach the agent unchanged; the cancel's kill names the launch it stops.
TEST(DaemonAgents, ScriptWithArgumentsReachesTheAgent) {
  Cluster4 c;
  c.Start();
  v1::JobSpec spec = Harness::Spec(8, "script");
  spec.clear_command();
  spec.set_script("#!/bin/sh\necho \"$1 $2\"\n");
  spec.add_command("hello world");
  spec.add_command("x");
  const uint64_t id = c.h.SubmitOk(spec);
  auto parts = c.Launches(id, 1);
  ASSERT_EQ(parts.size(), 1u);
  const v1::LaunchCommand launch = parts[0].second;
  EXPECT_EQ(launch.spec().script(), spec.script());
  ASSERT_EQ(launch.spec().command_size(), 2);
  EXPECT_EQ(launch.spec().command(0), "hello world");
  EXPECT_EQ(launch.spec().command(1), "x");
  EXPECT_EQ(c.h.Get(id).spec().command_size(), 2);

  ASSERT_TRUE(c.h.Cancel(id).ok());
  ASSERT_TRUE(parts[0].first->WaitKill(id));
  for (const auto& cmd : parts[0].first->Commands()) {
    if (cmd.has_kill()) {
      EXPECT_EQ(cmd.kill().launch_id(), launch.launch_id());
    }
  }
}

// Walltime: the core kills the job at its limit (the clock moves), the agent is told.
TEST(DaemonAgents, WalltimeKillsTheJob) {
  Cluster4 c;
  c.Start();
  v1::JobSpec spec = Harness::Spec(4);
  spec.set_walltime_s(60);
  const uint64_t id = c.h.SubmitOk(spec);
  auto parts = c.Launches(id, 1);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].second.walltime_s(), 60 + 60);  // walltime + the agent backstop margin
  c.h.clock.Advance(61);
  ASSERT_TRUE(c.h.WaitState(id, v1::JOB_STATE_KILLED));
  ASSERT_TRUE(parts[0].first->WaitKill(id));
}

// The owner reports a checkpoint through the API (ReportCheckpoint), not the agent.
TEST(DaemonAgents, OwnerReportsACheckpoint) {
  Cluster4 c;
  c.Start();
  const uint64_t id = c.h.SubmitOk(Harness::Spec(2));
  ASSERT_TRUE(c.h.WaitState(id, v1::JOB_STATE_RUNNING));
  c.h.clock.Advance(30);
  grpc::ClientContext ctx;
  v1::ReportCheckpointRequest req;
  req.set_job_id(id);
  req.set_path("/ckpt/a");
  v1::Job job;
  ASSERT_TRUE(c.h.jobs->ReportCheckpoint(&ctx, req, &job).ok());
  EXPECT_EQ(job.checkpoint_epoch(), 1u);
  grpc::ClientContext ctx2;
  req.set_epoch(1);
  auto st = c.h.jobs->ReportCheckpoint(&ctx2, req, &job);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << "epochs only increase";
}

// An elastic job loses a node: the core shrinks it (Resize); the daemon restarts it from its
// checkpoint on the GPUs it keeps -- every old part stopped first, then a new launch.
TEST(DaemonAgents, ResizeRestartsTheJobOnItsNewGpus) {
  Cluster4 c;
  c.h.config.agent_grace_s = 0.2;
  c.Start();
  v1::JobSpec spec = Harness::Spec(16, "elastic");
  spec.set_min_gpus(8);
  spec.set_elastic_step_kind(v1::ELASTIC_STEP_MULTIPLE);
  spec.set_elastic_step(8);
  const uint64_t id = c.h.SubmitOk(spec);
  auto parts = c.Launches(id, 2);
  ASSERT_EQ(parts.size(), 2u);
  const uint64_t first_launch = parts[0].second.launch_id();
  FakeAgent* lost = parts[1].first;
  FakeAgent* kept = parts[0].first;
  lost->Disconnect();
  ASSERT_TRUE(kept->WaitKill(id)) << "the surviving part is stopped before the restart";
  ASSERT_TRUE(kept->Barrier()) << "whatever the daemon sends after the kill is here";
  EXPECT_EQ(kept->Count([&](const v1::DaemonCommand& cmd) { return cmd.has_launch() && cmd.launch().job_id() == id; }),
            1u)
      << "no new launch while an old part runs";
  ASSERT_TRUE(kept->Exit(id, first_launch, -1));
  auto again = kept->WaitLaunch(id, 1);
  ASSERT_TRUE(again);
  EXPECT_NE(again->launch_id(), first_launch);
  EXPECT_EQ(again->world_size(), 8u);
  EXPECT_EQ(again->nnodes(), 1u);
  v1::Job job = c.h.Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.resizes(), 1u);
  EXPECT_EQ(job.gpus_size(), 8);
}

TEST(DaemonAgents, AdminsDrainAndResumeNodes) {
  Cluster4 c;
  c.Start();
  grpc::ClientContext ctx;
  v1::NodeRequest req;
  req.set_node("node2");
  req.set_reason("bad fan");
  v1::Node node;
  ASSERT_TRUE(c.h.cluster->DrainNode(&ctx, req, &node).ok());
  EXPECT_EQ(node.state(), v1::NODE_STATE_DRAIN);
  EXPECT_EQ(node.reason(), "bad fan");
  EXPECT_TRUE(node.agent_connected());
  EXPECT_EQ(node.leaf(), "leaf1");
  EXPECT_EQ(node.model(), "dgx-h100");
  grpc::ClientContext ctx2;
  v1::Node up;
  ASSERT_TRUE(c.h.cluster->ResumeNode(&ctx2, req, &up).ok());
  EXPECT_EQ(up.state(), v1::NODE_STATE_UP);
  grpc::ClientContext ctx3;
  req.set_node("node7");
  EXPECT_EQ(c.h.cluster->DrainNode(&ctx3, req, &node).error_code(), grpc::StatusCode::NOT_FOUND);
  // Stats, fragmentation and topology answer from the core.
  grpc::ClientContext s1;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(c.h.cluster->GetStats(&s1, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.gpus_total(), 32u);
  EXPECT_EQ(stats.gpus_unavailable(), 0u);
  grpc::ClientContext s2;
  v1::GetFragmentationResponse frag;
  ASSERT_TRUE(c.h.cluster->GetFragmentation(&s2, v1::GetFragmentationRequest(), &frag).ok());
  ASSERT_GE(frag.levels_size(), 3);
  EXPECT_EQ(frag.levels(0).level(), "spine");
  EXPECT_EQ(frag.levels(0).largest_free_block(), 32u);
  grpc::ClientContext s3;
  v1::GetTopologyResponse topo;
  ASSERT_TRUE(c.h.cluster->GetTopology(&s3, v1::GetTopologyRequest(), &topo).ok());
  EXPECT_EQ(topo.nodes(), 4u);
  EXPECT_EQ(topo.fingerprint().size(), 16u);
  EXPECT_NE(topo.text().find("node"), std::string::npos);
}

// A pending job's explanation: its reason, queue position and the block backfill reserved.
TEST(DaemonAgents, ExplainPendingShowsTheReservedBlock) {
  Cluster4 c;
  c.Start();
  const uint64_t big = c.h.SubmitOk(Harness::Spec(32, "all"));
  ASSERT_TRUE(c.h.WaitState(big, v1::JOB_STATE_RUNNING));
  const uint64_t next = c.h.SubmitOk(Harness::Spec(16, "next"));
  v1::ExplainPendingResponse why;
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext ctx;
    v1::ExplainPendingRequest req;
    req.set_job_id(next);
    return c.h.cluster->ExplainPending(&ctx, req, &why).ok() && why.reserved_gpus_size() == 16;
  })) << why.DebugString();
  EXPECT_EQ(why.reason(), "Resources");
  EXPECT_EQ(why.queue_position(), 1u);
  EXPECT_EQ(why.predicted_start(), kT0 + 3600);
  grpc::ClientContext ctx;
  v1::ExplainPendingRequest req;
  req.set_job_id(big);
  EXPECT_EQ(c.h.cluster->ExplainPending(&ctx, req, &why).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace phalanx::service::testing
