// Scheduler::Update: walltime, priority class and name of pending and running jobs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::DemoScheduler;
using testing::PlainJob;

bool Killed(const std::vector<Decision>& ds, JobId id) {
  for (const Decision& d : ds) {
    if (d.kind == DecisionKind::kKill && d.job == id) return true;
  }
  return false;
}

TEST(SchedulerUpdate, LoweringARunningJobsWalltimeEndsItEarlier) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(PlainJob(1, 8, 1000), 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_TRUE(s->Update(1, {.walltime = 300}, 100));
  EXPECT_EQ(s->job(1)->walltime, 300);
  EXPECT_EQ(s->job(1)->expected_end(), 300);
  EXPECT_FALSE(Killed(s->Schedule(299), 1));
  EXPECT_TRUE(Killed(s->Schedule(300), 1));
  EXPECT_EQ(s->job(1)->state, JobState::kKilled);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerUpdate, RaisingAWalltimeBelowTheTimeRunKeepsItRunning) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(PlainJob(1, 8, 100), 0));
  s->Schedule(0);
  ASSERT_TRUE(s->Update(1, {.walltime = 5000}, 50));
  EXPECT_FALSE(Killed(s->Schedule(100), 1));
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(s->job(1)->expected_end(), 5000);
}

TEST(SchedulerUpdate, ClassAndNameOfAPendingJobChangeItsOrder) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(PlainJob(1, 32, 1000), 0));  // fills the cluster
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_TRUE(s->Submit(PlainJob(2, 8, 100), 1));
  ASSERT_TRUE(s->Submit(PlainJob(3, 8, 100), 2));
  s->Schedule(2);
  ASSERT_EQ(s->queue().front(), 2u);
  ASSERT_TRUE(s->Update(3, {.priority_class = "high", .name = "urgent-fix"}, 3));
  s->Schedule(3);
  EXPECT_EQ(s->queue().front(), 3u);
  EXPECT_EQ(s->job(3)->spec.priority_class, "high");
  EXPECT_EQ(s->job(3)->spec.name, "urgent-fix");
  EXPECT_FALSE(s->job(3)->preemptible);  // high is not preemptible by default
}

TEST(SchedulerUpdate, BadUpdatesFailAndChangeNothing) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(PlainJob(1, 8, 100), 0));
  const JobRecord before = *s->job(1);
  auto e1 = s->Update(1, {.walltime = 0}, 1);
  ASSERT_FALSE(e1);
  EXPECT_NE(e1.error().message.find("walltime"), std::string::npos);
  auto e2 = s->Update(1, {.walltime = 500, .priority_class = "vip"}, 1);
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.error().message.find("priority_class"), std::string::npos);
  EXPECT_EQ(s->job(1)->walltime, before.walltime);  // nothing applied from a failed update
  auto e3 = s->Update(42, {.name = "x"}, 1);
  ASSERT_FALSE(e3);
  EXPECT_EQ(e3.error().where, "job 42");
  // A rename is held to the names' rules (issue 12), and nothing else of the update applies.
  auto e4 = s->Update(1, {.walltime = 500, .name = "x\x1b]0;owned\x07"}, 1);
  ASSERT_FALSE(e4);
  EXPECT_EQ(e4.error().ToString(),
            "job 1: name: 'x\\x1b]0;owned\\x07' contains an ESC (byte 1); control characters are not allowed");
  EXPECT_EQ(s->job(1)->walltime, before.walltime);
  EXPECT_EQ(s->job(1)->spec.name, before.spec.name);
  s->Schedule(1);
  s->JobEnded(1, 50, true);
  EXPECT_FALSE(s->Update(1, {.name = "late"}, 60));
}

}  // namespace
}  // namespace phalanx
