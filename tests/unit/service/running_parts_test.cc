// RunningParts alone: reconciliation of what a node lists, heartbeats, exits, first failures,
// lost nodes and resizes.
#include "service/running_parts.h"

#include <gtest/gtest.h>

namespace phalanx::service {
namespace {

using PartState = RunningParts::PartState;

RunningParts::Launch LaunchOn(uint64_t launch_id, std::vector<std::pair<std::string, PartState>> parts) {
  RunningParts::Launch l;
  l.launch_id = launch_id;
  for (auto& [node, state] : parts) l.parts.push_back(RunningParts::Part{node, state, 0});
  return l;
}

TEST(RunningParts, ReconcileAdoptsConfirmsKillsAndLoses) {
  RunningParts rp;
  rp.Adopt(1, {"n0", "n1"});                                 // after a restart: launch unknown
  rp.Launched(2, LaunchOn(20, {{"n0", PartState::kSent}}));  // launch 20 runs on n0
  rp.Launched(3, LaunchOn(30, {{"n0", PartState::kSent}}));  // sent, but n0 will not list it
  rp.Launched(4, LaunchOn(40, {{"n1", PartState::kSent}}));  // another node: untouched
  const auto r = rp.Reconcile("n0", {{1, 11}, {2, 19}, {2, 20}, {9, 90}, {9, 91}});
  // Job 1 learns its launch; launch 19 of job 2 is stale; job 9 is unknown (once); job 3 is lost.
  EXPECT_EQ(rp.Find(1)->launch_id, 11u);
  EXPECT_EQ(rp.Find(1)->parts[0].state, PartState::kRunning);
  EXPECT_EQ(rp.Find(1)->parts[1].state, PartState::kSent);
  EXPECT_EQ(rp.Find(2)->parts[0].state, PartState::kRunning);
  ASSERT_EQ(r.stale.size(), 1u);
  EXPECT_EQ(r.stale[0].job, 2u);
  EXPECT_EQ(r.stale[0].launch_id, 19u);
  EXPECT_EQ(r.unknown, (std::vector<JobId>{9}));
  EXPECT_EQ(r.lost, (std::vector<JobId>{3}));
}

// A lost part (its node registered without it) counts as exited but fails nothing: the job is
// requeued, not ended, so no failure is recorded and the other part is still to stop.
TEST(RunningParts, ALostPartExitsWithoutFailingTheLaunch) {
  RunningParts rp;
  rp.Launched(3, LaunchOn(30, {{"n0", PartState::kSent}, {"n1", PartState::kRunning}}));
  EXPECT_EQ(rp.Reconcile("n0", {}).lost, (std::vector<JobId>{3}));
  ASSERT_TRUE(rp.PartLost(3, "n0"));
  EXPECT_EQ(rp.Find(3)->parts[0].state, PartState::kExited);
  EXPECT_EQ(rp.Find(3)->parts[0].exit_code, -1);
  EXPECT_EQ(rp.Find(3)->parts[1].state, PartState::kRunning);
  EXPECT_FALSE(rp.Find(3)->failed);
  EXPECT_FALSE(rp.AllExited(3));
  EXPECT_TRUE(rp.Reconcile("n0", {}).lost.empty()) << "lost once";
  EXPECT_FALSE(rp.PartLost(4, "n0")) << "not tracked";
}

// An agent lists an ended part until the daemon answers its exit (ExitStored): a gang part
// that exited while the others run is neither killed nor lost when its node registers again.
TEST(RunningParts, ListedPartWhoseExitWasHandledIsNeitherUnknownNorLost) {
  RunningParts rp;
  rp.Launched(1, LaunchOn(10, {{"n0", PartState::kRunning}, {"n1", PartState::kRunning}}));
  EXPECT_FALSE(rp.PartExited(1, "n0", 0, ""));
  const auto r = rp.Reconcile("n0", {{1, 10}});
  EXPECT_TRUE(r.unknown.empty());
  EXPECT_TRUE(r.stale.empty());
  EXPECT_TRUE(r.lost.empty());
  EXPECT_EQ(rp.Find(1)->parts[0].state, PartState::kExited);
  EXPECT_EQ(rp.Find(1)->parts[1].state, PartState::kRunning);
  EXPECT_EQ(rp.Reconcile("n0", {{1, 9}}).unknown, (std::vector<JobId>{1})) << "another launch is not";
}

TEST(RunningParts, HeartbeatsOwnOnlyTheCurrentLaunchOnItsNode) {
  RunningParts rp;
  rp.Adopt(1, {"n0"});
  EXPECT_TRUE(rp.Owns("n0", {1, 5}));  // an adopted launch learns its id from the first report
  EXPECT_TRUE(rp.Owns("n0", {1, 5}));
  EXPECT_FALSE(rp.Owns("n0", {1, 4}));  // an older launch
  EXPECT_FALSE(rp.Owns("n1", {1, 5}));  // not a node of the job
  EXPECT_FALSE(rp.Owns("n0", {2, 5}));  // not a job it runs
  EXPECT_TRUE(rp.Tracks({1, 5}));
  EXPECT_FALSE(rp.Tracks({1, 4}));
  EXPECT_FALSE(rp.Tracks({2, 5}));
}

TEST(RunningParts, TheFirstFailureIsTheJobsAndAllPartsEndIt) {
  RunningParts rp;
  rp.Launched(1, LaunchOn(7, {{"n0", PartState::kRunning}, {"n1", PartState::kRunning}, {"n2", PartState::kRunning}}));
  EXPECT_FALSE(rp.PartExited(1, "n0", 0, "exit 0 on n0"));
  EXPECT_TRUE(rp.PartExited(1, "n1", 3, "exit 3 on n1"));  // the first failure: stop the others
  EXPECT_FALSE(rp.AllExited(1));
  EXPECT_FALSE(rp.PartExited(1, "n2", 9, "killed on n2"));  // not the first
  EXPECT_TRUE(rp.AllExited(1));
  EXPECT_TRUE(rp.Find(1)->failed);
  EXPECT_EQ(rp.Find(1)->exit_code, 3);
  EXPECT_EQ(rp.Find(1)->fail_reason, "exit 3 on n1");
  EXPECT_FALSE(rp.PartExited(5, "n0", 1, "untracked"));
  EXPECT_FALSE(rp.AllExited(5));
}

TEST(RunningParts, ARestartingJobDoesNotFailAndALostNodeEndsItsParts) {
  RunningParts rp;
  auto l = LaunchOn(7, {{"n0", PartState::kRunning}, {"n1", PartState::kRunning}});
  l.restarting = true;
  l.relaunch_id = 8;
  rp.Launched(1, std::move(l));
  rp.Launched(2, LaunchOn(9, {{"n1", PartState::kSent}}));
  EXPECT_EQ(rp.Restarting(), (std::vector<JobId>{1}));
  EXPECT_FALSE(rp.PartExited(1, "n0", -1, "killed on n0"));  // stopped for the resize: not a failure
  rp.NodeLost("n1");
  EXPECT_TRUE(rp.AllExited(1));
  EXPECT_TRUE(rp.AllExited(2));
  EXPECT_FALSE(rp.Find(1)->failed);
  EXPECT_EQ(rp.Find(2)->parts[0].exit_code, -1);
}

TEST(RunningParts, QueuedPartsBecomeSentWhenDelivered) {
  RunningParts rp;
  rp.Launched(1, LaunchOn(7, {{"n0", PartState::kQueued}, {"n1", PartState::kQueued}}));
  rp.Delivered("n0", 1);
  EXPECT_EQ(rp.Find(1)->parts[0].state, PartState::kSent);
  EXPECT_EQ(rp.Find(1)->parts[1].state, PartState::kQueued);
  // A queued part is not lost when its node registers without it (it never got it).
  EXPECT_TRUE(rp.Reconcile("n1", {}).lost.empty());
  EXPECT_EQ(rp.Reconcile("n0", {}).lost, (std::vector<JobId>{1}));
  rp.Forget(1);
  EXPECT_EQ(rp.Find(1), nullptr);
}

}  // namespace
}  // namespace phalanx::service
