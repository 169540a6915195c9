// scontrol suspend / resume in the core (Scheduler::Suspend, Resume): a suspended job keeps its
// GPUs, no timer of it fires while suspended, and Resume extends its run by the time it was
// suspended (as Slurm extends a suspended job's end time).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::TwoTier;

std::unique_ptr<Scheduler> MakeSuspend() {
  SchedulerConfig c;
  c.weights.fairshare = 0;
  auto s = Scheduler::Create(Build(TwoTier(1, 1)), std::move(c));  // one node, 8 GPUs
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

JobSpec SuspendJob(JobId id, uint32_t gpus, Duration walltime) {
  JobSpec s;
  s.id = id;
  s.user = "alice";
  s.account = "lab";
  s.shape.gpus = gpus;
  s.walltime = walltime;
  return s;
}

bool Killed(const std::vector<Decision>& ds, JobId id) {
  return std::any_of(ds.begin(), ds.end(),
                     [id](const Decision& d) { return d.kind == DecisionKind::kKill && d.job == id; });
}

TEST(SchedulerSuspend, KeepsGpusAndTheWalltimeClockStops) {
  auto s = MakeSuspend();
  ASSERT_TRUE(s->Submit(SuspendJob(1, 8, 100), 0));
  (void)s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_TRUE(s->Suspend(1, 10));
  EXPECT_TRUE(s->job(1)->spec.suspended);
  EXPECT_EQ(s->job(1)->spec.suspended_at, 10);
  // Its GPUs stay allocated: a job wanting them waits.
  ASSERT_TRUE(s->Submit(SuspendJob(2, 8, 100), 11));
  (void)s->Schedule(11);
  EXPECT_EQ(s->job(2)->state, JobState::kPending);
  EXPECT_EQ(s->job(1)->gpus.size(), 8u);
  // Long past its walltime (100 s): not killed while suspended.
  EXPECT_FALSE(Killed(s->Schedule(500), 1));
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  // Resumed at 510 after 500 s suspended: it ends at 100 + 500 = 600, not before.
  ASSERT_TRUE(s->Resume(1, 510));
  EXPECT_FALSE(s->job(1)->spec.suspended);
  EXPECT_EQ(s->job(1)->run_walltime, 600);
  EXPECT_FALSE(Killed(s->Schedule(599), 1));
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_TRUE(Killed(s->Schedule(600), 1));
  EXPECT_EQ(s->job(1)->state, JobState::kKilled);
}

TEST(SchedulerSuspend, OnlyRunningJobsAndOnlyOnce) {
  auto s = MakeSuspend();
  ASSERT_TRUE(s->Submit(SuspendJob(1, 8, 100), 0));
  ASSERT_TRUE(s->Submit(SuspendJob(2, 8, 100), 0));
  (void)s->Schedule(0);
  ASSERT_EQ(s->job(2)->state, JobState::kPending);
  auto pending = s->Suspend(2, 1);
  ASSERT_FALSE(pending);
  EXPECT_EQ(pending.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(pending.error().ToString().find("only running jobs can be suspended (it is"), std::string::npos)
      << pending.error().ToString();
  EXPECT_EQ(s->Resume(1, 1).error().code, ErrorCode::kFailedPrecondition) << "not suspended";
  EXPECT_EQ(s->Suspend(99, 1).error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(s->Suspend(1, 2));
  EXPECT_EQ(s->Suspend(1, 3).error().code, ErrorCode::kFailedPrecondition) << "already suspended";
  // A suspended job can be cancelled: its GPUs free, it is not suspended any more.
  ASSERT_TRUE(s->Cancel(1, 4));
  EXPECT_FALSE(s->job(1)->spec.suspended);
  (void)s->Schedule(4);
  EXPECT_EQ(s->job(2)->state, JobState::kRunning);
}

// Planning: backfill counts a suspended job's GPUs busy until its walltime measured from now
// (as if resumed now), so a reservation behind it moves on while it stays suspended.
TEST(SchedulerSuspend, ReservationBehindItMovesOn) {
  auto s = MakeSuspend();
  ASSERT_TRUE(s->Submit(SuspendJob(1, 8, 100), 0));
  (void)s->Schedule(0);
  ASSERT_TRUE(s->Suspend(1, 50));
  ASSERT_TRUE(s->Submit(SuspendJob(2, 8, 100), 60));
  (void)s->Schedule(60);
  EXPECT_EQ(s->job(2)->wait.predicted_start, 110) << "100 s walltime + 10 s suspended so far";
  (void)s->Schedule(200);
  EXPECT_EQ(s->job(2)->wait.predicted_start, 250);
}

}  // namespace
}  // namespace phalanx
