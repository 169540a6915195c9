// The agent's fence with the real programs (docs/agent.md "When the agent is cut off"): the
// agent of the job's node talks to phalanxd through tcp_proxy.py; killing the proxy cuts the
// agent off while it keeps running. Daemon: heartbeat_timeout 3 s, grace 5 s, kill_grace 2 s,
// fence_margin 2 s: the agents fence after 3 + 5 - 2 - 2 = 4 s without contact; the node goes
// down 3 + 5 = 8 s after the agent's last report.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "process_cluster.h"

namespace phalanx::integration {
namespace {

constexpr const char* kFenceConfig =
    "  heartbeat_timeout: 3\n  grace: 5\n  kill_grace: 2\n  fence: true\n  fence_margin: 2\n";

// Every start of the job appends its pid to `starts`; it ignores SIGTERM (so the fence's
// SIGKILL after the kill grace is what ends it).
const char* kJob = "trap '' TERM; echo $$ >> starts; while :; do sleep 0.1; done";

std::vector<pid_t> Starts(const std::string& file) {
  std::vector<pid_t> pids;
  std::istringstream in(ReadFile(file));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) pids.push_back(static_cast<pid_t>(std::stol(line)));
  }
  return pids;
}

int Alive(const std::vector<pid_t>& pids) {
  int n = 0;
  for (pid_t p : pids) n += ProcessGone(p) ? 0 : 1;
  return n;
}

struct FencedCluster {
  FencedCluster() : c(Opts()) {}
  static ProcessCluster::Options Opts() {
    ProcessCluster::Options o;
    o.nodes = 2;
    o.agents_config = kFenceConfig;
    return o;
  }
  // Starts the cluster and the job, then moves the job's agent behind the proxy (a restart:
  // the new agent re-adopts the part).
  void Begin() {
    ASSERT_NO_FATAL_FAILURE(c.Start());
    work = c.MakeDir("work");
    id = c.Gsub({"-N", "1", "--gpus-per-node", "8", "--wrap", kJob}, work);
    ASSERT_NE(id, 0u);
    ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_RUNNING));
    node = *NodesOf(c.Get(id)).begin();
    ASSERT_TRUE(WaitFor([&] { return Starts(work + "/starts").size() == 1; }));
    pid = Starts(work + "/starts")[0];
    const int i = c.NodeIndex(node);
    port = c.StartProxy();
    ASSERT_NO_FATAL_FAILURE(c.KillAgent(i, SIGKILL));
    c.SetAgentDaemonPort(i, port);
    ASSERT_NO_FATAL_FAILURE(c.StartAgent(i));
    const std::string log = c.File("agent-" + node + ".log");
    ASSERT_TRUE(WaitFor([&] {
      return ReadFile(log).find("fence: running parts stop after 4 s") != std::string::npos &&
             ReadFile(log).find("re-adopted job " + std::to_string(id)) != std::string::npos;
    })) << c.Logs();
    ASSERT_TRUE(WaitFor([&] { return c.Node(node).agent_connected(); })) << c.Logs();
  }
  ProcessCluster c;
  std::string work, node;
  uint64_t id = 0;
  pid_t pid = 0;
  int port = 0;
};

// Cut for good: the agent stops the job 4 s after its last contact (SIGKILL 2 s later), before
// phalanxd declares the node down (8 s) and starts the job on the other node. Never two
// processes of the job at once; after the link is back the agent reports "fenced: ..." (a stale
// exit: the job already runs elsewhere) and forgets the part.
TEST(IntegrationFence, CutOffAgentStopsItsJobBeforeItRunsElsewhere) {
  FencedCluster f;
  ASSERT_NO_FATAL_FAILURE(f.Begin());
  ProcessCluster& c = f.c;
  f.c.KillProxy();
  const auto cut = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::duration> gone_after, restarted_after;
  int most = 0;
  const auto deadline = cut + 60s;
  while (std::chrono::steady_clock::now() < deadline && !(gone_after && restarted_after)) {
    const std::vector<pid_t> starts = Starts(f.work + "/starts");
    most = std::max(most, Alive(starts));
    if (!gone_after && ProcessGone(f.pid)) gone_after = std::chrono::steady_clock::now() - cut;
    if (!restarted_after && starts.size() >= 2) restarted_after = std::chrono::steady_clock::now() - cut;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(gone_after.has_value()) << "the cut-off agent's job still runs:\n" << c.Logs();
  ASSERT_TRUE(restarted_after.has_value()) << "the job did not start elsewhere:\n" << c.Logs();
  EXPECT_EQ(most, 1) << "two processes of the job ran at once";
  EXPECT_LT(*gone_after, *restarted_after);
  // Fence 4 s after the last contact (at most a heartbeat, 1 s, before the cut), + kill grace 2 s.
  EXPECT_GE(*gone_after, 5s);
  std::printf("fenced job gone %.1f s after the cut (fence 4 s + kill grace 2 s), restarted elsewhere after %.1f s\n",
              std::chrono::duration<double>(*gone_after).count(),
              std::chrono::duration<double>(*restarted_after).count());
  ASSERT_TRUE(c.WaitState(f.id, v1::JOB_STATE_RUNNING));
  EXPECT_FALSE(NodesOf(c.Get(f.id)).contains(f.node));

  c.StartProxy(f.port);  // the link is back
  const std::string log = c.File("agent-" + f.node + ".log");
  EXPECT_NE(
      ReadFile(log).find("job " + std::to_string(f.id) + " launch 1 ended: fenced: no contact with phalanxd for 4 s"),
      std::string::npos);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(log).find("fence: phalanxd is reachable again") != std::string::npos; }))
      << c.Logs();
  EXPECT_TRUE(WaitFor([&] { return c.Node(f.node).agent_connected(); })) << c.Logs();
  // The stale exit was acked (ExitStored): no part record is left on the fenced node.
  EXPECT_TRUE(WaitFor([&] {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(c.File("agent-" + f.node + "/parts"), ec))
      if (e.path().extension() == ".part") return false;
    return true;
  })) << c.Logs();
  // Restarted exactly once, and only that one process runs.
  const std::vector<pid_t> starts = Starts(f.work + "/starts");
  EXPECT_EQ(starts.size(), 2u);
  EXPECT_EQ(Alive(starts), 1);
  EXPECT_EQ(c.State(f.id), v1::JOB_STATE_RUNNING);
}

// A cut shorter than the fence (2 s): the agent reconnects in time, the job keeps running
// untouched on its node, never restarted.
TEST(IntegrationFence, ShortCutLeavesTheJobAlone) {
  FencedCluster f;
  ASSERT_NO_FATAL_FAILURE(f.Begin());
  ProcessCluster& c = f.c;
  c.KillProxy();
  const auto cut = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(2s);
  c.StartProxy(f.port);
  ASSERT_TRUE(WaitFor([&] { return c.Node(f.node).agent_connected(); }, 20s)) << c.Logs();
  // Past the fence + kill grace (6 s) from the cut, +2 s: it would be gone by now had the fence
  // acted.
  const auto until = cut + 8s;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_FALSE(ProcessGone(f.pid)) << "the job died although the cut was short:\n" << c.Logs();
    std::this_thread::sleep_for(100ms);
  }
  const v1::Job j = c.Get(f.id);
  EXPECT_EQ(j.state(), v1::JOB_STATE_RUNNING);
  EXPECT_TRUE(NodesOf(j).contains(f.node));
  EXPECT_EQ(Starts(f.work + "/starts").size(), 1u);
  EXPECT_EQ(ReadFile(c.File("agent-" + f.node + ".log")).find("fenced:"), std::string::npos);
}

}  // namespace
}  // namespace phalanx::integration
