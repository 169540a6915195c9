// gcancel's job ids (job_target.h) and gq's collapsed array rows (job_table.h CollapseArrayTasks).
#include "job_target.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job_table.h"

namespace phalanx::cli {
namespace {

std::string Targets(std::string_view text) {
  auto t = ParseJobTargets(text);
  if (!t) return "error: " + t.error().message;
  std::string out;
  for (const JobTarget& x : *t) out += (out.empty() ? "" : " ") + x.ToString();
  return out;
}

TEST(JobTargets, JobsArraysAndTasks) {
  EXPECT_EQ(Targets("1234"), "1234");
  EXPECT_EQ(Targets("1234_7"), "1234_7");
  EXPECT_EQ(Targets("1234_[1-3]"), "1234_1 1234_2 1234_3");
  EXPECT_EQ(Targets("1234_[0,4-5]"), "1234_0 1234_4 1234_5");
  EXPECT_EQ(Targets("x"), "error: 'x' is not a job id (ID, ID_TASK or ID_[TASKS])");
  EXPECT_EQ(Targets("0"), "error: '0' is not a job id (ID, ID_TASK or ID_[TASKS])");
  EXPECT_EQ(Targets("12_x"), "error: '12_x' is not a job id (ID, ID_TASK or ID_[TASKS])");
  EXPECT_EQ(Targets("12_[1-3"), "error: '12_[1-3' is not a job id (ID, ID_TASK or ID_[TASKS])");
  EXPECT_EQ(Targets("12_[3-1]"),
            "error: '12_[3-1]' is not a job id (ID, ID_TASK or ID_[TASKS]): '3-1': the range ends before it starts");
  EXPECT_EQ(Targets("12_[1-3%2]"), "error: '12_[1-3%2]' is not a job id (ID, ID_TASK or ID_[TASKS]): no %N here");
}

v1::Job Task(uint64_t id, uint64_t array, uint32_t task, v1::JobState state) {
  v1::Job j;
  j.set_id(id);
  j.set_array_job_id(array);
  j.set_array_task_id(task);
  j.set_state(state);
  j.mutable_spec()->set_array("0-99%8");
  return j;
}

TEST(JobTableArrays, PendingTasksCollapseIntoOneRowLikeSqueue) {
  std::vector<v1::Job> jobs;
  jobs.push_back(Task(1235, 1234, 0, v1::JOB_STATE_RUNNING));
  jobs.push_back(Task(1236, 1234, 1, v1::JOB_STATE_RUNNING));
  for (uint32_t t = 8; t <= 99; ++t) jobs.push_back(Task(1235 + t, 1234, t, v1::JOB_STATE_PENDING));
  v1::Job plain;
  plain.set_id(7);
  plain.set_state(v1::JOB_STATE_PENDING);
  jobs.push_back(plain);
  jobs.push_back(Task(2001, 2000, 3, v1::JOB_STATE_PENDING));  // a task alone keeps its own id
  CollapseArrayTasks(jobs);
  ASSERT_EQ(jobs.size(), 5u);
  EXPECT_EQ(JobFieldValue(jobs[0], 'i', 0), "1234_0");
  EXPECT_EQ(JobFieldValue(jobs[1], 'i', 0), "1234_1");
  EXPECT_EQ(JobFieldValue(jobs[2], 'i', 0), "1234_[8-99%8]");
  EXPECT_EQ(JobFieldValue(jobs[3], 'i', 0), "7");
  EXPECT_EQ(JobFieldValue(jobs[4], 'i', 0), "2000_3");
}

}  // namespace
}  // namespace phalanx::cli
