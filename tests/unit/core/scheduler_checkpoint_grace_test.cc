// Per-job checkpoint grace (JobSpec::checkpoint_grace, the API's checkpoint_warning_s): the
// deadline of a checkpoint request is the job's own grace after the signal, or the config's
// checkpoint_grace when the job leaves it 0; a negative one is refused by name.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::DemoScheduler;

JobSpec GraceJob(JobId id, uint32_t gpus, Duration grace, std::string cls = "") {
  JobSpec j;
  j.id = id;
  j.user = "alice";
  j.shape.gpus = gpus;
  j.walltime = 20000;
  j.priority_class = std::move(cls);
  j.checkpoint_grace = grace;
  return j;
}

// Checkpoint decisions by job: their deadlines.
std::map<JobId, Time> CheckpointDeadlines(const std::vector<Decision>& ds) {
  std::map<JobId, Time> out;
  for (const Decision& d : ds) {
    if (d.kind == DecisionKind::kCheckpoint) out[d.job] = d.deadline;
  }
  return out;
}

TEST(SchedulerCheckpointGrace, PreemptionDeadlinesFollowEachVictimsGrace) {
  auto s = DemoScheduler();  // checkpoint_grace 300
  ASSERT_EQ(s->config().checkpoint_grace, 300);
  ASSERT_TRUE(s->Submit(GraceJob(1, 16, 45, "low"), 0));
  ASSERT_TRUE(s->Submit(GraceJob(2, 16, 0, "low"), 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  // An urgent job needs the whole cluster once the victims ran long enough to be preempted.
  ASSERT_TRUE(s->Submit(GraceJob(3, 32, 0, "urgent"), 1000));
  const auto deadlines = CheckpointDeadlines(s->Schedule(1000));
  ASSERT_EQ(deadlines.size(), 2u);
  EXPECT_EQ(deadlines.at(1), 1000 + 45) << "job 1's own grace";
  EXPECT_EQ(deadlines.at(2), 1000 + 300) << "job 2 has none: the config's";
  EXPECT_EQ(s->job(1)->checkpoint_deadline, 1045);
  EXPECT_EQ(s->job(2)->checkpoint_deadline, 1300);
  // GraceJob 1 lets its own deadline pass: preempted then, while job 2 still has time.
  s->Schedule(1046);
  EXPECT_EQ(s->job(1)->state, JobState::kPending);
  EXPECT_EQ(s->job(2)->state, JobState::kCheckpointing);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerCheckpointGrace, PeriodicCheckpointDeadlinesFollowEachJobsGrace) {
  SchedulerConfig config;
  config.periodic_checkpoint = 100;
  config.checkpoint_grace = 120;
  auto s = DemoScheduler(config);
  ASSERT_TRUE(s->Submit(GraceJob(1, 8, 30), 0));
  ASSERT_TRUE(s->Submit(GraceJob(2, 8, 0), 0));
  ASSERT_TRUE(s->Submit(GraceJob(3, 8, 500), 0));
  s->Schedule(0);
  const auto deadlines = CheckpointDeadlines(s->Schedule(100));
  ASSERT_EQ(deadlines.size(), 3u);
  EXPECT_EQ(deadlines.at(1), 130);
  EXPECT_EQ(deadlines.at(2), 220);
  EXPECT_EQ(deadlines.at(3), 600);
}

TEST(SchedulerCheckpointGrace, NegativeGraceIsRefusedByName) {
  auto s = DemoScheduler();
  const Status v = s->ValidateSpec(GraceJob(1, 8, -5));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("checkpoint_grace: negative (-5s)"), std::string::npos) << v.error().ToString();
  EXPECT_FALSE(s->Submit(GraceJob(1, 8, -5), 0));
  EXPECT_TRUE(s->ValidateSpec(GraceJob(1, 8, 0)));
  EXPECT_TRUE(s->ValidateSpec(GraceJob(1, 8, 60)));
}

}  // namespace
}  // namespace phalanx
