// Scheduler::WhatIfStart: the predicted start of a hypothetical job agrees with what the
// scheduler then does with the same job submitted for real, and the query changes nothing.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "scheduler_test_util.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::DemoScheduler;
using testing::Dump;
using testing::Job;
using Answer = Scheduler::WhatIfAnswer;

// gen:demo: spine > leaf0 (node0, node1), leaf1 (node2, node3), 8 GPUs a node.
SchedulerConfig Config() {
  SchedulerConfig c = testing::TestConfig();
  c.order = QueueOrder::kFifo;  // the real job, submitted last, is at the back of the queue
  c.preemption = false;
  return c;
}

JobSpec Shape(uint32_t gpus, Level level, Duration walltime = 600) {
  JobSpec s;
  s.shape.gpus = gpus;
  s.shape.level = level;
  s.shape.fit = level == Level::kCore ? FitMode::kAny : FitMode::kRequire;
  s.walltime = walltime;
  return s;
}

std::string Reservations(const Scheduler& s) {
  std::string out;
  for (const Reservation& r : s.reservations())
    out += std::to_string(r.job) + "@" + std::to_string(r.start) + "-" + std::to_string(r.end) + ":" +
           testing::Ids(r.gpus) + (r.for_preemption ? "p" : "") + " ";
  return out;
}

std::string Queue(const Scheduler& s) {
  std::string out;
  for (JobId id : s.queue()) out += std::to_string(id) + " ";
  for (const auto& [id, j] : s.jobs())
    out += std::string(WaitKindName(j.wait.kind)) + ":" + std::to_string(j.wait.predicted_start) + " ";
  return out;
}

// Asks the what-if on a scenario at `now`, checks that it changed nothing, then submits the
// same shape for real (job 100) to a second copy of the scenario built the same way and runs
// the pass at `now`: the job starts at the predicted time (now) or waits with it as its
// predicted start. Returns the answer.
Answer AskThenSubmit(const std::function<std::unique_ptr<Scheduler>()>& scenario, const JobSpec& shape, Time now) {
  auto s = scenario();
  const std::string before = Dump(*s) + "\n" + Reservations(*s) + "\n" + Queue(*s);
  auto a = s->WhatIfStart(shape, now);
  EXPECT_TRUE(a) << a.error().ToString();
  if (!a) return {};
  EXPECT_EQ(Dump(*s) + "\n" + Reservations(*s) + "\n" + Queue(*s), before) << "the what-if changed the scheduler";
  EXPECT_EQ(s->CheckInvariants(), "");

  JobSpec real = shape;
  real.id = 100;
  real.user = "bob";
  real.account = "lab";
  EXPECT_TRUE(s->Submit(real, now));
  s->Schedule(now);
  const JobRecord* j = s->job(100);
  EXPECT_NE(j, nullptr);
  if (j == nullptr) return *a;
  if (j->state == JobState::kRunning) {
    EXPECT_EQ(a->start, now) << "started now; the what-if said " << a->start;
    EXPECT_EQ(j->start, now);
    EXPECT_TRUE(a->promised);
  } else {
    EXPECT_EQ(j->state, JobState::kPending);
    EXPECT_NE(a->start, now) << "the what-if said now; the job waits: " << j->wait.ToString();
    if (a->promised) {
      EXPECT_EQ(j->wait.predicted_start, a->start) << j->wait.ToString();
    } else {
      // Not promised: the scheduler makes no reservation, so it predicts nothing.
      EXPECT_EQ(j->wait.predicted_start, kForever) << j->wait.ToString();
    }
    if (a->start == kForever) {
      EXPECT_EQ(j->wait.predicted_start, kForever);
    }
    EXPECT_EQ(j->wait.kind, a->wait) << j->wait.ToString();
  }
  EXPECT_EQ(s->CheckInvariants(), "");
  return *a;
}

// Jobs 1 (16 GPUs until 1000) and 2 (16 GPUs until 2000) fill the cluster, one leaf each;
// with `queued`, job 3 (all 32 GPUs, 1000 s) waits with a reservation at 2000-3000.
std::unique_ptr<Scheduler> Busy(bool queued, SchedulerConfig config = Config()) {
  auto s = DemoScheduler(std::move(config));
  JobSpec a = Job(1, 16);
  a.shape.level = Level::kLeaf;
  a.shape.fit = FitMode::kRequire;
  a.walltime = 1000;
  JobSpec b = a;
  b.id = 2;
  b.walltime = 2000;
  if (!s->Submit(a, 0) || !s->Submit(b, 0)) throw std::runtime_error("submit");
  s->Schedule(0);
  if (queued) {
    JobSpec c = Job(3, 32);
    c.walltime = 1000;
    if (!s->Submit(c, 5)) throw std::runtime_error("submit 3");
  }
  s->Schedule(10);
  return s;
}

TEST(SchedulerWhatIf, FreeNowStartsNow) {
  auto empty = [] { return DemoScheduler(Config()); };
  for (Level level : {Level::kNode, Level::kLeaf, Level::kSpine, Level::kCore}) {
    const uint32_t gpus = level == Level::kNode ? 8 : level == Level::kLeaf ? 16 : 32;
    const Answer a = AskThenSubmit(empty, Shape(gpus, level), 0);
    EXPECT_EQ(a.start, 0) << LevelName(level);
    EXPECT_EQ(a.wait, WaitKind::kNone);
  }
}

TEST(SchedulerWhatIf, BlockedUntilARunningJobsWalltimeEnds) {
  auto busy = [] { return Busy(false); };
  // Job 1's leaf frees at 1000: room for 8 within a node, 16 within a leaf; all 32 at 2000.
  EXPECT_EQ(AskThenSubmit(busy, Shape(8, Level::kNode), 10).start, 1000);
  EXPECT_EQ(AskThenSubmit(busy, Shape(16, Level::kLeaf), 10).start, 1000);
  EXPECT_EQ(AskThenSubmit(busy, Shape(24, Level::kSpine), 10).start, 2000);
  const Answer all = AskThenSubmit(busy, Shape(32, Level::kCore), 10);
  EXPECT_EQ(all.start, 2000);
  EXPECT_EQ(all.wait, WaitKind::kResources);
  EXPECT_TRUE(all.promised);
}

TEST(SchedulerWhatIf, BlockedBehindAReservation) {
  auto queued = [] { return Busy(true); };
  {
    auto s = queued();
    ASSERT_EQ(s->job(3)->wait.predicted_start, 2000) << s->job(3)->wait.ToString();
  }
  // A short job fits before job 3's reservation (1000-1500 on job 1's leaf): backfilled.
  EXPECT_EQ(AskThenSubmit(queued, Shape(16, Level::kLeaf, 500), 10).start, 1000);
  // A long one would overlap it: after job 3, at 3000.
  EXPECT_EQ(AskThenSubmit(queued, Shape(16, Level::kLeaf, 5000), 10).start, 3000);
  EXPECT_EQ(AskThenSubmit(queued, Shape(8, Level::kNode, 1500), 10).start, 3000);
}

// Free GPUs scattered over the nodes make no block (Reserve's walk skips the Placer while the
// free-GPU counts alone refuse, and must still stop at the first time that places): 3 GPUs free
// on every node (12 in all) from the start; node0's and node1's 1-GPU jobs end at 100 and 200,
// node2's 4-GPU job at 300.
std::unique_ptr<Scheduler> Scattered() {
  auto s = DemoScheduler(Config());
  const Duration big_end[] = {2000, 2000, 300, 2000};
  const Duration small_end[] = {100, 200, 2000, 2000};
  for (int node = 0; node < 4; ++node) {
    JobSpec big = Job(1 + node, 4), small = Job(5 + node, 1);
    big.walltime = big_end[node];
    small.walltime = small_end[node];
    big.nodelist = small.nodelist = {"node" + std::to_string(node)};
    if (!s->Submit(big, 0) || !s->Submit(small, 0)) throw std::runtime_error("submit");
  }
  s->Schedule(0);
  for (JobId id = 1; id <= 8; ++id) {
    if (s->job(id)->state != JobState::kRunning) throw std::runtime_error("not running: " + std::to_string(id));
  }
  return s;
}

TEST(SchedulerWhatIf, ScatteredFreeGpusMakeNoBlock) {
  auto scattered = [] { return Scattered(); };
  // 12 GPUs free now, but 3 on each node: a 5-GPU block in one node at 300 (node2: 7 free).
  EXPECT_EQ(AskThenSubmit(scattered, Shape(5, Level::kNode), 10).start, 300);
  // Any 5 GPUs: now.
  EXPECT_EQ(AskThenSubmit(scattered, Shape(5, Level::kCore), 10).start, 10);
  // Two nodes with 4 free in one leaf: node0 (100) and node1 (200), leaf0.
  JobSpec two = Shape(8, Level::kLeaf);
  two.shape.gpus = 0;
  two.shape.nodes = 2;
  two.shape.gpus_per_node = 4;
  EXPECT_EQ(AskThenSubmit(scattered, two, 10).start, 200);
  // 7 within a leaf: leaf0 has 6 free now, 7 at 100.
  EXPECT_EQ(AskThenSubmit(scattered, Shape(7, Level::kLeaf), 10).start, 100);
}

TEST(SchedulerWhatIf, MultifactorBehindAHigherClassJob) {
  // The default queue order: job 3 is of a higher class, so a new normal job queues behind it.
  auto queued = [] {
    SchedulerConfig c = testing::TestConfig();
    c.preemption = false;
    auto s = DemoScheduler(c);
    JobSpec a = Job(1, 16), b = Job(2, 16), h = Job(3, 32, "high");
    a.walltime = 1000;
    b.walltime = 2000;
    h.walltime = 1000;
    if (!s->Submit(a, 0) || !s->Submit(b, 0)) throw std::runtime_error("submit");
    s->Schedule(0);
    if (!s->Submit(h, 5)) throw std::runtime_error("submit 3");
    s->Schedule(10);
    return s;
  };
  EXPECT_EQ(AskThenSubmit(queued, Shape(16, Level::kLeaf, 5000), 10).start, 3000);
  EXPECT_EQ(AskThenSubmit(queued, Shape(8, Level::kCore, 900), 10).start, 1000);
}

TEST(SchedulerWhatIf, EasyBackfillPromisesOnlyTheFirstBlockedJob) {
  SchedulerConfig c = Config();
  c.backfill = BackfillMode::kEasy;
  auto queued = [c] { return Busy(true, c); };
  // Job 3 holds EASY's one reservation: the what-if's 3000 is no promise, and the real job
  // gets no predicted start.
  const Answer a = AskThenSubmit(queued, Shape(16, Level::kLeaf, 5000), 10);
  EXPECT_EQ(a.start, 3000);
  EXPECT_FALSE(a.promised);
  // One that starts now is always promised (it starts).
  auto empty = [c] { return DemoScheduler(c); };
  EXPECT_TRUE(AskThenSubmit(empty, Shape(8, Level::kNode), 0).promised);
}

TEST(SchedulerWhatIf, NeverWhenLargerThanAnyBlockOfTheLevel) {
  auto empty = [] { return DemoScheduler(Config()); };
  const Answer a = AskThenSubmit(empty, Shape(16, Level::kNode), 0);
  EXPECT_EQ(a.start, kForever);
  EXPECT_EQ(a.wait, WaitKind::kUnsatisfiable);
  EXPECT_NE(a.reason.find("node"), std::string::npos) << a.reason;
  EXPECT_EQ(AskThenSubmit(empty, Shape(24, Level::kLeaf), 0).start, kForever);
  EXPECT_EQ(AskThenSubmit(empty, Shape(33, Level::kCore), 0).start, kForever);
}

TEST(SchedulerWhatIf, NeverWhenEveryNodeIsDown) {
  auto down = [] {
    auto s = DemoScheduler(Config());
    for (int n = 0; n < 4; ++n) {
      if (!s->SetNodeState("node" + std::to_string(n), NodeState::kDown, 0)) throw std::runtime_error("down");
    }
    s->Schedule(0);
    return s;
  };
  const Answer a = AskThenSubmit(down, Shape(8, Level::kNode), 0);
  EXPECT_EQ(a.start, kForever);
  EXPECT_EQ(a.reason, "only 0 GPUs are on nodes that are up");
  EXPECT_EQ(AskThenSubmit(down, Shape(1, Level::kCore), 0).start, kForever);
}

TEST(SchedulerWhatIf, ManyShapesAtOnceAgreeWithOneAtATime) {
  auto s = Busy(true);
  std::vector<JobSpec> shapes = {Shape(8, Level::kNode), Shape(16, Level::kLeaf, 500), Shape(16, Level::kNode),
                                 Shape(32, Level::kCore, 5000)};
  const auto all = s->WhatIfStarts(shapes, 10);
  ASSERT_EQ(all.size(), shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto one = s->WhatIfStart(shapes[i], 10);
    ASSERT_TRUE(all[i] && one);
    EXPECT_EQ(all[i]->start, one->start) << i;
    EXPECT_EQ(all[i]->wait, one->wait) << i;
  }
  EXPECT_EQ(all[0]->start, 1000);
  EXPECT_EQ(all[1]->start, 1000);
  EXPECT_EQ(all[2]->start, kForever);
  EXPECT_EQ(all[3]->start, 3000);
}

TEST(SchedulerWhatIf, BadShapesAreErrorsNamingTheField) {
  auto s = DemoScheduler(Config());
  auto zero = s->WhatIfStart(Shape(0, Level::kNode), 0);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().message.find("gpus=0"), std::string::npos) << zero.error().ToString();
  JobSpec cls = Shape(8, Level::kNode);
  cls.priority_class = "nosuch";
  auto unknown = s->WhatIfStart(cls, 0);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("priority_class"), std::string::npos) << unknown.error().ToString();
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace phalanx
