// The kept queue keys (SchedulerConfig::kept_queue_keys): a pass orders the queue from keys kept
// across passes and does not read the record of a job the last pass left waiting on Priority
// that still cannot start. What the Scheduler changes in a pending job (hold, release, a new
// class, walltime or partition) is seen by the next pass as if every record were read: the
// same reasons and the same queue with the keys kept and without.
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

// ideal-backfill (multifactor order, EASY, a pass at every call) on 2 leaves x 2 nodes x 8 GPUs.
std::unique_ptr<Scheduler> MakeIdeal(bool kept) {
  auto c = PolicyPreset("ideal-backfill");
  if (!c) throw std::runtime_error(c.error().ToString());
  c->kept_queue_keys = kept;
  auto s = Scheduler::Create(Build(TwoTier(2, 2)), std::move(*c));
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

JobSpec KeyJob(JobId id, uint32_t gpus, Time submit, Duration walltime = 3600) {
  JobSpec s;
  s.id = id;
  s.user = "alice";
  s.account = "lab";
  s.shape.gpus = gpus;
  s.walltime = walltime;
  s.submit = submit;
  return s;
}

WaitKind ReasonOf(const Scheduler& s, JobId id) { return s.job(id)->wait.kind; }

class KeptKeys : public ::testing::TestWithParam<bool> {};

TEST_P(KeptKeys, ChangesToAWaitingJobAreSeenAtTheNextPass) {
  auto s = MakeIdeal(GetParam());
  ASSERT_TRUE(s->Submit(KeyJob(1, 24, 0), 0));
  (void)s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);  // until 3600; one node free
  // Job 2 needs the whole cluster at 3600 (EASY's reservation): the 8-GPU jobs behind it would
  // run past that on the free node.
  ASSERT_TRUE(s->Submit(KeyJob(2, 32, 1), 1));
  for (JobId id = 3; id <= 6; ++id) ASSERT_TRUE(s->Submit(KeyJob(id, 8, 1 + static_cast<Time>(id), 7200), 1 + id));
  (void)s->Schedule(10);
  (void)s->Schedule(20);  // the waiting jobs' keys now say Priority
  EXPECT_EQ(ReasonOf(*s, 2), WaitKind::kResources);
  for (JobId id = 3; id <= 6; ++id) EXPECT_EQ(ReasonOf(*s, id), WaitKind::kPriority) << id;
  EXPECT_EQ(s->queue(), (std::vector<JobId>{2, 3, 4, 5, 6}));
  EXPECT_EQ(s->keyed_skips() > 0, GetParam()) << "jobs 4-6 fail as job 3 did";
  // Their records still show the priority of the last pass (it grows with their age).
  const double before = s->job(5)->priority;
  const uint64_t skips = s->keyed_skips();
  (void)s->Schedule(25);
  EXPECT_GT(s->job(5)->priority, before);
  EXPECT_EQ(s->keyed_skips() > skips, GetParam()) << "job 5 was not read";

  // Held: its reason at once and at every pass; released: Priority again at the next pass.
  ASSERT_TRUE(s->Hold(4, 30));
  (void)s->Schedule(30);
  EXPECT_EQ(ReasonOf(*s, 4), WaitKind::kHeld);
  ASSERT_TRUE(s->Release(4, 40));
  EXPECT_EQ(ReasonOf(*s, 4), WaitKind::kNone);
  (void)s->Schedule(40);
  EXPECT_EQ(ReasonOf(*s, 4), WaitKind::kPriority);

  // A shorter walltime: job 5 now ends before job 2's reservation and starts on the free node.
  ASSERT_TRUE(s->Update(5, {.walltime = 1800}, 50));
  (void)s->Schedule(50);
  EXPECT_EQ(s->job(5)->state, JobState::kRunning);
  EXPECT_EQ(ReasonOf(*s, 6), WaitKind::kPriority);

  // A higher class puts job 6 first: it takes EASY's reservation, job 2 waits behind it.
  ASSERT_TRUE(s->Update(6, {.priority_class = "high"}, 60));
  (void)s->Schedule(60);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{6, 2, 3, 4}));
  EXPECT_EQ(ReasonOf(*s, 6), WaitKind::kResources);
  EXPECT_EQ(ReasonOf(*s, 2), WaitKind::kPriority);
  EXPECT_GT(s->job(6)->priority, s->job(2)->priority);

  // A job that waits for its begin time keeps its reason.
  JobSpec later = KeyJob(7, 1, 70);
  later.begin = 1000;
  ASSERT_TRUE(s->Submit(later, 70));
  (void)s->Schedule(70);
  EXPECT_EQ(ReasonOf(*s, 7), WaitKind::kBeginTime);
  (void)s->Schedule(80);
  EXPECT_EQ(ReasonOf(*s, 7), WaitKind::kBeginTime);
}

// A node going down changes what every job can have: the keys are made anew, and a job that
// waited on Priority behind the reservation is seen as the other path sees it.
TEST_P(KeptKeys, ANodeDownMakesTheKeysAnew) {
  auto s = MakeIdeal(GetParam());
  ASSERT_TRUE(s->Submit(KeyJob(1, 32, 0), 0));
  (void)s->Schedule(0);
  for (JobId id = 2; id <= 5; ++id) ASSERT_TRUE(s->Submit(KeyJob(id, 8, static_cast<Time>(id)), static_cast<Time>(id)));
  (void)s->Schedule(10);
  (void)s->Schedule(20);
  const std::string node = s->topology().domain(s->topology().node_domain(NodeId(0))).name;
  ASSERT_TRUE(s->SetNodeState(node, NodeState::kDown, 30));  // job 1 is requeued
  (void)s->Schedule(30);
  EXPECT_EQ(s->job(1)->state, JobState::kPending);
  EXPECT_EQ(s->queue().front(), 1u) << "requeued: its old submit time and age put it first";
  size_t running = 0;
  for (JobId id = 2; id <= 5; ++id) running += s->job(id)->state == JobState::kRunning;
  EXPECT_EQ(running, 3u) << "24 GPUs up: three of the 8-GPU jobs start, the fourth waits";
}

INSTANTIATE_TEST_SUITE_P(OnAndOff, KeptKeys, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Kept" : "ReadEachPass"; });

}  // namespace
}  // namespace phalanx
