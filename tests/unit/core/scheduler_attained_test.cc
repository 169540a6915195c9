// Attained-service priority (order=attained, Tiresias' discretised least-attained-service
// queues) with preemption for service, on gen:demo (4 nodes x 8 GPUs): a short job in a higher
// queue preempts a long job in a lower one through the checkpoint protocol; not before the
// victim's minimum run; never a job larger than itself; no ping-pong; the attained service
// survives a requeue and a restore.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/sched/policy/service_queue.h"
#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::DemoScheduler;

// Queue 0 below 1,000 GPU-s, queue 1 below 100,000, queue 2 beyond; preemption for service
// after 600 s of a run.
SchedulerConfig AttainedConfig() {
  SchedulerConfig c;
  c.order = QueueOrder::kAttained;
  c.service_queues = {1000, 100000};
  c.service_min_run = 600;
  c.weights.fairshare = 0;
  return c;
}

JobSpec Job(JobId id, uint32_t gpus, Duration walltime = 100000) {
  JobSpec j;
  j.id = id;
  j.user = "alice";
  j.account = "lab";
  j.shape.gpus = gpus;
  j.walltime = walltime;
  return j;
}

std::vector<Decision> Of(const std::vector<Decision>& ds, DecisionKind kind, JobId job = kNoJob) {
  std::vector<Decision> out;
  for (const Decision& d : ds) {
    if (d.kind == kind && (job == kNoJob || d.job == job)) out.push_back(d);
  }
  return out;
}

uint32_t Queue(const Scheduler& s, JobId id, Time now) {
  return ServiceQueue(s.config().service_queues, *s.job(id), now);
}

TEST(SchedulerAttained, AShortJobInAHigherQueuePreemptsALongLowQueueJob) {
  auto s = DemoScheduler(AttainedConfig());
  ASSERT_TRUE(s->Submit(Job(1, 32), 0));
  ASSERT_EQ(Of(s->Schedule(0), DecisionKind::kStart, 1).size(), 1u);
  // At 700 s the long job has 32 x 700 GPU-s: queue 1. A new job of the same size (queue 0)
  // waits.
  ASSERT_TRUE(s->Submit(Job(2, 32, 600), 700));
  EXPECT_EQ(Queue(*s, 1, 700), 1u);
  EXPECT_EQ(Queue(*s, 2, 700), 0u);
  const auto ds = s->Schedule(700);
  const auto ckpt = Of(ds, DecisionKind::kCheckpoint, 1);
  ASSERT_EQ(ckpt.size(), 1u);
  EXPECT_EQ(ckpt[0].reason, "preempt for job 2");
  EXPECT_EQ(s->job(1)->state, JobState::kCheckpointing);
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kPreempting);
  // The victim checkpoints, is requeued and the short job starts on its GPUs.
  ASSERT_TRUE(s->CheckpointDone(1, 730, 1, "/ckpt/1"));
  const auto after = s->Schedule(730);
  ASSERT_EQ(Of(after, DecisionKind::kPreempt, 1).size(), 1u);
  ASSERT_EQ(Of(after, DecisionKind::kStart, 2).size(), 1u);
  EXPECT_EQ(s->job(1)->state, JobState::kPending);
  EXPECT_EQ(s->job(1)->preemptions, 1u);
  // Its service is kept while it waits (32 GPUs x 730 s), and it resumes after the short job.
  EXPECT_DOUBLE_EQ(AttainedService(*s->job(1), 1000), 32.0 * 730);
  ASSERT_TRUE(s->JobEnded(2, 1000, true));
  const auto resumed = Of(s->Schedule(1000), DecisionKind::kStart, 1);
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_NE(resumed[0].reason.find("resume from checkpoint 1"), std::string::npos) << resumed[0].reason;
  // The restart goes on from its count: 730 s before, 500 s since.
  EXPECT_DOUBLE_EQ(AttainedService(*s->job(1), 1500), 32.0 * (730 + 500));
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerAttained, NoPreemptionForServiceBeforeTheMinimumRun) {
  auto s = DemoScheduler(AttainedConfig());
  ASSERT_TRUE(s->Submit(Job(1, 32), 0));
  s->Schedule(0);
  // Queue 1 after 32 s, but it has run only 100 s.
  ASSERT_TRUE(s->Submit(Job(2, 32, 600), 100));
  ASSERT_EQ(Queue(*s, 1, 100), 1u);
  for (Time t : {100, 300, 599}) {
    EXPECT_TRUE(Of(s->Schedule(t), DecisionKind::kCheckpoint).empty()) << "at " << t;
    EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  }
  const auto ckpt = Of(s->Schedule(600), DecisionKind::kCheckpoint, 1);
  ASSERT_EQ(ckpt.size(), 1u) << "the minimum run has passed";
  EXPECT_EQ(ckpt[0].reason, "preempt for job 2");
}

// A job preempts for service no job larger than itself: requeued in a low queue, the larger job
// would wait to restart for a block of its size behind every newer job. Smaller or equal ones it
// may take, and the cheapest of those goes first.
TEST(SchedulerAttained, NoPreemptionForServiceOfALargerJob) {
  auto s = DemoScheduler(AttainedConfig());
  ASSERT_TRUE(s->Submit(Job(1, 16), 0));  // node[0-1]
  ASSERT_TRUE(s->Submit(Job(2, 8), 0));
  ASSERT_TRUE(s->Submit(Job(3, 8), 0));
  ASSERT_EQ(Of(s->Schedule(0), DecisionKind::kStart).size(), 3u);
  // Past the minimum run all three are in queue 1 (16 x 700 and 8 x 700 GPU-s). A 12-GPU job
  // (queue 0) may take neither the 16-GPU job nor, since each frees only 8, a single 8-GPU one:
  // it needs both 8-GPU jobs, and takes them.
  ASSERT_TRUE(s->Submit(Job(4, 12, 600), 700));
  ASSERT_EQ(Queue(*s, 1, 700), 1u);
  ASSERT_EQ(Queue(*s, 2, 700), 1u);
  const auto ckpt = Of(s->Schedule(700), DecisionKind::kCheckpoint);
  ASSERT_EQ(ckpt.size(), 2u);
  for (const Decision& d : ckpt) {
    EXPECT_TRUE(d.job == 2 || d.job == 3) << d.job;
    EXPECT_EQ(d.reason, "preempt for job 4");
  }
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  // A 4-GPU job (queue 0) behind it finds no victim of its size or smaller: the only one left
  // holds 16 GPUs. It waits for GPUs, whatever the time.
  ASSERT_TRUE(s->Submit(Job(5, 4, 600), 700));
  for (Time t : {800, 5000, 50000}) {
    EXPECT_TRUE(Of(s->Schedule(t), DecisionKind::kCheckpoint, 1).empty()) << "at " << t;
    EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  }
  EXPECT_EQ(s->CheckInvariants(), "");
}

// The victims are listed once per class, service queue and pass, for preemptors of any size: a
// 1-GPU job that may take none (both running jobs are larger) does not keep a 2-GPU job of the
// same queue behind it in the same pass from taking the 2-GPU one (PassState::Victims).
TEST(SchedulerAttained, AVictimTooLargeForOnePreemptorIsTakenByALargerOneInTheSamePass) {
  SchedulerConfig c = AttainedConfig();
  c.weights.job_size = 0;  // the older, smaller job 3 asks first
  auto s = DemoScheduler(c);
  ASSERT_TRUE(s->Submit(Job(1, 2), 0));
  ASSERT_TRUE(s->Submit(Job(2, 30), 0));
  ASSERT_EQ(Of(s->Schedule(0), DecisionKind::kStart).size(), 2u);
  JobSpec one = Job(3, 1, 600);
  one.shape.fit = FitMode::kRequire;  // another shape: the pass's failed preemptions do not cover job 4
  one.shape.level = Level::kNode;
  ASSERT_TRUE(s->Submit(one, 699));
  ASSERT_TRUE(s->Submit(Job(4, 2, 600), 700));
  ASSERT_EQ(Queue(*s, 1, 700), 1u);
  ASSERT_EQ(Queue(*s, 3, 700), 0u);
  ASSERT_EQ(Queue(*s, 4, 700), 0u);
  const auto ckpt = Of(s->Schedule(700), DecisionKind::kCheckpoint);
  ASSERT_EQ(ckpt.size(), 1u);
  EXPECT_EQ(ckpt[0].job, 1u);
  EXPECT_EQ(ckpt[0].reason, "preempt for job 4");
  EXPECT_EQ(s->job(2)->state, JobState::kRunning);
  EXPECT_EQ(s->job(3)->state, JobState::kPending);
  EXPECT_NE(s->job(3)->wait.kind, WaitKind::kPreempting);
  EXPECT_EQ(s->CheckInvariants(), "");
}

// With placement under pressure a job waits for a good block rather than start on a slower one,
// so it preempts only for a good block: victims that free a slower one, however cheap, would
// leave it waiting on GPUs they gave up (Philly at 6x: 340k passes of 8-GPU preemptors waiting
// on claims they would not start on). Four 4-GPU jobs fill node0 and node1 (a 16-GPU job the
// other two); jobs 1 and 3, one on each node, have just checkpointed, so the two cheapest
// victims span two nodes. An 8-GPU job's good block is one node: it takes both jobs of one.
TEST(SchedulerAttained, APreemptorFreesOnlyABlockItWouldStartOn) {
  SchedulerConfig c = AttainedConfig();
  c.placement_comm_share = 0.15;
  auto s = DemoScheduler(c);
  for (JobId id : {1, 2, 3, 4}) ASSERT_TRUE(s->Submit(Job(id, 4), 0));
  ASSERT_TRUE(s->Submit(Job(5, 16), 0));
  ASSERT_EQ(Of(s->Schedule(0), DecisionKind::kStart).size(), 5u);
  const Topology& topo = s->topology();
  auto node_of = [&](JobId id) { return topo.node_of(s->job(id)->gpus.front()); };
  ASSERT_EQ(node_of(1), node_of(2));
  ASSERT_EQ(node_of(3), node_of(4));
  ASSERT_NE(node_of(1), node_of(3));
  ASSERT_TRUE(s->CheckpointDone(1, 650, 1, "/ckpt/1"));
  ASSERT_TRUE(s->CheckpointDone(3, 650, 1, "/ckpt/3"));
  ASSERT_TRUE(s->Submit(Job(6, 8, 600), 700));
  ASSERT_EQ(Queue(*s, 1, 700), 1u);
  const auto ckpt = Of(s->Schedule(700), DecisionKind::kCheckpoint);
  ASSERT_EQ(ckpt.size(), 2u);
  EXPECT_EQ(node_of(ckpt[0].job), node_of(ckpt[1].job)) << "jobs " << ckpt[0].job << " and " << ckpt[1].job;
  // Once both have checkpointed, it starts there at once: on one node, not held back.
  const NodeId node = node_of(ckpt[0].job);
  ASSERT_TRUE(s->CheckpointDone(ckpt[0].job, 730, 2, "/ckpt/a"));
  ASSERT_TRUE(s->CheckpointDone(ckpt[1].job, 730, 2, "/ckpt/b"));
  const auto start = Of(s->Schedule(730), DecisionKind::kStart, 6);
  ASSERT_EQ(start.size(), 1u);
  for (GpuId g : start[0].gpus) EXPECT_EQ(topo.node_of(g), node);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerAttained, WithoutAttainedOrderAJobOfTheSameClassPreemptsNothing) {
  SchedulerConfig c = AttainedConfig();
  c.order = QueueOrder::kPriority;
  auto s = DemoScheduler(c);
  ASSERT_TRUE(s->Submit(Job(1, 32), 0));
  s->Schedule(0);
  ASSERT_TRUE(s->Submit(Job(2, 8, 600), 700));
  for (Time t : {700, 5000, 50000}) EXPECT_TRUE(Of(s->Schedule(t), DecisionKind::kCheckpoint).empty()) << t;
}

// Two whole-cluster jobs: each preemption needs the victim in a strictly higher queue than the
// preemptor, and a pending job's queue does not move, so they trade the cluster at most once per
// threshold; never twice within the minimum run.
TEST(SchedulerAttained, NoPingPongBetweenTwoLongJobs) {
  auto s = DemoScheduler(AttainedConfig());
  ASSERT_TRUE(s->Submit(Job(1, 32), 0));
  ASSERT_TRUE(s->Submit(Job(2, 32), 0));
  std::vector<Decision> preempts;
  std::vector<Time> starts;
  for (Time t = 0; t <= 40000; t += 50) {
    for (JobId id : {1, 2}) {
      // A victim answers the checkpoint signal at the next step, 50 s after it.
      const JobRecord* j = s->job(id);
      if (j->state == JobState::kCheckpointing) {
        ASSERT_TRUE(s->CheckpointDone(id, t, j->checkpoint_epoch + 1, "/ckpt"));
      }
    }
    for (const Decision& d : s->Schedule(t)) {
      if (d.kind == DecisionKind::kPreempt) preempts.push_back(d);
      if (d.kind == DecisionKind::kStart) starts.push_back(t);
    }
  }
  // Job 2 (queue 0) takes the cluster from job 1 (queue 1) at 600 s (started at 650); job 1
  // (service 32 x 650, queue 1) takes it back once job 2 has passed 100,000 GPU-s (queue 2, at
  // 3,800 s); then job 1 runs on into queue 2 and, equal, neither preempts again.
  ASSERT_EQ(preempts.size(), 2u);
  EXPECT_EQ(preempts[0].job, 1u);
  EXPECT_EQ(preempts[1].job, 2u);
  EXPECT_EQ(s->job(1)->preemptions, 1u);
  EXPECT_EQ(s->job(2)->preemptions, 1u);
  EXPECT_GE(preempts[1].at - preempts[0].at, 600);
  EXPECT_EQ(starts.size(), 3u);
  EXPECT_EQ(Queue(*s, 1, 40000), 2u);
  EXPECT_EQ(s->CheckInvariants(), "");
}

// A restarted daemon restores its records: the attained service comes back with them (the
// running job's count goes on from its service_until), and the queue order with it.
TEST(SchedulerAttained, RestoreKeepsTheAttainedServiceAndTheOrder) {
  auto s = DemoScheduler(AttainedConfig());
  ASSERT_TRUE(s->Submit(Job(1, 32), 0));
  s->Schedule(0);
  ASSERT_TRUE(s->Submit(Job(2, 32, 600), 700));
  s->Schedule(700);
  ASSERT_TRUE(s->CheckpointDone(1, 730, 1, "/ckpt/1"));
  s->Schedule(730);
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  // A third job, submitted after job 1, is in queue 0: ahead of job 1 (queue 1).
  ASSERT_TRUE(s->Submit(Job(3, 32, 600), 800));
  s->Schedule(800);

  auto r = DemoScheduler(AttainedConfig());
  for (const auto& [id, rec] : s->jobs()) ASSERT_TRUE(r->Restore(rec, 900)) << id;
  ASSERT_TRUE(r->FinishRestore(900));
  EXPECT_DOUBLE_EQ(AttainedService(*r->job(1), 900), 32.0 * 730);
  EXPECT_DOUBLE_EQ(AttainedService(*r->job(2), 900), 32.0 * (900 - 730));
  ASSERT_TRUE(r->JobEnded(2, 1000, true));
  const auto starts = Of(r->Schedule(1000), DecisionKind::kStart);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].job, 3u) << "queue 0 first";
  EXPECT_EQ(r->job(1)->state, JobState::kPending);
}

TEST(SchedulerAttained, ServiceQueueSettingsAreParsedAndCheckedByName) {
  SchedulerConfig c;
  ASSERT_TRUE(SetConfigOption(c, "order", "attained"));
  EXPECT_EQ(c.order, QueueOrder::kAttained);
  ASSERT_TRUE(SetConfigOption(c, "service_queues", "10/200.5/3000"));
  EXPECT_EQ(c.service_queues, (std::vector<double>{10, 200.5, 3000}));
  ASSERT_TRUE(SetConfigOption(c, "service_min_run", "120"));
  EXPECT_EQ(c.service_min_run, 120);
  const Status down = SetConfigOption(c, "service_queues", "10/5");
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().where, "service_queues");
  EXPECT_NE(down.error().message.find("'10/5'"), std::string::npos) << down.error().message;
  EXPECT_FALSE(SetConfigOption(c, "service_queues", "10/x"));
  EXPECT_FALSE(SetConfigOption(c, "service_queues", "0"));
  EXPECT_EQ(c.service_queues, (std::vector<double>{10, 200.5, 3000})) << "unchanged by a refusal";
  EXPECT_EQ(ServiceQueue(c.service_queues, 9.99), 0u);
  EXPECT_EQ(ServiceQueue(c.service_queues, 10), 1u);
  EXPECT_EQ(ServiceQueue(c.service_queues, 1e9), 3u);
}

}  // namespace
}  // namespace phalanx
