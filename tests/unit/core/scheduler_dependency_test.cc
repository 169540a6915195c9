// Dependencies (after, afterany, afterok, afternotok, singleton; ',' and '?'; array targets)
// and job arrays (%N, JobArrayTaskLimit) in the core: every kind met, waiting and never met (the
// job stays pending with DependencyNeverSatisfied, as Slurm without kill_invalid_depend), the
// submission checks, hold/release/update/cancel with dependencies, and arrays across a restore.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"
#include "util/dependency.h"

namespace phalanx {
namespace {

using testing::DemoScheduler;

JobSpec DepJob(JobId id, uint32_t gpus = 8, std::string name = "", std::string user = "alice") {
  JobSpec j;
  j.id = id;
  j.name = std::move(name);
  j.user = std::move(user);
  j.account = "lab";
  j.shape.gpus = gpus;
  j.walltime = 1000;
  return j;
}

JobSpec After(JobId id, const std::string& dependency, uint32_t gpus = 8) {
  JobSpec j = DepJob(id, gpus);
  auto d = ParseDependencies(dependency);
  if (!d) throw std::runtime_error(d.error().message);
  j.depends = *d;
  return j;
}

// Tasks first..first+n-1 of array `array`, indices 0..n-1.
void SubmitArray(Scheduler& s, JobId array, JobId first, uint32_t n, uint32_t max_running, Time now,
                 uint32_t gpus = 8) {
  for (uint32_t i = 0; i < n; ++i) {
    JobSpec t = DepJob(first + i, gpus);
    t.array_id = array;
    t.array_task = i;
    t.array_max_running = max_running;
    ASSERT_TRUE(s.Submit(t, now)) << "task " << i;
  }
}

std::string Wait(const Scheduler& s, JobId id) { return s.job(id)->wait.ToString(); }
JobState State(const Scheduler& s, JobId id) { return s.job(id)->state; }

TEST(SchedulerDependency, AfterOkFailedTargetLeavesThePendingJobNeverSatisfiedNotKilled) {
  auto s = DemoScheduler();
  Time now = 0;
  ASSERT_TRUE(s->Submit(DepJob(1), now));
  ASSERT_TRUE(s->Submit(After(2, "afterok:1"), now));
  s->Schedule(now);
  EXPECT_EQ(Wait(*s, 2), "Dependency(afterok:1)");
  now += 10;
  ASSERT_TRUE(s->JobEnded(1, now, false));
  for (const Decision& d : s->Schedule(now)) EXPECT_NE(d.kind, DecisionKind::kKill) << d.reason;
  EXPECT_EQ(State(*s, 2), JobState::kPending);
  EXPECT_EQ(Wait(*s, 2), "DependencyNeverSatisfied(afterok:1 (job 1 failed))");
  // The user cancels it, as in Slurm.
  ASSERT_TRUE(s->Cancel(2, now));
  EXPECT_EQ(State(*s, 2), JobState::kCancelled);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerDependency, EachKindIsMetWaitingOrNeverAsSlurmSays) {
  struct Case {
    std::string kind;
    bool target_ok;
    std::string after;  // the dependent's wait reason after the target ended ("" = it started)
  };
  const std::vector<Case> cases = {
      {"afterok", true, ""},     {"afterok", false, "DependencyNeverSatisfied(afterok:1 (job 1 failed))"},
      {"afterany", true, ""},    {"afterany", false, ""},
      {"afternotok", false, ""}, {"afternotok", true, "DependencyNeverSatisfied(afternotok:1 (job 1 completed))"},
      {"after", true, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.kind + (c.target_ok ? " ok" : " failed"));
    auto s = DemoScheduler();
    Time now = 0;
    ASSERT_TRUE(s->Submit(DepJob(1, 32), now));
    ASSERT_TRUE(s->Submit(After(2, c.kind + ":1"), now));
    s->Schedule(now);
    ASSERT_EQ(State(*s, 1), JobState::kRunning);
    if (c.kind == "after") {
      // Met once the target started: the dependent only waits for GPUs now.
      EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kResources) << Wait(*s, 2);
    } else {
      EXPECT_EQ(Wait(*s, 2), "Dependency(" + c.kind + ":1)");
    }
    now += 10;
    ASSERT_TRUE(s->JobEnded(1, now, c.target_ok));
    s->Schedule(now);
    if (c.after.empty()) {
      EXPECT_EQ(State(*s, 2), JobState::kRunning) << Wait(*s, 2);
    } else {
      EXPECT_EQ(State(*s, 2), JobState::kPending);
      EXPECT_EQ(Wait(*s, 2), c.after);
    }
  }
}

TEST(SchedulerDependency, AfterIsMetByACancelledPendingTarget) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(DepJob(1, 8), 0));
  ASSERT_TRUE(s->Hold(1, 0));
  ASSERT_TRUE(s->Submit(After(2, "after:1"), 0));
  s->Schedule(0);
  EXPECT_EQ(Wait(*s, 2), "Dependency(after:1)");
  ASSERT_TRUE(s->Cancel(1, 5));
  s->Schedule(5);
  EXPECT_EQ(State(*s, 2), JobState::kRunning) << Wait(*s, 2);
}

TEST(SchedulerDependency, AllOfWaitsForEveryItemAndAnyOfForOne) {
  auto s = DemoScheduler();
  Time now = 0;
  ASSERT_TRUE(s->Submit(DepJob(1, 8), now));
  ASSERT_TRUE(s->Submit(DepJob(2, 8), now));
  ASSERT_TRUE(s->Submit(After(3, "afterok:1,afterany:2"), now));
  ASSERT_TRUE(s->Submit(After(4, "afterok:1?afterok:2"), now));
  ASSERT_TRUE(s->Submit(After(5, "afterok:1?afterok:2"), now));
  s->Schedule(now);
  EXPECT_EQ(Wait(*s, 3), "Dependency(afterok:1)");
  now += 10;
  ASSERT_TRUE(s->JobEnded(1, now, false));
  s->Schedule(now);
  // One item never met: all-of is never met; any-of still waits for job 2.
  EXPECT_EQ(Wait(*s, 3), "DependencyNeverSatisfied(afterok:1 (job 1 failed))");
  EXPECT_EQ(Wait(*s, 4), "Dependency(afterok:2)");
  ASSERT_TRUE(s->Hold(5, now));  // kept out of the way; released after job 2 failed
  now += 10;
  ASSERT_TRUE(s->JobEnded(2, now, true));
  s->Schedule(now);
  EXPECT_EQ(State(*s, 4), JobState::kRunning) << Wait(*s, 4);
  EXPECT_EQ(Wait(*s, 5), "Held");
  ASSERT_TRUE(s->Release(5, now));
  s->Schedule(now);
  EXPECT_EQ(State(*s, 5), JobState::kRunning) << Wait(*s, 5);
}

TEST(SchedulerDependency, AnyOfIsNeverMetOnlyWhenEveryItemIsNever) {
  auto s = DemoScheduler();
  Time now = 0;
  ASSERT_TRUE(s->Submit(DepJob(1, 8), now));
  ASSERT_TRUE(s->Submit(DepJob(2, 8), now));
  ASSERT_TRUE(s->Submit(After(3, "afterok:1?afternotok:2"), now));
  s->Schedule(now);
  now += 10;
  ASSERT_TRUE(s->JobEnded(1, now, false));
  s->Schedule(now);
  EXPECT_EQ(Wait(*s, 3), "Dependency(afternotok:2)");
  ASSERT_TRUE(s->JobEnded(2, now, true));
  s->Schedule(now);
  EXPECT_EQ(Wait(*s, 3), "DependencyNeverSatisfied(afterok:1 (job 1 failed))");
}

TEST(SchedulerDependency, SingletonRunsOneJobPerUserAndName) {
  auto s = DemoScheduler();
  Time now = 0;
  ASSERT_TRUE(s->Submit(DepJob(1, 8, "train"), now));
  JobSpec two = After(2, "singleton");
  two.name = "train";
  JobSpec three = After(3, "singleton");
  three.name = "train";
  JobSpec bob = After(4, "singleton");
  bob.name = "train";
  bob.user = "bob";
  ASSERT_TRUE(s->Submit(two, now));
  ASSERT_TRUE(s->Submit(three, now));
  ASSERT_TRUE(s->Submit(bob, now));
  s->Schedule(now);
  EXPECT_EQ(State(*s, 1), JobState::kRunning);
  EXPECT_EQ(Wait(*s, 2), "Dependency(singleton)");
  EXPECT_EQ(Wait(*s, 3), "Dependency(singleton)");
  EXPECT_EQ(State(*s, 4), JobState::kRunning) << "another user's job of the same name";
  now += 10;
  ASSERT_TRUE(s->JobEnded(1, now, true));
  s->Schedule(now);
  // One of the two starts in this pass, not both.
  EXPECT_EQ(State(*s, 2), JobState::kRunning) << Wait(*s, 2);
  EXPECT_EQ(Wait(*s, 3), "Dependency(singleton)");
  // Renamed, job 3 is no longer behind the name.
  ASSERT_TRUE(s->Update(3, {.name = "eval"}, now));
  s->Schedule(now);
  EXPECT_EQ(State(*s, 3), JobState::kRunning) << Wait(*s, 3);
}

TEST(SchedulerDependency, HeldJobsSayHeldFirstAndWaitForTheirDependencyWhenReleased) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(DepJob(1, 8), 0));
  JobSpec two = After(2, "afterany:1");
  two.held = true;
  ASSERT_TRUE(s->Submit(two, 0));
  s->Schedule(0);
  EXPECT_EQ(Wait(*s, 2), "Held");
  ASSERT_TRUE(s->Release(2, 1));
  s->Schedule(1);
  EXPECT_EQ(Wait(*s, 2), "Dependency(afterany:1)");
  ASSERT_TRUE(s->JobEnded(1, 2, false));
  s->Schedule(2);
  EXPECT_EQ(State(*s, 2), JobState::kRunning);
}

TEST(SchedulerDependency, SubmissionsNameUnknownTargetsAndSelfDependencies) {
  auto s = DemoScheduler();
  ASSERT_TRUE(s->Submit(DepJob(1), 0));
  SubmitArray(*s, 10, 11, 3, 0, 0);
  const auto err = [&](const JobSpec& j) { return s->Submit(j, 0).error(); };
  EXPECT_EQ(err(After(5, "afterok:99")).code, ErrorCode::kNotFound);
  EXPECT_EQ(err(After(5, "afterok:99")).ToString(), "job 5: dependency afterok:99: dependency on unknown job 99");
  EXPECT_EQ(err(After(5, "afterany:10_7")).ToString(), "job 5: dependency afterany:10_7: array 10 has no task 7");
  EXPECT_EQ(err(After(5, "afterany:1_0")).ToString(), "job 5: dependency afterany:1_0: 1 is not an array");
  EXPECT_EQ(err(After(5, "after:5")).ToString(), "job 5: dependency after:5: a job cannot depend on itself");
  JobSpec task = After(20, "afterok:10");
  task.array_id = 10;
  task.array_task = 9;
  EXPECT_EQ(err(task).ToString(), "job 20: dependency afterok:10: a task cannot depend on its own array");
  JobSpec dup = DepJob(21);
  dup.array_id = 10;
  dup.array_task = 1;
  EXPECT_EQ(err(dup).code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(err(DepJob(10)).ToString(), "job 10: id 10 is an array's id");
  JobSpec on_job = DepJob(22);
  on_job.array_id = 1;
  EXPECT_EQ(err(on_job).ToString(), "job 22: array_id 1: a job's id, not an array's");
  // The same checks without submitting.
  EXPECT_EQ(s->ValidateSpec(After(5, "afterok:99")).error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(s->ValidateSpec(After(5, "afterok:10_2?afterany:1")));
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerArray, MaxRunningHoldsTheRestWithJobArrayTaskLimit) {
  auto s = DemoScheduler();
  Time now = 0;
  SubmitArray(*s, 100, 101, 6, 2, now, 4);  // 6 tasks of 4 GPUs, at most 2 at once
  s->Schedule(now);
  int running = 0;
  for (JobId id = 101; id <= 106; ++id) running += State(*s, id) == JobState::kRunning;
  EXPECT_EQ(running, 2);
  EXPECT_EQ(Wait(*s, 103), "JobArrayTaskLimit(2 of array 100 running (%2))");
  ASSERT_EQ(s->array_tasks(100)->size(), 6u);
  EXPECT_EQ(s->array_task_job(100, 4), 105u);
  EXPECT_EQ(s->array_task_job(100, 6), kNoJob);
  EXPECT_EQ(s->array_tasks(101), nullptr);
  // As tasks end, the next ones start, never more than 2 at a time.
  while (true) {
    std::vector<JobId> run;
    for (JobId id = 101; id <= 106; ++id)
      if (State(*s, id) == JobState::kRunning) run.push_back(id);
    EXPECT_LE(run.size(), 2u);
    if (run.empty()) break;
    now += 10;
    ASSERT_TRUE(s->JobEnded(run.front(), now, true));
    s->Schedule(now);
  }
  for (JobId id = 101; id <= 106; ++id) EXPECT_EQ(State(*s, id), JobState::kCompleted) << id;
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerArray, DependenciesOnAWholeArrayOrOneTask) {
  auto s = DemoScheduler();
  Time now = 0;
  SubmitArray(*s, 10, 11, 3, 0, now, 8);
  ASSERT_TRUE(s->Submit(After(20, "afterok:10"), now));
  ASSERT_TRUE(s->Submit(After(21, "afterok:10_1", 1), now));
  ASSERT_TRUE(s->Submit(After(22, "afternotok:10", 1), now));
  s->Schedule(now);
  now += 10;
  ASSERT_TRUE(s->JobEnded(12, now, true));  // task 1
  s->Schedule(now);
  EXPECT_EQ(State(*s, 21), JobState::kRunning) << Wait(*s, 21);
  EXPECT_EQ(Wait(*s, 20), "Dependency(afterok:10)");
  EXPECT_EQ(Wait(*s, 22), "Dependency(afternotok:10)");
  ASSERT_TRUE(s->JobEnded(11, now, true));
  ASSERT_TRUE(s->JobEnded(13, now, false));  // task 2 failed
  s->Schedule(now);
  EXPECT_EQ(Wait(*s, 20), "DependencyNeverSatisfied(afterok:10 (task 2 (job 13) failed))");
  EXPECT_EQ(State(*s, 22), JobState::kRunning) << "every task ended, one not ok: " << Wait(*s, 22);
}

TEST(SchedulerArray, AfterNotOkOnAnArrayWhoseTasksAllCompletedIsNeverMet) {
  auto s = DemoScheduler();
  SubmitArray(*s, 10, 11, 2, 0, 0, 8);
  ASSERT_TRUE(s->Submit(After(20, "afternotok:10", 1), 0));
  s->Schedule(0);
  ASSERT_TRUE(s->JobEnded(11, 5, true));
  ASSERT_TRUE(s->JobEnded(12, 5, true));
  s->Schedule(5);
  EXPECT_EQ(Wait(*s, 20), "DependencyNeverSatisfied(afternotok:10 (every task of array 10 completed))");
}

TEST(SchedulerArray, RestoreKeepsArrayMembershipAndDropsUnknownTargets) {
  auto a = DemoScheduler();
  SubmitArray(*a, 10, 11, 4, 1, 0, 8);
  ASSERT_TRUE(a->Submit(DepJob(15), 0));
  ASSERT_TRUE(a->Submit(After(20, "afterok:10_3,afterany:15"), 0));
  a->Schedule(0);
  auto b = DemoScheduler();
  // In reverse order (task 3 before the others: the array keeps its tasks by index), job 15 lost.
  for (auto it = a->jobs().rbegin(); it != a->jobs().rend(); ++it) {
    if (it->first == 15) continue;
    ASSERT_TRUE(b->Restore(it->second, 1)) << it->first;
  }
  auto notes = b->FinishRestore(1);
  ASSERT_TRUE(notes);
  ASSERT_EQ(notes->size(), 1u);
  EXPECT_EQ(notes->front(), "job 20: dependency afterany:15 on an unknown job lifted");
  EXPECT_EQ(b->job(20)->spec.depends.items.size(), 1u);
  ASSERT_EQ(b->array_tasks(10)->size(), 4u);
  EXPECT_EQ(b->array_task_job(10, 3), 14u);
  b->Schedule(1);
  int running = 0;
  for (JobId id = 11; id <= 14; ++id) running += b->job(id)->state == JobState::kRunning;
  EXPECT_EQ(running, 1) << "%1 after the restart";
  EXPECT_EQ(b->CheckInvariants(), "");
}

}  // namespace
}  // namespace phalanx
