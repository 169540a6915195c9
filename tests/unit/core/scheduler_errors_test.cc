// The error codes of the Scheduler's events (scheduler.h, contract 3): callers such as phalanxd
// branch on them, so each kind of failure is pinned here, with its message.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::DemoScheduler;

JobSpec ErrJob(JobId id, uint32_t gpus = 8) {
  JobSpec j;
  j.id = id;
  j.user = "alice";
  j.account = "lab";
  j.shape.gpus = gpus;
  j.walltime = 1000;
  return j;
}

// The code of a failed Status, and "ok" when it did not fail.
std::string Code(const Status& s) { return s ? "ok" : std::string(ErrorCodeName(s.error().code)); }

TEST(SchedulerErrors, UnknownJobsAndNodesAreNotFound) {
  auto s = DemoScheduler();
  EXPECT_EQ(Code(s->Cancel(9, 0)), "NOT_FOUND");
  EXPECT_EQ(s->Cancel(9, 0).error().ToString(), "job 9: cancel: unknown job");
  EXPECT_EQ(Code(s->Hold(9, 0)), "NOT_FOUND");
  EXPECT_EQ(Code(s->Release(9, 0)), "NOT_FOUND");
  EXPECT_EQ(Code(s->Update(9, {.name = "x"}, 0)), "NOT_FOUND");
  EXPECT_EQ(Code(s->JobEnded(9, 0, true)), "NOT_FOUND");
  EXPECT_EQ(Code(s->CheckpointDone(9, 0, 1, "/ckpt")), "NOT_FOUND");
  const Status node = s->SetNodeState("no-such-node", NodeState::kDown, 0);
  EXPECT_EQ(Code(node), "NOT_FOUND");
  EXPECT_EQ(node.error().ToString(), "node no-such-node: unknown node");
  JobSpec dependent = ErrJob(2);
  dependent.after_ok = {1};
  const Status dep = s->Submit(dependent, 0);
  EXPECT_EQ(Code(dep), "NOT_FOUND");
  EXPECT_EQ(dep.error().ToString(), "job 2: after_ok: dependency on unknown job 1");
  EXPECT_EQ(Code(s->ValidateSpec(dependent)), "NOT_FOUND");
}

TEST(SchedulerErrors, EventsTheJobsStateForbidsAreFailedPreconditions) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(ErrJob(1), 0));
  const Status ended = s->JobEnded(1, 0, true);
  EXPECT_EQ(Code(ended), "FAILED_PRECONDITION");
  EXPECT_EQ(ended.error().ToString(), "job 1: job ended: job is pending");
  EXPECT_EQ(Code(s->CheckpointDone(1, 0, 1, "/ckpt")), "FAILED_PRECONDITION");
  EXPECT_EQ(Code(s->Release(1, 0)), "FAILED_PRECONDITION");
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(Code(s->Hold(1, 1)), "FAILED_PRECONDITION");
  ASSERT_TRUE(s->CheckpointDone(1, 2, 5, "/ckpt"));
  const Status stale = s->CheckpointDone(1, 3, 5, "/ckpt");
  EXPECT_EQ(Code(stale), "FAILED_PRECONDITION");
  EXPECT_EQ(stale.error().ToString(), "job 1: checkpoint epoch 5 is not newer than 5");
  ASSERT_TRUE(s->JobEnded(1, 4, true));
  const Status cancel = s->Cancel(1, 5);
  EXPECT_EQ(Code(cancel), "FAILED_PRECONDITION");
  EXPECT_EQ(cancel.error().ToString(), "job 1: cancel: already completed");
  EXPECT_EQ(Code(s->Update(1, {.name = "x"}, 5)), "FAILED_PRECONDITION");
}

TEST(SchedulerErrors, ARestoreInProgressIsAFailedPrecondition) {
  auto s = DemoScheduler();
  JobRecord r;
  r.spec = ErrJob(1);
  ASSERT_TRUE(s->Restore(r, 0));
  EXPECT_EQ(Code(s->Submit(ErrJob(2), 0)), "FAILED_PRECONDITION");
  EXPECT_EQ(Code(s->ValidateSpec(ErrJob(2))), "FAILED_PRECONDITION");
  EXPECT_EQ(Code(s->Hold(1, 0)), "FAILED_PRECONDITION");
  ASSERT_TRUE(s->FinishRestore(0));
  const auto again = s->FinishRestore(0);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(again.error().ToString(), "restore: no restore in progress");
}

TEST(SchedulerErrors, AKnownIdAlreadyExists) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(ErrJob(1), 0));
  const Status dup = s->Submit(ErrJob(1), 0);
  EXPECT_EQ(Code(dup), "ALREADY_EXISTS");
  EXPECT_EQ(dup.error().ToString(), "job 1: id 1: duplicate job id");
  EXPECT_EQ(Code(s->ValidateSpec(ErrJob(1))), "ALREADY_EXISTS");
  JobRecord r;
  r.spec = ErrJob(1);
  EXPECT_EQ(Code(s->Restore(r, 0)), "ALREADY_EXISTS");
}

TEST(SchedulerErrors, PendingJobLimitsAreResourceExhausted) {
  SchedulerConfig c;
  c.limits.default_user.max_pending_jobs = 1;
  c.limits.accounts["lab"].max_pending_jobs = 2;
  auto s = DemoScheduler(c);
  ASSERT_TRUE(s->Submit(ErrJob(1, 64), 0));  // larger than the cluster: stays pending
  const Status user = s->Submit(ErrJob(2), 0);
  EXPECT_EQ(Code(user), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(user.error().ToString(), "job 2: UserLimit: user alice has 1 pending jobs (max 1)");
  JobSpec bob = ErrJob(3, 64);
  bob.user = "bob";
  ASSERT_TRUE(s->Submit(bob, 0));
  JobSpec carol = ErrJob(4);
  carol.user = "carol";
  const Status account = s->ValidateSpec(carol);
  EXPECT_EQ(Code(account), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(account.error().ToString(), "job 4: AccountLimit: account lab has 2 pending jobs (max 2)");
}

TEST(SchedulerErrors, BadSpecsAndValuesAreInvalidArguments) {
  auto s = DemoScheduler();
  EXPECT_EQ(Code(s->Submit(ErrJob(0), 0)), "INVALID_ARGUMENT");
  EXPECT_EQ(Code(s->Submit(ErrJob(1, 0), 0)), "INVALID_ARGUMENT");
  JobSpec cls = ErrJob(1);
  cls.priority_class = "nope";
  EXPECT_EQ(Code(s->Submit(cls, 0)), "INVALID_ARGUMENT");
  EXPECT_EQ(Code(s->ValidateSpec(ErrJob(1, 1000))), "INVALID_ARGUMENT");  // can never fit
  ASSERT_TRUE(s->Submit(ErrJob(1), 10));
  EXPECT_EQ(Code(s->Hold(1, 5)), "INVALID_ARGUMENT");  // time going back
  EXPECT_EQ(Code(s->Update(1, {.walltime = -1}, 10)), "INVALID_ARGUMENT");
}

TEST(SchedulerErrors, AFailedEventChangesNothing) {
  SchedulerConfig c;
  c.limits.default_user.max_pending_jobs = 1;
  auto s = DemoScheduler(c);
  ASSERT_TRUE(s->Submit(ErrJob(1, 64), 0));
  ASSERT_FALSE(s->Submit(ErrJob(2), 0));
  ASSERT_FALSE(s->Submit(ErrJob(1), 0));
  EXPECT_EQ(s->jobs().size(), 1u);
  EXPECT_EQ(s->job(2), nullptr);
  EXPECT_EQ(s->CheckInvariants(), "");
}

}  // namespace
}  // namespace phalanx
