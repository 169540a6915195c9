// SchedulerConfig::reserve_replan: the starvation guard's reservations are kept, without a walk,
// while their block stays free for the job, and planned anew after reserve_replan; EASY's one
// (the first blocked job's) is planned anew in every pass. And the guard counts a requeued job's
// wait from its requeue.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::TwoTier;

JobSpec GuardJob(JobId id, Duration walltime, Time submit) {
  JobSpec s;
  s.id = id;
  s.user = "alice";
  s.account = "lab";
  s.shape.gpus = 8;
  s.walltime = walltime;
  s.submit = submit;
  return s;
}

// The preset with a 100 s starvation guard whose reservations are kept `replan` seconds (no
// preemption, fairshare or placement hold), on `nodes` 8-GPU nodes under one leaf.
std::unique_ptr<Scheduler> GuardScheduler(uint32_t nodes, Duration replan, Duration horizon = 0) {
  auto config = PolicyPreset("phalanx");
  if (!config) throw std::runtime_error(config.error().ToString());
  config->preemption = false;
  config->weights.fairshare = 0;
  config->placement_comm_share = 0;
  config->reserve_after_wait = 100;
  config->reserve_replan = replan;
  config->reserve_horizon = horizon;
  auto made = Scheduler::Create(Build(TwoTier(1, nodes)), *config);
  if (!made) throw std::runtime_error(made.error().ToString());
  return std::move(*made);
}

// The node the job runs on, or its reservation's.
std::string NodeOf(const Scheduler& s, JobId id) {
  const Topology& t = s.topology();
  if (!s.job(id)->gpus.empty()) return t.domain(t.node_domain(t.node_of(s.job(id)->gpus.front()))).name;
  for (const Reservation& r : s.reservations()) {
    if (r.job == id) return t.domain(t.node_domain(t.node_of(r.gpus.front()))).name;
  }
  return "";
}

// Jobs 1, 2 and 5 (walltimes 1000, `second` and `third`) started at 0 on three 8-GPU nodes; then
// jobs 3 (submitted at 0) and 4 (at 1), 5000 s each, wait behind them.
void ThreeBusyTwoWaiting(Scheduler& s, Duration second, Duration third) {
  ASSERT_TRUE(s.Submit(GuardJob(1, 1000, 0), 0));
  ASSERT_TRUE(s.Submit(GuardJob(2, second, 0), 0));
  ASSERT_TRUE(s.Submit(GuardJob(5, third, 0), 0));
  s.Schedule(0);
  for (JobId id : {1, 2, 5}) ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;
  ASSERT_TRUE(s.Submit(GuardJob(3, 5000, 0), 0));
  ASSERT_TRUE(s.Submit(GuardJob(4, 5000, 1), 1));
}

// Three 8-GPU nodes, busy until 1000 (job 1), 2000 (job 2) and 3000 (job 5). Job 3 heads the
// queue and gets EASY's reservation, job 1's node at 1000; job 4 has waited past the guard's
// 100 s at 150 and gets job 2's node at 2000. Job 5's walltime is then cut to end at 1500: a walk
// gives job 4 job 5's node at 1500. Planned in every pass (0), it does at once; kept 300 s, its
// reservation stays at 2000 until 300 s after its plan. Job 1's cut to 800 moves EASY's at once
// either way. A kept block that is no longer free (its node drained) is planned anew at once.
TEST(ReserveReplan, AGuardReservationIsKeptWhileFreeUntilTheReplanTimeEasysIsNot) {
  for (const Duration replan : {Duration{0}, Duration{300}}) {
    SCOPED_TRACE("reserve_replan " + std::to_string(replan));
    const std::unique_ptr<Scheduler> made = GuardScheduler(3, replan);
    Scheduler& s = *made;
    ASSERT_NO_FATAL_FAILURE(ThreeBusyTwoWaiting(s, 2000, 3000));
    s.Schedule(1);
    const JobRecord& head = *s.job(3);
    const JobRecord& guarded = *s.job(4);
    EXPECT_EQ(head.wait.predicted_start, 1000);
    EXPECT_EQ(NodeOf(s, 3), NodeOf(s, 1));
    EXPECT_EQ(guarded.wait.predicted_start, kForever) << "not yet waited 100 s: no reservation";

    s.Schedule(150);
    ASSERT_EQ(guarded.wait.predicted_start, 2000);
    ASSERT_EQ(NodeOf(s, 4), NodeOf(s, 2));

    Scheduler::JobUpdate cut;
    cut.walltime = 1500;
    ASSERT_TRUE(s.Update(5, cut, 160));
    cut.walltime = 800;
    ASSERT_TRUE(s.Update(1, cut, 160));
    s.Schedule(160);
    EXPECT_EQ(head.wait.predicted_start, 800);  // EASY's: planned anew in every pass
    if (replan == 0) {
      EXPECT_EQ(guarded.wait.predicted_start, 1500);
      EXPECT_EQ(NodeOf(s, 4), NodeOf(s, 5));
      continue;
    }
    EXPECT_EQ(guarded.wait.predicted_start, 2000);  // kept: planned at 150
    EXPECT_EQ(NodeOf(s, 4), NodeOf(s, 2));
    s.Schedule(449);
    EXPECT_EQ(guarded.wait.predicted_start, 2000);
    s.Schedule(450);
    EXPECT_EQ(guarded.wait.predicted_start, 1500);  // planned anew
    EXPECT_EQ(NodeOf(s, 4), NodeOf(s, 5));

    // Kept again from 450; job 5's node drained: no longer free for it, planned anew at once
    // (job 2's node at 2000).
    ASSERT_TRUE(s.SetNodeState(NodeOf(s, 5), NodeState::kDrain, 460));
    s.Schedule(460);
    EXPECT_EQ(guarded.wait.predicted_start, 2000);
    EXPECT_EQ(NodeOf(s, 4), NodeOf(s, 2));
  }
}

// SchedulerConfig::reserve_horizon: a kept guard reservation that is no longer free is planned
// anew at once only when it starts less than the horizon out. Three 8-GPU nodes, busy until 1000
// (job 1), 5000 (job 2) and 9000 (job 5). Job 3 heads the queue (EASY's reservation: job 1's node
// at 1000); job 4 gets the guard's at 150, job 2's node at 5000. At 160 job 1's node drains: EASY's
// walk takes job 2's node at 5000, and job 4's block is no longer free. 4,840 s out: with a
// 1,000 s horizon it waits without a reservation (its plan still its prediction) until its plan
// is 300 s old, then gets job 5's node at 9000; with none, or one of 10,000 s, it gets that at
// once.
TEST(ReserveReplan, AGuardReservationFarOutThatLostItsBlockWaitsForItsReplan) {
  for (const Duration horizon : {Duration{0}, Duration{1000}, Duration{10000}}) {
    SCOPED_TRACE("reserve_horizon " + std::to_string(horizon));
    const std::unique_ptr<Scheduler> made = GuardScheduler(3, 300, horizon);
    Scheduler& s = *made;
    ASSERT_NO_FATAL_FAILURE(ThreeBusyTwoWaiting(s, 5000, 9000));
    s.Schedule(150);
    const JobRecord& head = *s.job(3);
    const JobRecord& guarded = *s.job(4);
    ASSERT_EQ(head.wait.predicted_start, 1000);
    ASSERT_EQ(NodeOf(s, 3), NodeOf(s, 1));
    ASSERT_EQ(guarded.wait.predicted_start, 5000);
    ASSERT_EQ(NodeOf(s, 4), NodeOf(s, 2));
    const std::string node5 = NodeOf(s, 5);

    ASSERT_TRUE(s.SetNodeState(NodeOf(s, 1), NodeState::kDrain, 160));
    s.Schedule(160);
    EXPECT_EQ(head.wait.predicted_start, 5000);
    EXPECT_EQ(NodeOf(s, 3), NodeOf(s, 2));
    if (horizon == 1000) {
      EXPECT_EQ(NodeOf(s, 4), "") << "no reservation while it waits for its replan";
      EXPECT_EQ(guarded.wait.predicted_start, 5000) << "its last plan";
      s.Schedule(449);
      EXPECT_EQ(NodeOf(s, 4), "");
      s.Schedule(450);
    }
    EXPECT_EQ(guarded.wait.predicted_start, 9000);
    EXPECT_EQ(NodeOf(s, 4), node5);
    EXPECT_EQ(s.CheckInvariants(), "");
  }
}

// The starvation guard counts a requeued job's wait from its requeue, not from its submission
// (WaitingSince, job.h): a job that ran and was preempted has not waited that long. Four 8-GPU
// nodes: jobs 1, 2, 5 and 4 run; jobs 3 and 6 (class high, ahead of job 4) wait. Job 4, submitted
// at 0, is requeued at 400: job 3 takes its node, job 6 gets EASY's reservation, and job 4 gets
// the guard's (100 s) only at 500.
TEST(ReserveReplan, TheGuardCountsARequeuedJobsWaitFromItsRequeue) {
  const std::unique_ptr<Scheduler> made = GuardScheduler(4, 0);
  Scheduler& s = *made;
  ASSERT_TRUE(s.Submit(GuardJob(1, 1000, 0), 0));
  ASSERT_TRUE(s.Submit(GuardJob(2, 2000, 0), 0));
  ASSERT_TRUE(s.Submit(GuardJob(5, 3000, 0), 0));
  ASSERT_TRUE(s.Submit(GuardJob(4, 5000, 0), 0));
  s.Schedule(0);
  for (JobId id : {1, 2, 4, 5}) ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;
  for (JobId id : {3, 6}) {
    JobSpec high = GuardJob(id, 5000, 0);
    high.priority_class = "high";
    ASSERT_TRUE(s.Submit(high, 0));
  }
  s.Schedule(0);
  ASSERT_TRUE(s.Requeue(4, 400, "test"));
  s.Schedule(400);
  ASSERT_EQ(s.job(3)->state, JobState::kRunning);
  ASSERT_EQ(s.job(4)->state, JobState::kPending);
  EXPECT_NE(s.job(6)->wait.predicted_start, kForever) << "EASY's reservation";
  EXPECT_EQ(s.job(4)->wait.predicted_start, kForever) << "waited 0 s since its requeue (400 since its submission)";
  s.Schedule(499);
  EXPECT_EQ(s.job(4)->wait.predicted_start, kForever);
  s.Schedule(500);
  EXPECT_NE(s.job(4)->wait.predicted_start, kForever) << "waited 100 s since its requeue: the guard's";
  EXPECT_EQ(s.CheckInvariants(), "");
}

}  // namespace
}  // namespace phalanx
