// AgentSessions alone, with a recording executor and in-memory streams: registration, attaching
// a stream (welcome first, then the outbox in order), stale sessions, refusals, and the grace
// period after a stream breaks.
#include "service/agent_sessions.h"

#include <gtest/gtest.h>

#include <optional>

#include "util/log.h"

namespace phalanx::service {
namespace {

// What the sessions tell the executor.
class RecordingEvents final : public AgentSessions::Events {
 public:
  CallStatus Serving() const override {
    if (serving) return {};
    return std::unexpected(CallError::Unavailable("phalanxd is shutting down"));
  }
  Time Now() override { return 1000; }
  std::vector<JobId> Reconcile(const std::string& node, const std::vector<PartRef>& running) override {
    log.push_back("reconcile " + node + " " + std::to_string(running.size()));
    return kill;
  }
  void AgentBack(const std::string& node, const std::string& why) override {
    log.push_back("back " + node + ": " + why);
  }
  void AgentLost(const std::string& node, const std::string& why) override {
    log.push_back("lost " + node + ": " + why);
  }
  void LaunchDelivered(const std::string& node, JobId job) override {
    log.push_back("delivered " + node + " " + std::to_string(job));
  }
  void Heartbeat(const std::string& node, const AgentHeartbeat& h) override {
    log.push_back("heartbeat " + node + " " + std::to_string(h.running.size()));
  }
  void PartExited(const std::string& node, const PartExit& e) override {
    log.push_back("exit " + node + " " + std::to_string(e.part.job));
  }
  void CheckpointReported(const std::string& node, const AgentCheckpoint& c) override {
    log.push_back("checkpoint " + node + " " + std::to_string(c.job));
  }

  bool serving = true;
  std::vector<JobId> kill;
  std::vector<std::string> log;
};

// A Connect stream whose writes complete at once.
struct FakeStream {
  FakeStream() {
    link = std::make_shared<AgentLink>(AgentLink::Ops{[this](const v1::DaemonCommand* m) {
      got.push_back(*m);
      link->OnWriteDone(true);
                                                      },
                                                      [this](grpc::Status s) { finished = s; }},
                                       100);
  }
  std::shared_ptr<AgentLink> link;
  std::vector<v1::DaemonCommand> got;
  std::optional<grpc::Status> finished;
};

v1::DaemonCommand Launch(JobId job) {
  v1::DaemonCommand c;
  c.mutable_launch()->set_job_id(job);
  return c;
}

struct Fixture {
  Fixture() : sessions(io, {{"n0", 8}, {"n1", 8}}, {}, Options(), &events) {}
  static AgentSessions::Options Options() {
    AgentSessions::Options o;
    o.agent_grace_s = 0.01;
    return o;
  }
  boost::asio::io_context io;
  RecordingEvents events;
  AgentSessions sessions;
};

TEST(AgentSessions, RegisterReconcilesAndGivesASession) {
  Fixture f;
  f.events.kill = {42};
  AgentHello hello{"n0", 8, "10.0.0.5", "1.0", {{42, 1}, {7, 3}}};
  auto welcome = f.sessions.Register(hello, "10.9.9.9");
  ASSERT_TRUE(welcome);
  EXPECT_EQ(welcome->session.size(), 32u);
  EXPECT_EQ(welcome->heartbeat_interval_s, 10);
  EXPECT_EQ(welcome->kill_jobs, (std::vector<JobId>{42}));
  EXPECT_EQ(f.events.log, (std::vector<std::string>{"reconcile n0 2", "back n0: agent registered"}));
  EXPECT_TRUE(f.sessions.agent_ok("n0"));
  EXPECT_EQ(f.sessions.AddressOf("n0"), "10.0.0.5");
  EXPECT_EQ(f.sessions.AddressOf("n1"), "n1");  // no agent yet: its name
  EXPECT_EQ(f.sessions.last_report("n0"), 1000);

  auto again = f.sessions.Register(hello, "10.9.9.9");
  ASSERT_TRUE(again);
  EXPECT_NE(again->session, welcome->session) << "a new session per registration";
}

TEST(AgentSessions, RegistrationsAreRefusedForUnknownNodesAndWhenNotServing) {
  Fixture f;
  auto stranger = f.sessions.Register(AgentHello{"n9", 0, "", "", {}}, "x");
  ASSERT_FALSE(stranger);
  EXPECT_FALSE(stranger.error().unavailable);
  EXPECT_EQ(stranger.error().error.code, ErrorCode::kNotFound);
  EXPECT_EQ(stranger.error().error.ToString(), "node n9 is not in the topology");
  f.events.serving = false;
  auto late = f.sessions.Register(AgentHello{"n0", 0, "", "", {}}, "x");
  ASSERT_FALSE(late);
  EXPECT_TRUE(late.error().unavailable);
  EXPECT_TRUE(f.events.log.empty());
}

TEST(AgentSessions, AStreamAttachesWithItsSessionGetsWelcomeThenItsOutbox) {
  Fixture f;
  auto welcome = f.sessions.Register(AgentHello{"n0", 8, "", "", {}}, "10.0.0.5");
  ASSERT_TRUE(welcome);
  EXPECT_FALSE(f.sessions.Send("n0", Launch(1)));  // no stream yet: queued
  EXPECT_FALSE(f.sessions.Send("n0", Launch(2)));
  f.sessions.TakeBackLaunches("n0", 2);
  FakeStream s;
  f.sessions.Report(s.link, "10.0.0.5", AgentMessage{welcome->session, AgentHeartbeat{{{1, 1}}}});
  ASSERT_EQ(s.got.size(), 2u);
  EXPECT_TRUE(s.got[0].has_welcome());
  EXPECT_EQ(s.got[0].welcome().session(), welcome->session);
  EXPECT_EQ(s.got[1].launch().job_id(), 1u);
  EXPECT_TRUE(f.sessions.connected("n0"));
  EXPECT_EQ(f.sessions.connected_count(), 1u);
  // The first report's content counts too.
  EXPECT_EQ(f.events.log.back(), "heartbeat n0 1");
  EXPECT_NE(std::find(f.events.log.begin(), f.events.log.end(), "delivered n0 1"), f.events.log.end());
  // Attached: commands go straight out; reports reach the executor; stale sessions do not.
  EXPECT_TRUE(f.sessions.Send("n0", Launch(3)));
  EXPECT_EQ(s.got.back().launch().job_id(), 3u);
  f.sessions.Report(s.link, "", AgentMessage{welcome->session, PartExit{{3, 1}, 0, 0, "exited"}});
  EXPECT_EQ(f.events.log.back(), "exit n0 3");
  f.sessions.Report(s.link, "", AgentMessage{"an-old-session", AgentCheckpoint{3, 1, "/c"}});
  EXPECT_EQ(f.events.log.back(), "exit n0 3");
}

TEST(AgentSessions, StaleSessionReportsAreLoggedAFewTimesNotOncePerReport) {
  Fixture f;
  auto welcome = f.sessions.Register(AgentHello{"n1", 8, "", "", {}}, "10.0.0.7");
  ASSERT_TRUE(welcome);
  FakeStream s;
  f.sessions.Report(s.link, "10.0.0.7", AgentMessage{welcome->session, AgentHeartbeat{}});
  size_t lines = 0;
  SetLogSink([&](LogLevel, const std::string& line) {
    if (line.find("node n1: report with a stale session ignored") != std::string::npos) ++lines;
  });
  for (int i = 0; i < 500; ++i) f.sessions.Report(s.link, "", AgentMessage{"an-old-session", AgentHeartbeat{}});
  SetLogSink({});
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 3u);
}

TEST(AgentSessions, AStreamWithoutSessionOrHelloIsClosed) {
  Fixture f;
  FakeStream s;
  f.sessions.Report(s.link, "", AgentMessage{"", AgentHeartbeat{}});
  ASSERT_TRUE(s.finished);
  EXPECT_EQ(s.finished->error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  // A hello on the stream registers and attaches it at once.
  FakeStream h;
  f.sessions.Report(h.link, "10.0.0.6", AgentMessage{"", AgentHello{"n1", 8, "", "", {}}});
  EXPECT_FALSE(h.finished);
  ASSERT_EQ(h.got.size(), 1u);
  EXPECT_TRUE(h.got[0].has_welcome());
  EXPECT_EQ(f.sessions.AddressOf("n1"), "10.0.0.6");
  // A hello naming an unknown node closes the stream NOT_FOUND.
  FakeStream u;
  f.sessions.Report(u.link, "", AgentMessage{"", AgentHello{"n9", 8, "", "", {}}});
  ASSERT_TRUE(u.finished);
  EXPECT_EQ(u.finished->error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(AgentSessions, ABrokenStreamLosesTheNodeAfterItsGrace) {
  Fixture f;
  FakeStream s;
  f.sessions.Report(s.link, "", AgentMessage{"", AgentHello{"n0", 8, "", "", {}}});
  ASSERT_TRUE(f.sessions.agent_ok("n0"));
  f.sessions.StreamClosed(s.link);
  f.io.run_for(std::chrono::seconds(2));
  EXPECT_EQ(f.events.log.back(), "lost n0: its agent's stream broke");
  EXPECT_FALSE(f.sessions.agent_ok("n0"));
  EXPECT_FALSE(f.sessions.connected("n0"));
}

TEST(AgentSessions, StopClosesStreamsAsUnavailableAndAClosedStreamThenStartsNoGracePeriod) {
  Fixture f;
  FakeStream s;
  f.sessions.Report(s.link, "", AgentMessage{"", AgentHello{"n0", 8, "", "", {}}});
  f.sessions.Stop();
  ASSERT_TRUE(s.finished);
  EXPECT_EQ(s.finished->error_code(), grpc::StatusCode::UNAVAILABLE);
  f.sessions.StreamClosed(s.link);
  f.io.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(f.events.log.back(), "back n0: agent registered") << "no grace period after Stop";
}

}  // namespace
}  // namespace phalanx::service

namespace phalanx::service {
namespace {

// Fencing: the welcome carries fence_after_s, and the heartbeats of an agent that asked are
// answered with HeartbeatAck (its proof of contact), echoing the heartbeat's time; an agent
// that did not ask (an older one) gets none.
TEST(AgentSessions, FencingAgentsGetTheFenceAndHeartbeatAcks) {
  boost::asio::io_context io;
  RecordingEvents events;
  AgentSessions::Options o;
  o.fence_after_s = 45;
  AgentSessions sessions(io, {{"n0", 8}, {"n1", 8}}, {}, o, &events);
  auto fencing = sessions.Register(AgentHello{"n0", 8, "", "", {}, /*wants_heartbeat_ack=*/true}, "10.0.0.5");
  auto older = sessions.Register(AgentHello{"n1", 8, "", "", {}, false}, "10.0.0.6");
  ASSERT_TRUE(fencing);
  ASSERT_TRUE(older);
  EXPECT_EQ(fencing->fence_after_s, 45);
  FakeStream a, b;
  sessions.Report(a.link, "10.0.0.5", AgentMessage{fencing->session, AgentHeartbeat{{}, 1234}});
  sessions.Report(b.link, "10.0.0.6", AgentMessage{older->session, AgentHeartbeat{{}, 1234}});
  ASSERT_EQ(a.got.size(), 2u);
  EXPECT_EQ(a.got[0].welcome().fence_after_s(), 45);
  ASSERT_TRUE(a.got[1].has_heartbeat_ack());
  EXPECT_EQ(a.got[1].heartbeat_ack().time(), 1234);
  ASSERT_EQ(b.got.size(), 1u);  // the welcome only
  EXPECT_TRUE(b.got[0].has_welcome());
  sessions.Report(a.link, "", AgentMessage{fencing->session, AgentHeartbeat{{}, 1235}});
  ASSERT_EQ(a.got.size(), 3u);
  EXPECT_EQ(a.got[2].heartbeat_ack().time(), 1235);
  sessions.Stop();
}

}  // namespace
}  // namespace phalanx::service
