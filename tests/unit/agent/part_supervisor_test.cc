// PartSupervisor on a real io_context driven by the test thread: exits, stops (TERM, then
// KILL), walltime, checkpoint signals and the checkpoint file, `phalanx-agent checkpoint-done`,
// lost keepers, re-adoption by a second supervisor (an agent restart), stops and signals by
// launch id, and the GPU handoff (a launch waits for the earlier parts on its GPUs).
#include "agent/part_supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
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
  // orphan_grace > 0: keepers watch for an agent holding state/agent.lock (held by the test).
  std::unique_ptr<PartSupervisor> Make(milliseconds walltime_grace = milliseconds(200),
                                       milliseconds orphan_grace = milliseconds(0)) {
    SupervisorOptions options;
    options.walltime_grace = walltime_grace;
    options.poll_interval = milliseconds(20);
    LauncherOptions launcher;
    launcher.node = "node07";
    launcher.identity.allow_root_jobs = true;
    if (orphan_grace.count() > 0) {
      launcher.agent_lock = tmp_ / "state/agent.lock";
      launcher.orphan_grace = orphan_grace;
      launcher.orphan_kill_grace = milliseconds(200);
    }
    PartSupervisor::Callbacks callbacks{
        .on_end = [this](const PartEnd& end) { ends_.push_back(end); },
        .on_checkpoint = [this](const CheckpointSeen& seen) { checkpoints_.push_back(seen); },
    };
    return std::make_unique<PartSupervisor>(io_, Launcher(launcher), *PartStateDir::Open(tmp_ / "state"), options,
                                            std::move(callbacks));
  }

  // Runs the loop until `done` holds (or 30 s pass: a deadline for a loaded machine, not a bound).
  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.run_one_for(milliseconds(10));
    }
    return true;
  }

  LaunchSpec Job(const std::string& command, LaunchId launch = 70) const {
    return ShellJob(command, tmp_.path(), 7, launch);
  }
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
  EXPECT_EQ(sup->Stop(7, 0, milliseconds(2000), "killed"), 1u);
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
  sup->Stop(7, 0, milliseconds(150), "killed");
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

// scontrol suspend / resume: SIGSTOP to the part's whole group, its walltime clock stopped
// (also for a second supervisor: an agent restart); resumed, the walltime is extended by the
// time it was suspended, then ends the part.
TEST_F(PartSupervisorTest, SuspendStopsTheGroupAndItsWalltimeClock) {
  auto first = Make();
  LaunchSpec spec = Job("sleep 1000 & echo $! > bg.pid; wait");
  spec.walltime = milliseconds(400);
  auto part = first->Launch(spec);
  ASSERT_TRUE(part);
  ASSERT_TRUE(RunUntil([&] { return !testing::ReadFile(tmp_ / "bg.pid").empty(); }));
  const pid_t bg = std::atoi(testing::ReadFile(tmp_ / "bg.pid").c_str());
  EXPECT_FALSE(first->Suspend(8, 0, false)) << "no such job here";
  const auto suspended_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(first->Suspend(7, 0, false));
  EXPECT_TRUE(testing::WaitFor([&] { return ProcState(part->pid) == 'T' && ProcState(bg) == 'T'; }));
  ASSERT_EQ(first->Running().size(), 1u);
  EXPECT_TRUE(first->Running()[0].suspended);
  EXPECT_NE(testing::ReadFile(tmp_ / "state/parts/70.part").find("suspended_at_ms "), std::string::npos);
  ASSERT_TRUE(first->Suspend(7, 0, false)) << "again: the same";
  first.reset();  // the agent restarts while the part is suspended
  auto second = Make();
  second->Adopt();
  ASSERT_EQ(second->Running().size(), 1u);
  EXPECT_TRUE(second->Running()[0].suspended);
  // Past its 400 ms walltime while suspended: it goes on.
  ASSERT_TRUE(
      RunUntil([&] { return !ends_.empty() || std::chrono::steady_clock::now() - suspended_at > milliseconds(900); }));
  EXPECT_TRUE(ends_.empty()) << ends_[0].reason;
  EXPECT_EQ(ProcState(part->pid), 'T');
  ASSERT_TRUE(second->Suspend(7, 0, true));
  EXPECT_TRUE(testing::WaitFor([&] { return ProcState(bg) != 'T'; }));
  EXPECT_FALSE(second->Running()[0].suspended);
  EXPECT_EQ(testing::ReadFile(tmp_ / "state/parts/70.part").find("suspended_at_ms "), std::string::npos);
  // The walltime left when suspended (under 400 ms) runs out after the resume.
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(ends_[0].reason, "walltime");
}

TEST_F(PartSupervisorTest, CheckpointSignalReachesTheJobAndTheFileIsReported) {
  auto sup = Make();
  LaunchSpec spec =
      Job("trap 'echo got >> got.txt; touch \"$PHALANX_CHECKPOINT_FILE\"' USR2; touch ready; "
          "while :; do sleep 0.02; done");
  spec.checkpoint_signal = SIGUSR2;
  ASSERT_TRUE(sup->Launch(spec));
  ASSERT_TRUE(RunUntil([&] { return Exists("ready"); }));
  EXPECT_FALSE(sup->Signal(8, 0, 0, true));  // no such job here
  ASSERT_TRUE(sup->Signal(7, 0, 0, true));
  ASSERT_TRUE(RunUntil([&] { return !checkpoints_.empty(); }));
  EXPECT_EQ(checkpoints_[0].job_id, 7u);
  EXPECT_EQ(checkpoints_[0].epoch, 0u);  // touched: the next epoch
  EXPECT_EQ(testing::ReadFile(tmp_ / "got.txt"), "got\n");
  sup->Stop(7, 0, milliseconds(0), "killed");
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
  EXPECT_TRUE(testing::WaitFor([&] {
    char s = ProcState(part->pid);
    return s == 0 || s == 'Z';
  }));
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
  second->Stop(7, 0, milliseconds(1000), "killed");
  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 2; }));
  EXPECT_EQ(ends_[1].launch_id, 80u);
  EXPECT_EQ(ends_[1].term_signal, SIGTERM);
}

// Ignores SIGTERM for 0.3 s (then exits 0), appending to order.txt; USR1 appends "<tag> usr1".
std::string SlowToDie(const std::string& tag) {
  return "trap 'sleep 0.3; echo " + tag +
         " exited >> order.txt; exit 0' TERM; "
         "trap 'echo " +
         tag + " usr1 >> usr1.txt' USR1; touch " + tag + ".ready; while :; do sleep 0.02; done";
}

TEST_F(PartSupervisorTest, LaunchOnBusyGpusWaitsUntilTheEarlierPartExited) {
  auto sup = Make();
  LaunchSpec first = Job(SlowToDie("first"), 80);
  first.gpu_indices = {1, 2};
  ASSERT_TRUE(sup->Launch(first));
  ASSERT_TRUE(RunUntil([&] { return Exists("first.ready"); }));
  EXPECT_EQ(sup->Stop(7, 80, milliseconds(5000), "killed"), 1u);  // preempted: TERM, grace 5 s

  // The next job is launched on GPU 2 at once (the core freed it): it must wait.
  LaunchSpec second =
      ShellJob("echo second started >> order.txt; echo $CUDA_VISIBLE_DEVICES > second.gpus", tmp_.path(), 8, 81);
  second.gpu_indices = {2, 3};
  auto waiting = sup->Launch(second);
  ASSERT_TRUE(waiting) << waiting.error().ToString();
  EXPECT_EQ(waiting->pid, 0);
  EXPECT_TRUE(sup->Knows(81));
  EXPECT_FALSE(sup->Launch(second));  // a known launch id, even while waiting
  // Other GPUs are not held up.
  LaunchSpec other = ShellJob("exit 0", tmp_.path(), 9, 82);
  other.gpu_indices = {0};
  auto started = sup->Launch(other);
  ASSERT_TRUE(started);
  EXPECT_GT(started->pid, 0);
  bool listed = false;
  for (const PartInfo& p : sup->Running()) listed = listed || (p.launch_id == 81 && p.pid == 0 && p.job_id == 8);
  EXPECT_TRUE(listed);
  EXPECT_FALSE(Exists("state/parts/81.part"));

  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 3; }));
  EXPECT_EQ(testing::ReadFile(tmp_ / "order.txt"), "first exited\nsecond started\n");
  EXPECT_EQ(testing::ReadFile(tmp_ / "second.gpus"), "2,3\n");
  std::vector<LaunchId> order;
  for (const PartEnd& e : ends_) order.push_back(e.launch_id);
  EXPECT_LT(std::find(order.begin(), order.end(), 80), std::find(order.begin(), order.end(), 81));
  for (const PartEnd& e : ends_) {
    if (e.launch_id == 80) {
      EXPECT_EQ(e.reason, "killed");
    } else if (e.launch_id == 81) {
      EXPECT_EQ(e.reason, "exited");
    }
  }
}

TEST_F(PartSupervisorTest, WaitingPartsAreDroppedByStopAndStartInArrivalOrder) {
  auto sup = Make();
  LaunchSpec holder = Job("touch holder.ready; exec sleep 1000", 80);
  holder.gpu_indices = {1};
  ASSERT_TRUE(sup->Launch(holder));
  LaunchSpec a = ShellJob("echo a >> order.txt", tmp_.path(), 8, 81);
  a.gpu_indices = {1};
  LaunchSpec b = ShellJob("echo b >> order.txt", tmp_.path(), 9, 82);
  b.gpu_indices = {1, 2};
  LaunchSpec c = ShellJob("echo c >> order.txt", tmp_.path(), 10, 83);
  c.gpu_indices = {2};  // behind b, which arrived earlier and waits for GPU 2 too
  ASSERT_EQ(sup->Launch(a)->pid, 0);
  ASSERT_EQ(sup->Launch(b)->pid, 0);
  ASSERT_EQ(sup->Launch(c)->pid, 0);

  EXPECT_EQ(sup->Signal(8, 0, SIGUSR1, false).error().ToString(),
            "job 8: its part here has not started yet (it waits for its GPUs)");
  EXPECT_EQ(sup->Stop(8, 81, milliseconds(1000), "killed"), 1u);  // dropped before it started
  ASSERT_EQ(ends_.size(), 1u);
  EXPECT_EQ(ends_[0].launch_id, 81u);
  EXPECT_EQ(ends_[0].reason, "killed");
  EXPECT_EQ(ends_[0].exit_code, -1);
  EXPECT_EQ(ends_[0].term_signal, 0);
  EXPECT_TRUE(sup->Knows(81));  // until its end reached the daemon
  sup->Forget(81);
  EXPECT_FALSE(sup->Knows(81));

  ASSERT_TRUE(RunUntil([&] { return Exists("holder.ready"); }));
  sup->Stop(7, 0, milliseconds(1000), "killed");
  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 4; }));
  EXPECT_EQ(testing::ReadFile(tmp_ / "order.txt"), "b\nc\n");  // a never ran; c only after b ended
}

TEST_F(PartSupervisorTest, SignalsAndStopsByLaunch) {
  auto sup = Make();
  ASSERT_TRUE(sup->Launch(Job(SlowToDie("old"), 80)));
  ASSERT_TRUE(sup->Launch(Job(SlowToDie("new"), 81)));  // the same job restarted here
  ASSERT_TRUE(RunUntil([&] { return Exists("old.ready") && Exists("new.ready"); }));

  // The daemon stops the old launch only; the new one keeps running.
  EXPECT_EQ(sup->Stop(7, 80, milliseconds(5000), "killed"), 1u);
  EXPECT_EQ(sup->Stop(7, 99, milliseconds(5000), "killed"), 0u);
  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 1; }));
  EXPECT_EQ(ends_[0].launch_id, 80u);
  EXPECT_EQ(ends_[0].reason, "killed");
  ASSERT_EQ(sup->Running().size(), 1u);
  EXPECT_EQ(sup->Running()[0].launch_id, 81u);

  // Signals without a launch id skip parts being stopped while a current one is here.
  ASSERT_TRUE(sup->Launch(Job(SlowToDie("old2"), 82)));
  ASSERT_TRUE(RunUntil([&] { return Exists("old2.ready"); }));
  sup->Stop(7, 82, milliseconds(5000), "killed");  // dies in 0.3 s
  ASSERT_TRUE(sup->Signal(7, 0, SIGUSR1, false));
  // Wait for both: the new part's line (however late its trap runs on a loaded machine) and
  // old2's exit (a USR1 that reached old2 would have been written before it exited), so that
  // usr1.txt then holds everything either part will ever write there.
  ASSERT_TRUE(RunUntil([&] {
    return ends_.size() == 2 && testing::ReadFile(tmp_ / "usr1.txt").find("new usr1\n") != std::string::npos;
  }));
  EXPECT_EQ(testing::ReadFile(tmp_ / "usr1.txt"), "new usr1\n");
  EXPECT_EQ(sup->Signal(7, 82, SIGUSR1, false).error().ToString(), "job 7 launch 82: no running part on this node");
  EXPECT_EQ(testing::ReadFile(tmp_ / "order.txt"), "old exited\nold2 exited\n");
  sup->Stop(7, 0, milliseconds(0), "killed");
  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 3; }));
  EXPECT_EQ(ends_[2].launch_id, 81u);
  EXPECT_EQ(ends_[2].term_signal, SIGKILL);
}

// An agent restart while a launch waits: the new supervisor knows the earlier part's GPUs from
// its record, and the launch (its saved blob) is queued again and starts once that part ends.
TEST_F(PartSupervisorTest, WaitingLaunchSurvivesARestart) {
  auto first = Make();
  LaunchSpec holder =
      Job("trap '' TERM; touch holder.ready; while [ ! -e go ]; do sleep 0.02; done; echo holder >> order.txt", 80);
  holder.gpu_indices = {3};
  ASSERT_TRUE(first->Launch(holder));
  ASSERT_TRUE(RunUntil([&] { return Exists("holder.ready"); }));
  first->Stop(7, 80, milliseconds(60'000), "killed");
  LaunchSpec next = ShellJob("echo next >> order.txt", tmp_.path(), 8, 81);
  next.gpu_indices = {3};
  ASSERT_EQ(first->Launch(next, "blob-81")->pid, 0);
  EXPECT_TRUE(Exists("state/parts/81.launch"));
  first.reset();  // the agent goes away

  auto second = Make(milliseconds(10'000));  // finishing the stop: TERM again, no KILL soon
  second->Adopt();
  const auto pending = second->PendingLaunches();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].first, 81u);
  EXPECT_EQ(pending[0].second, "blob-81");
  auto again = second->Launch(next, pending[0].second);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->pid, 0);  // the adopted part still holds GPU 3
  testing::WriteFile(tmp_ / "go", "");
  ASSERT_TRUE(RunUntil([&] { return ends_.size() == 2; }));
  EXPECT_EQ(ends_[0].launch_id, 80u);
  EXPECT_EQ(ends_[1].launch_id, 81u);
  EXPECT_EQ(ends_[1].exit_code, 0);
  EXPECT_EQ(testing::ReadFile(tmp_ / "order.txt"), "holder\nnext\n");
  EXPECT_FALSE(Exists("state/parts/81.launch"));  // started: no longer pending
}

// A job that leaves a tree in its job dir (subdirectories, a symlink out of it): the whole dir
// goes once the part is forgotten, and the symlink's target is untouched.
TEST_F(PartSupervisorTest, ForgetRemovesTheJobDirWithNestedSubdirs) {
  std::filesystem::create_directories(tmp_ / "outside");
  testing::WriteFile(tmp_ / "outside/keep", "mine");
  auto sup = Make();
  ASSERT_TRUE(sup->Launch(
      Job("d=$(dirname \"$PHALANX_CHECKPOINT_FILE\"); mkdir -p \"$d/a/b/c\" \"$d/e\"; "
          "echo x > \"$d/a/b/c/f\"; touch \"$d/a/.hidden\"; if [ $(id -u) = 0 ]; then chmod 0500 \"$d/a/b\"; fi; "
          "ln -s " +
          (tmp_ / "outside") + " \"$d/a/out\"")));
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(ends_[0].exit_code, 0) << ends_[0].reason;
  ASSERT_TRUE(Exists("state/jobs/70/a/b/c/f"));
  sup->Forget(70);
  EXPECT_FALSE(Exists("state/jobs/70"));
  EXPECT_TRUE(Exists("outside/keep"));
  EXPECT_EQ(testing::ReadFile(tmp_ / "outside/keep"), "mine");
}

// The keeper watches for an agent (a flock on state/agent.lock): while one holds it the job
// runs; once none has held it for the orphan grace the keeper stops the job (TERM, then KILL
// after its kill grace) and records why, which the supervisor reports.
TEST_F(PartSupervisorTest, KeeperStopsItsJobOnceNoAgentHeldTheLockForTheGrace) {
  auto sup = Make(milliseconds(200), milliseconds(400));
  auto state = PartStateDir::Open(tmp_ / "state");
  ASSERT_TRUE(state);
  auto lock = state->LockAgent(milliseconds(1000));
  ASSERT_TRUE(lock) << lock.error().ToString();
  EXPECT_FALSE(state->LockAgent(milliseconds(50)));  // one agent per state dir
  auto part = sup->Launch(Job("trap '' TERM; touch ready; while :; do sleep 0.02; done"));
  ASSERT_TRUE(part);
  ASSERT_TRUE(RunUntil([&] { return Exists("ready"); }));
  // Twice the grace with the lock held: still running.
  const auto held_until = std::chrono::steady_clock::now() + milliseconds(800);
  RunUntil([&] { return !ends_.empty() || std::chrono::steady_clock::now() > held_until; });
  ASSERT_TRUE(ends_.empty()) << ends_[0].reason;
  EXPECT_TRUE(GroupExists(part->pid));
  const auto gone = std::chrono::steady_clock::now();
  close(*lock);
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  const auto took = std::chrono::steady_clock::now() - gone;
  EXPECT_GE(took, milliseconds(400 + 200));  // grace, then the kill grace (it ignores TERM)
  EXPECT_LT(took, milliseconds(10'000));     // generous: grace + kill grace + slack
  EXPECT_EQ(ends_[0].exit_code, -1);
  EXPECT_EQ(ends_[0].term_signal, SIGKILL);
  EXPECT_EQ(ends_[0].reason, "agent gone: its keeper stopped it after 0.4 s without an agent");
  EXPECT_FALSE(GroupExists(part->pid));
}

// An agent that comes back within the grace (a restart) keeps the job alive, however often.
TEST_F(PartSupervisorTest, KeeperKeepsItsJobWhenAnAgentReturnsWithinTheGrace) {
  auto sup = Make(milliseconds(200), milliseconds(600));
  auto state = PartStateDir::Open(tmp_ / "state");
  ASSERT_TRUE(state);
  auto part = sup->Launch(Job("exec sleep 1000"));
  ASSERT_TRUE(part);
  for (int i = 0; i < 4; ++i) {  // 4 x (absent 250 ms, present 150 ms): never 600 ms absent
    const auto until = std::chrono::steady_clock::now() + milliseconds(250);
    RunUntil([&] { return std::chrono::steady_clock::now() > until; });
    auto lock = state->LockAgent(milliseconds(1000));
    ASSERT_TRUE(lock) << lock.error().ToString();
    const auto held = std::chrono::steady_clock::now() + milliseconds(150);
    RunUntil([&] { return std::chrono::steady_clock::now() > held; });
    close(*lock);
  }
  EXPECT_TRUE(ends_.empty()) << ends_[0].reason;
  EXPECT_TRUE(GroupExists(part->pid));
  sup->Stop(7, 0, milliseconds(0), "killed");
  ASSERT_TRUE(RunUntil([&] { return !ends_.empty(); }));
  EXPECT_EQ(ends_[0].reason, "killed");
}

}  // namespace
}  // namespace phalanx::agent
