// PartSupervisor on a real io_context driven by the test thread: exits, stops (TERM, then
// KILL), walltime, checkpoint signals and the checkpoint file, `phalanx-agent checkpoint-done`,
// lost keepers, and re-adoption by a second supervisor (an agent restart).
#include "agent/part_supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>

#include "agent/proc_util.h"
#include "test_util.h"

namespace phalanx::agent {
namespace {

using std::chrono::milliseconds;
using testing::ShellJob;
using testing::TempDir;

class PartSupervisorTest : public ::testing::Test {
 protected:
  std::unique_ptr<PartSupervisor> Make() {
    SupervisorOptions options;
    options.walltime_grace = milliseconds(200);
    options.poll_interval = milliseconds(20);
    LauncherOptions launcher;
    launcher.node = "node07";
    launcher.identity.allow_root_jobs = true;
    PartSupervisor::Callbacks callbacks{
        .on_end = [this](const PartEnd& end) { ends_.push_back(end); },
        .on_checkpoint = [this](const CheckpointSeen& seen) { checkpoints_.push_back(seen); },
    };
    return std::make_unique<PartSupervisor>(io_, Launcher(launcher), *PartStateDir::Open(tmp_ / "state"), options,
                                            std::move(callbacks));
  }

  // Runs the loop until `done` holds (or 5 s pass).
  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.run_one_for(milliseconds(10));
    }
    return true;
  }

  LaunchSpec Job(const std::string& command, LaunchId launch = 70) const { return ShellJob(command, tmp_.path(), 7, launch); }
  bool Exists(const std::string& name) const { return std::filesystem::exists(tmp_ / name); }

  TempDir tmp_;
  boost::asio::io_context io_;
  std::vector<PartEnd> ends_;
  std::vector<CheckpointSeen> checkpoints_;
};

TEST_F(PartSupervisorTest, ReportsTheExitAndKeepsFilesUntilForgotten) {
  auto sup = Make();
  ASSERT_TRUE(sup->Launch(Job("exit 4")));
  EXPECT_FALSE(sup->Launch(Job("exit 4")));  // same launch id
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(ends_[0].job_id, 7u);
  EXPECT_EQ(ends_[0].exit_code, 4);
  EXPECT_EQ(ends_[0].reason, "exited");
  EXPECT_TRUE(sup->Running().empty());
  EXPECT_TRUE(Exists("state/parts/70.part"));
  sup->Forget(70);
  EXPECT_FALSE(Exists("state/parts/70.part"));
  EXPECT_FALSE(Exists("state/parts/70.exit"));
  EXPECT_FALSE(Exists("state/jobs/70"));
}

TEST_F(PartSupervisorTest, StopEndsTheWholeProcessGroup) {
  auto sup = Make();
  auto part = sup->Launch(Job("sleep 1000 & echo $! > bg.pid; wait"));
  ASSERT_TRUE(part);
  ASSERT_TRUE(RunUntil([&] { return !testing::ReadFile(tmp_ / "bg.pid").empty(); }));
  const pid_t bg = std::atoi(testing::ReadFile(tmp_ / "bg.pid").c_str());
  EXPECT_EQ(sup->Stop(7, milliseconds(2000), "killed"), 1u);
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(ends_[0].reason, "killed");
  EXPECT_EQ(ends_[0].exit_code, -1);
  EXPECT_EQ(ends_[0].term_signal, SIGTERM);
  EXPECT_FALSE(GroupExists(part->pid));
  EXPECT_EQ(kill(bg, 0), -1);
}

TEST_F(PartSupervisorTest, StopEscalatesToSigkill) {
  auto sup = Make();
  ASSERT_TRUE(sup->Launch(Job("trap '' TERM; touch ready; while :; do sleep 0.02; done")));
  ASSERT_TRUE(RunUntil([&] { return Exists("ready"); }));
  const auto start = std::chrono::steady_clock::now();
  sup->Stop(7, milliseconds(150), "killed");
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(150));
  EXPECT_EQ(ends_[0].term_signal, SIGKILL);
  EXPECT_EQ(ends_[0].reason, "killed");
}

TEST_F(PartSupervisorTest, WalltimeTermsThenKills) {
  auto sup = Make();
  LaunchSpec spec = Job("trap '' TERM; while :; do sleep 0.02; done");
  spec.walltime = milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(sup->Launch(spec));
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(500));  // walltime + grace
  EXPECT_EQ(ends_[0].reason, "walltime");
  EXPECT_EQ(ends_[0].term_signal, SIGKILL);

  spec = Job("exec sleep 1000", 71);
  spec.walltime = milliseconds(100);
  ASSERT_TRUE(sup->Launch(spec));
  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 2; }));
  EXPECT_EQ(ends_[1].reason, "walltime");
  EXPECT_EQ(ends_[1].term_signal, SIGTERM);  // went at the TERM
}

TEST_F(PartSupervisorTest, CheckpointSignalReachesTheJobAndTheFileIsReported) {
  auto sup = Make();
  LaunchSpec spec = Job("trap 'echo got >> got.txt; touch \"$PHALANX_CHECKPOINT_FILE\"' USR2; touch ready; "
                        "while :; do sleep 0.02; done");
  spec.checkpoint_signal = SIGUSR2;
  ASSERT_TRUE(sup->Launch(spec));
  ASSERT_TRUE(RunUntil([&] { return Exists("ready"); }));
  EXPECT_FALSE(sup->Signal(8, 0, true));  // no such job here
  ASSERT_TRUE(sup->Signal(7, 0, true));
  ASSERT_TRUE(RunUntil([&] { return !checkpoints_.empty(); }));
  EXPECT_EQ(checkpoints_[0].job_id, 7u);
  EXPECT_EQ(checkpoints_[0].epoch, 0u);  // touched: the next epoch
  EXPECT_EQ(testing::ReadFile(tmp_ / "got.txt"), "got\n");
  sup->Stop(7, milliseconds(0), "killed");
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(checkpoints_.size(), 1u);
}

TEST_F(PartSupervisorTest, CheckpointDoneCommandWritesEpochAndPath) {
  auto sup = Make();
  ASSERT_TRUE(sup->Launch(Job(std::string(PHALANX_AGENT_BIN) + " checkpoint-done --epoch 12 --path /ckpt/step-12")));
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(ends_[0].exit_code, 0);
  ASSERT_EQ(checkpoints_.size(), 1u);  // seen before the exit is reported
  EXPECT_EQ(checkpoints_[0].epoch, 12u);
  EXPECT_EQ(checkpoints_[0].path, "/ckpt/step-12");
}

TEST_F(PartSupervisorTest, LostKeeperEndsThePart) {
  auto sup = Make();
  auto part = sup->Launch(Job("exec sleep 1000"));
  ASSERT_TRUE(part);
  // The keeper is the job's parent.
  std::string stat = testing::ReadFile("/proc/" + std::to_string(part->pid) + "/stat");
  const pid_t ppid = std::atoi(stat.substr(stat.rfind(')') + 4).c_str());
  ASSERT_GT(ppid, 1);
  ASSERT_EQ(kill(ppid, SIGKILL), 0);
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(ends_[0].exit_code, -1);
  EXPECT_EQ(ends_[0].reason.rfind("lost:", 0), 0u) << ends_[0].reason;
  EXPECT_TRUE(testing::WaitFor([&] { char s = ProcState(part->pid); return s == 0 || s == 'Z'; }));
}

TEST_F(PartSupervisorTest, SecondSupervisorReadoptsRunningAndReportsEndedParts) {
  auto first = Make();
  auto running = first->Launch(Job("exec sleep 1000", 80));
  ASSERT_TRUE(running);
  LaunchSpec waiting = Job("while [ ! -e go ]; do sleep 0.01; done; exit 6", 81);
  waiting.walltime = milliseconds(60'000);
  ASSERT_TRUE(first->Launch(waiting));
  first.reset();  // the agent goes away; its parts stay

  testing::WriteFile(tmp_ / "go", "");
  PartStateDir state = *PartStateDir::Open(tmp_ / "state");
  ASSERT_TRUE(testing::WaitFor([&] { return state.ReadExitStatus(81).has_value(); }));

  auto second = Make();
  second->Adopt();
  ASSERT_EQ(ends_.size(), 1u);  // ended while nobody watched
  EXPECT_EQ(ends_[0].launch_id, 81u);
  EXPECT_EQ(ends_[0].exit_code, 6);
  ASSERT_EQ(second->Running().size(), 1u);
  EXPECT_EQ(second->Running()[0].pid, running->pid);
  second->Stop(7, milliseconds(1000), "killed");
  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 2; }));
  EXPECT_EQ(ends_[1].launch_id, 80u);
  EXPECT_EQ(ends_[1].term_signal, SIGTERM);
}

}  // namespace
}  // namespace phalanx::agent
