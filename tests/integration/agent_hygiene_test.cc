// Job hygiene and agent death with the real programs (issue 12, items 6 and 7; docs/agent.md
// "When the agent dies"): a job gets its submitter's umask; a SIGKILLed agent's job is stopped
// by its keeper after the orphan grace and its end reported once an agent is back; an agent
// restarted within the grace re-adopts the job, which keeps running.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "process_cluster.h"

namespace phalanx::integration {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

bool HasPartRecord(const std::string& parts_dir) {
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(parts_dir, ec)) {
    if (f.path().extension() == ".part") return true;
  }
  return false;
}

// gsub runs with the test's umask: 077 gives 0600 output files (and a 0700 dir made by the
// job); 002 gives the job's own files 0664: the submitter's umask, not the agent's default 022.
TEST(IntegrationHygiene, JobGetsTheSubmittersUmask) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const mode_t saved = umask(077);
  const uint64_t private_job =
      c.Gsub({"-G", "1", "-o", "private-%j.out", "--wrap", "echo hi; touch made; mkdir d"}, work);
  umask(002);
  const uint64_t group_job = c.Gsub({"-G", "1", "-o", "group-%j.out", "--wrap", "echo hi; touch made2"}, work);
  umask(saved);
  ASSERT_NE(private_job, 0u);
  ASSERT_NE(group_job, 0u);
  ASSERT_TRUE(c.WaitState(private_job, v1::JOB_STATE_COMPLETED));
  ASSERT_TRUE(c.WaitState(group_job, v1::JOB_STATE_COMPLETED));
  EXPECT_EQ(c.Get(private_job).spec().umask(), 077u);
  EXPECT_EQ(ModeOf(work + "/private-" + std::to_string(private_job) + ".out"), 0600);
  EXPECT_EQ(ModeOf(work + "/made"), 0600);
  EXPECT_EQ(ModeOf(work + "/d"), 0700);
  EXPECT_EQ(ModeOf(work + "/group-" + std::to_string(group_job) + ".out"), 0644);  // opened 0644 before the umask
  EXPECT_EQ(ModeOf(work + "/made2"), 0664);  // touch: 0666 & ~002 (the agent's 022 would give 0644)
  EXPECT_EQ(ReadFile(work + "/private-" + std::to_string(private_job) + ".out"), "hi\n");
}

// The agent of the job's node is SIGKILLed and stays away: after --orphan-grace (2 s) the
// keeper stops the job (TERM, KILL after --kill-grace 2 s). The daemon meanwhile marks the node
// down and runs the job elsewhere. When the agent returns it reports how the part ended
// ("agent gone: ...") and, once the daemon stored that, forgets it.
TEST(IntegrationHygiene, SigkilledAgentsJobIsStoppedByItsKeeperAfterTheGrace) {
  ProcessCluster::Options options;
  options.agent_args = {"--orphan-grace", "2"};
  ProcessCluster c(options);
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const uint64_t id = c.Gsub({"-N", "1", "--gpus-per-node", "8", "-o", "run-%N.out", "--wrap",
                              "trap '' TERM; echo $$ > pid-$PHALANX_NODE; while :; do sleep 0.1; done"},
                             work);
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_RUNNING));
  const std::string node = *NodesOf(c.Get(id)).begin();
  std::optional<pid_t> pid;
  ASSERT_TRUE(WaitFor([&] { return (pid = ReadPid(work + "/pid-" + node)).has_value(); }));
  const std::string parts_dir = c.File("agent-" + node + "/parts");
  ASSERT_TRUE(WaitFor([&] { return HasPartRecord(parts_dir); })) << parts_dir;

  ASSERT_NO_FATAL_FAILURE(c.KillAgent(c.NodeIndex(node), SIGKILL));
  const auto killed = std::chrono::steady_clock::now();
  // Grace 2 s + kill grace 2 s (the job ignores TERM), 10x slack on a loaded machine.
  ASSERT_TRUE(WaitFor([&] { return ProcessGone(*pid); }, 40s)) << "the orphaned job still runs";
  const auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_GE(took, 4s);
  std::printf("orphaned job stopped %.1f s after its agent was killed (grace 2 s + kill grace 2 s)\n",
              std::chrono::duration<double>(took).count());

  ASSERT_NO_FATAL_FAILURE(c.StartAgent(c.NodeIndex(node)));
  const std::string agent_log = c.File("agent-" + node + ".log");
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(agent_log).find("ended: agent gone: its keeper stopped it after 2 s without an agent") !=
           std::string::npos;
  })) << c.Logs();
  // The daemon answered its PartExited (ExitStored): the part's files are gone.
  EXPECT_TRUE(WaitFor([&] { return !HasPartRecord(parts_dir); })) << c.Logs();
  EXPECT_TRUE(WaitFor([&] {
    const v1::Job j = c.Get(id);
    return j.state() == v1::JOB_STATE_RUNNING && !NodesOf(j).contains(node);
  })) << c.Get(id).ShortDebugString();
}

// The agent is SIGKILLed and started again at once (a crash and a restart by systemd): within
// the grace, so the keeper leaves the job alone and the new agent re-adopts it. Well past the
// grace the same process still runs, on the same node, never preempted.
TEST(IntegrationHygiene, AgentRestartedWithinTheGraceReadoptsTheJob) {
  ProcessCluster::Options options;
  options.agent_args = {"--orphan-grace", "3"};
  ProcessCluster c(options);
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const uint64_t id = c.Gsub(
      {"-N", "1", "--gpus-per-node", "8", "--wrap", "echo $$ > pid-$PHALANX_NODE; while :; do sleep 0.1; done"}, work);
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_RUNNING));
  const std::string node = *NodesOf(c.Get(id)).begin();
  std::optional<pid_t> pid;
  ASSERT_TRUE(WaitFor([&] { return (pid = ReadPid(work + "/pid-" + node)).has_value(); }));
  ASSERT_TRUE(WaitFor([&] { return HasPartRecord(c.File("agent-" + node + "/parts")); }));

  ASSERT_NO_FATAL_FAILURE(c.KillAgent(c.NodeIndex(node), SIGKILL));
  ASSERT_NO_FATAL_FAILURE(c.StartAgent(c.NodeIndex(node)));
  const std::string agent_log = c.File("agent-" + node + ".log");
  ASSERT_TRUE(WaitFor([&] {
    return ReadFile(agent_log).find("re-adopted job " + std::to_string(id)) != std::string::npos;
  })) << c.Logs();
  // Grace 3 s + kill grace 2 s, and a second more: it would be gone by now had the keeper acted.
  const auto until = std::chrono::steady_clock::now() + 6s;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_FALSE(ProcessGone(*pid)) << "the job died although its agent came back:\n" << c.Logs();
    std::this_thread::sleep_for(100ms);
  }
  const v1::Job j = c.Get(id);
  EXPECT_EQ(j.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(j.preemptions(), 0u);
  EXPECT_TRUE(NodesOf(j).contains(node));
}

}  // namespace
}  // namespace phalanx::integration
