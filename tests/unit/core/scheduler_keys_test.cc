// The kept queue keys (SchedulerConfig::kept_queue_keys): a pass orders the queue from keys kept
// across passes and does not read the record of a job the last pass left waiting on Priority
// that still cannot start. What the Scheduler changes in a pending job (hold, release, a new
// class, walltime or partition) is seen by the next pass as if every record were read: the
// same reasons and the same queue with the keys kept and without.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::TwoTier;

// ideal-backfill (multifactor order, EASY, a pass at every call) on 2 leaves x 2 nodes x 8 GPUs;
// with `depth`, Slurm's limits and backfill interval (slurm-like in multifactor order).
std::unique_ptr<Scheduler> MakeIdeal(bool kept, bool depth = false) {
  auto c = PolicyPreset("ideal-backfill");
  if (!c) throw std::runtime_error(c.error().ToString());
  c->kept_queue_keys = kept;
  if (depth) {
    c->backfill_interval = 30;
    c->backfill_max_jobs = 4;
    c->main_queue_depth = 2;
  }
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

// A job restored with a claim (made under a preempting policy before a restart) has its claim
// reserved first, which only the pass that reads every record does; once it has started and no
// pending job holds a claim, the keys are kept again.
TEST(KeptKeys, AreKeptAgainOnceNoRestoredClaimIsLeft) {
  auto s = MakeIdeal(true);
  JobRecord running;
  running.spec = KeyJob(1, 24, 0, 7200);
  running.state = JobState::kRunning;
  for (uint32_t g = 0; g < 24; ++g) running.gpus.push_back(GpuId(g));
  running.start = running.last_checkpoint = running.last_checkpoint_request = 0;
  running.walltime = running.run_walltime = 7200;
  JobRecord claimed;
  claimed.spec = KeyJob(2, 8, 1, 3600);
  claimed.walltime = 3600;
  for (uint32_t g = 24; g < 32; ++g) claimed.claim.push_back(GpuId(g));
  ASSERT_TRUE(s->Restore(running, 5));
  ASSERT_TRUE(s->Restore(claimed, 5));
  ASSERT_TRUE(s->FinishRestore(5));
  // Behind job 3 (the whole cluster, EASY's reservation), 8-GPU jobs that cannot start.
  ASSERT_TRUE(s->Submit(KeyJob(3, 32, 6), 6));
  for (JobId id = 4; id <= 9; ++id) ASSERT_TRUE(s->Submit(KeyJob(id, 8, static_cast<Time>(id)), 9));
  (void)s->Schedule(10);
  EXPECT_EQ(s->job(2)->state, JobState::kRunning) << "on its claim";
  (void)s->Schedule(20);  // reads every record, and finds no claim left
  (void)s->Schedule(30);  // makes the keys
  EXPECT_EQ(s->keyed_skips(), 0u);
  (void)s->Schedule(40);
  EXPECT_GT(s->keyed_skips(), 0u) << "jobs 5-9 fail as job 4 did, from their keys";
  for (JobId id = 4; id <= 9; ++id) EXPECT_EQ(ReasonOf(*s, id), WaitKind::kPriority) << id;
}

// Random events on two Schedulers, one with the keys kept and one reading every record: the
// same decisions (waits included), reasons, priorities and queue after every pass. Submissions
// (some with a begin time), ends, holds and releases, walltime and class updates, tops, cancels,
// nodes going down and up; ideal-backfill, and with Slurm's depth (where a held job read as
// waiting on Priority would count towards it).
TEST(KeptKeysRandom, SameAsEveryRecordReadUnderRandomEvents) {
  uint64_t skipped = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const bool depth = seed % 2 == 0;
    std::unique_ptr<Scheduler> sched[2] = {MakeIdeal(false, depth), MakeIdeal(true, depth)};
    std::mt19937_64 rng(seed);
    const auto pick = [&](uint64_t n) { return static_cast<uint32_t>(rng() % n); };
    const std::string classes[] = {"low", "normal", "high"};
    JobId next = 1;
    Time now = 0;
    for (int step = 0; step < 400; ++step) {
      now += pick(120);
      std::vector<JobId> pending, running;
      for (const auto& [id, job] : sched[0]->jobs()) {
        if (job.state == JobState::kPending) pending.push_back(id);
        if (job.state == JobState::kRunning) running.push_back(id);
      }
      const uint32_t op = pick(12);
      // Each event to both; the results must agree too.
      const auto both = [&](auto&& event) {
        const bool a = static_cast<bool>(event(*sched[0])), b = static_cast<bool>(event(*sched[1]));
        ASSERT_EQ(a, b) << "seed " << seed << " step " << step;
      };
      if (op < 4) {
        JobSpec j = KeyJob(next++, 1u << pick(5), now, 600 + 600 * static_cast<Duration>(pick(12)));
        j.user = "u" + std::to_string(pick(3));
        if (pick(8) == 0) j.begin = now + pick(2000);
        both([&](Scheduler& s) { return s.Submit(j, now); });
      } else if (op < 6 && !running.empty()) {
        const JobId id = running[pick(running.size())];
        both([&](Scheduler& s) { return s.JobEnded(id, now, true); });
      } else if (op == 6 && !pending.empty()) {
        const JobId id = pending[pick(pending.size())];
        const bool held = sched[0]->job(id)->spec.held;
        both([&](Scheduler& s) { return held ? s.Release(id, now) : s.Hold(id, now); });
      } else if (op == 7 && !pending.empty()) {
        const JobId id = pending[pick(pending.size())];
        Scheduler::JobUpdate u;
        if (pick(2) == 0) u.walltime = 300 + 300 * static_cast<Duration>(pick(20));
        else u.priority_class = classes[pick(3)];
        both([&](Scheduler& s) { return s.Update(id, u, now); });
      } else if (op == 8 && !pending.empty() && pick(4) == 0) {
        const JobId id = pending[pick(pending.size())];
        both([&](Scheduler& s) { return s.Top(id, now); });
      } else if (op == 9 && !pending.empty()) {
        const JobId id = pending[pick(pending.size())];
        both([&](Scheduler& s) { return s.Cancel(id, now); });
      } else if (op == 10 && pick(4) == 0) {
        const Topology& t = sched[0]->topology();
        const NodeId n(pick(static_cast<uint64_t>(t.node_count())));
        const std::string node = t.domain(t.node_domain(n)).name;
        const NodeState to = t.node_state(n) == NodeState::kUp ? NodeState::kDown : NodeState::kUp;
        both([&](Scheduler& s) { return s.SetNodeState(node, to, now); });
      }
      std::vector<std::string> log[2];
      for (int k = 0; k < 2; ++k) {
        for (const Decision& d : sched[k]->Schedule(now)) log[k].push_back(FormatDecision(d, sched[k]->topology()));
      }
      ASSERT_EQ(log[0], log[1]) << "seed " << seed << " step " << step;
      ASSERT_EQ(sched[0]->queue(), sched[1]->queue()) << "seed " << seed << " step " << step;
      for (JobId id : sched[0]->queue()) {
        const JobRecord &a = *sched[0]->job(id), &b = *sched[1]->job(id);
        ASSERT_EQ(a.wait.ToString(), b.wait.ToString()) << "seed " << seed << " step " << step << " job " << id;
        ASSERT_EQ(a.priority, b.priority) << "seed " << seed << " step " << step << " job " << id;
      }
    }
    skipped += sched[1]->keyed_skips();
  }
  EXPECT_GT(skipped, 1000u);
}

INSTANTIATE_TEST_SUITE_P(OnAndOff, KeptKeys, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Kept" : "ReadEachPass"; });

}  // namespace
}  // namespace phalanx
