// Slurm's depth (SchedulerConfig::main_queue_depth, backfill_max_jobs): a pass reads the queue
// no further than its limit of jobs, counted as Slurm counts them, and the jobs beyond keep the
// reason a pass last gave them. A FIFO pass reads its first jobs from the order the core keeps
// across passes (SchedulerConfig::kept_fifo_order); ordered anew, the queue and the decisions
// are the same.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::TwoTier;

// slurm-like (FIFO, EASY, bf_interval 30 s) on 2 leaves x 2 nodes x 8 GPUs, its limits cut so
// that four pending jobs reach past them.
std::unique_ptr<Scheduler> MakeSlurmLike(bool kept, uint32_t main_depth = 2, uint32_t backfill_jobs = 3) {
  auto c = PolicyPreset("slurm-like");
  if (!c) throw std::runtime_error(c.error().ToString());
  c->main_queue_depth = main_depth;
  c->backfill_max_jobs = backfill_jobs;
  c->kept_fifo_order = kept;
  auto s = Scheduler::Create(Build(TwoTier(2, 2)), std::move(*c));
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

JobSpec DepthJob(JobId id, uint32_t gpus, Time submit = 0, std::string user = "alice") {
  JobSpec s;
  s.id = id;
  s.user = std::move(user);
  s.account = "lab";
  s.shape.gpus = gpus;
  s.walltime = 3600;
  s.submit = submit;
  return s;
}

WaitKind Reason(const Scheduler& s, JobId id) { return s.job(id)->wait.kind; }

class SlurmDepth : public ::testing::TestWithParam<bool> {};

// A main pass counts every job it looks at, the ones behind the blocked job too, and stops at
// its depth; a backfill cycle at its own limit. Beyond, a job keeps its reason; one no pass has
// reached has none. A hold names itself at once.
TEST_P(SlurmDepth, ThePassReadsNoFurtherThanItsDepth) {
  auto s = MakeSlurmLike(GetParam());
  ASSERT_TRUE(s->Submit(DepthJob(1, 32), 0));
  (void)s->Schedule(0);  // a backfill cycle (the first pass)
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  for (JobId id = 2; id <= 6; ++id) ASSERT_TRUE(s->Submit(DepthJob(id, 8), 1));
  (void)s->Schedule(1);  // the main scheduler: depth 2
  EXPECT_EQ(Reason(*s, 2), WaitKind::kResources);
  EXPECT_EQ(Reason(*s, 3), WaitKind::kPriority);
  EXPECT_EQ(s->job(3)->wait.detail, "behind job 2");
  for (JobId id = 4; id <= 6; ++id) EXPECT_EQ(Reason(*s, id), WaitKind::kNone) << id;
  ASSERT_TRUE(s->Hold(4, 2));
  EXPECT_EQ(Reason(*s, 4), WaitKind::kHeld);
  (void)s->Schedule(30);  // a backfill cycle: 3 jobs, the held one not counted
  EXPECT_EQ(Reason(*s, 2), WaitKind::kResources) << "EASY's reservation";
  EXPECT_EQ(Reason(*s, 3), WaitKind::kPriority);
  EXPECT_EQ(Reason(*s, 4), WaitKind::kHeld);
  EXPECT_EQ(Reason(*s, 5), WaitKind::kPriority);
  EXPECT_EQ(Reason(*s, 6), WaitKind::kNone);
  ASSERT_TRUE(s->Release(4, 31));
  EXPECT_EQ(Reason(*s, 4), WaitKind::kNone);
  // The queue holds every pending job, read or not, in FIFO order.
  EXPECT_EQ(s->queue(), (std::vector<JobId>{2, 3, 4, 5, 6}));
  EXPECT_EQ(s->kept_order_passes(), GetParam() ? 3u : 0u);
}

// The kept order is by submit time, then id, as a pass orders a FIFO queue: jobs whose ids do
// not follow their submit times (a site's own ids, Slurm's) start in submit order, and the
// queue lists them so.
TEST_P(SlurmDepth, TheQueueFollowsSubmitTimesNotIds) {
  auto s = MakeSlurmLike(GetParam(), 1, 1);
  ASSERT_TRUE(s->Submit(DepthJob(1, 32), 0));
  (void)s->Schedule(0);
  ASSERT_TRUE(s->Submit(DepthJob(5, 32, 40), 50));
  ASSERT_TRUE(s->Submit(DepthJob(7, 32, 20), 50));
  ASSERT_TRUE(s->Submit(DepthJob(6, 32, 20), 50));
  (void)s->Schedule(50);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{6, 7, 5}));
  ASSERT_TRUE(s->JobEnded(1, 100, true));
  (void)s->Schedule(100);
  EXPECT_EQ(s->job(6)->state, JobState::kRunning);
  EXPECT_EQ(s->job(7)->state, JobState::kPending);
  EXPECT_EQ(s->job(5)->state, JobState::kPending);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{7, 5}));
}

// A topped job reorders its user's jobs, which the kept order does not know: the pass orders
// every pending job then, and reads the kept order again once no topped job is pending.
TEST_P(SlurmDepth, ATopPassOrdersTheQueueAnew) {
  auto s = MakeSlurmLike(GetParam(), 1, 1);
  ASSERT_TRUE(s->Submit(DepthJob(1, 32), 0));
  (void)s->Schedule(0);
  ASSERT_TRUE(s->Submit(DepthJob(2, 32), 1));
  ASSERT_TRUE(s->Submit(DepthJob(3, 32), 2));
  ASSERT_TRUE(s->Top(3, 3));
  const uint64_t before = s->kept_order_passes();
  (void)s->Schedule(3);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{3, 2}));
  EXPECT_EQ(s->kept_order_passes(), before) << "not in the kept order";
  ASSERT_TRUE(s->JobEnded(1, 100, true));
  (void)s->Schedule(100);
  EXPECT_EQ(s->job(3)->state, JobState::kRunning) << "the topped job first";
  ASSERT_TRUE(s->Submit(DepthJob(4, 32), 101));
  (void)s->Schedule(101);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{2, 4}));
  EXPECT_EQ(s->kept_order_passes(), before + (GetParam() ? 1 : 0));
}

INSTANTIATE_TEST_SUITE_P(KeptFifoOrder, SlurmDepth, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "Kept" : "OrderedEachPass"; });

}  // namespace
}  // namespace phalanx
