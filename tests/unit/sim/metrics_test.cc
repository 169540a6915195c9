// The per-size and per-user tables of a simulated run (Summarize), on hand-made outcomes and on
// golden4.csv through the simulator, with every value computed by hand.
#include "sim/metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/topology/node_models.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace phalanx {
namespace {

JobOutcome Job(std::string user, uint32_t gpus, Time submit, Time start, Duration duration) {
  JobOutcome j;
  j.id = user + std::to_string(submit);
  j.user = std::move(user);
  j.gpus = gpus;
  j.submit = submit;
  j.duration = duration;
  j.first_start = start;
  j.end = start >= 0 ? start + duration : -1;
  j.state = start >= 0 ? JobState::kCompleted : JobState::kPending;
  return j;
}

const SizeBucket& Bucket(const Summary& s, std::string_view label) {
  for (const SizeBucket& b : s.wait_by_size) {
    if (b.label == label) return b;
  }
  ADD_FAILURE() << "no bucket " << label;
  return s.wait_by_size.front();
}

// 100 one-GPU jobs waiting 1..100 s (run 100 s each): the nearest-rank p99 is the 99th wait,
// not the largest; a 4-GPU job never started counts with the time waited until the run's end.
TEST(SimMetrics, SizeBucketQuantilesAndMax) {
  std::vector<JobOutcome> jobs;
  for (int i = 1; i <= 100; ++i) jobs.push_back(Job("u", 1, 0, i, 100));
  jobs.push_back(Job("v", 4, 50, -1, 10));
  RunCounters c;
  c.end = 1000;
  const Summary s = Summarize("p", jobs, {}, c, 8);
  const SizeBucket& one = Bucket(s, "1");
  EXPECT_EQ(one.jobs, 100u);
  EXPECT_EQ(one.finished, 100u);
  EXPECT_DOUBLE_EQ(one.avg_wait, 50.5);
  EXPECT_DOUBLE_EQ(one.p99_wait, 99);
  EXPECT_DOUBLE_EQ(one.max_wait, 100);
  EXPECT_DOUBLE_EQ(one.avg_jct, 150.5);  // wait + 100 s
  EXPECT_DOUBLE_EQ(one.p99_jct, 199);
  EXPECT_DOUBLE_EQ(one.max_jct, 200);
  const SizeBucket& four = Bucket(s, "2-4");
  EXPECT_EQ(four.jobs, 1u);
  EXPECT_EQ(four.finished, 0u);
  EXPECT_DOUBLE_EQ(four.avg_wait, 950);  // 1000 - 50: still waiting
  EXPECT_DOUBLE_EQ(four.p99_wait, 950);
  EXPECT_DOUBLE_EQ(four.max_wait, 950);
  EXPECT_DOUBLE_EQ(four.avg_jct, 0);
  EXPECT_DOUBLE_EQ(four.max_jct, 0);
  EXPECT_EQ(Bucket(s, ">64").jobs, 0u);
  EXPECT_DOUBLE_EQ(Bucket(s, ">64").p99_wait, 0);
}

// Users ranked by GPU-hours asked, the rest summed as "others"; Jain's index over the users'
// average bounded slowdowns (users with a finished job only).
TEST(SimMetrics, UsersTopNOthersAndJain) {
  const std::vector<JobOutcome> jobs = {
      Job("a", 8, 0, 0, 3600),     // 8 GPU-h, waits 0, bounded slowdown 1
      Job("a", 8, 0, 3600, 3600),  // 8 GPU-h, waits 3600, slowdown 2
      Job("b", 4, 0, 0, 3600),     // 4 GPU-h, slowdown 1
      Job("e", 2, 100, -1, 3600),  // 2 GPU-h, never started: waits 10000 - 100, no slowdown
      Job("c", 1, 0, 7200, 3600),  // 1 GPU-h, slowdown 3
      Job("d", 1, 0, 5, 5),        // slowdown max(1, 10 / max(5, 10)) = 1
  };
  RunCounters c;
  c.end = 10000;
  const Summary s = Summarize("p", jobs, {}, c, 16, /*top_users=*/2);
  EXPECT_EQ(s.users, 5u);
  ASSERT_EQ(s.by_user.size(), 3u);
  EXPECT_EQ(s.by_user[0].user, "a");
  EXPECT_EQ(s.by_user[0].jobs, 2u);
  EXPECT_DOUBLE_EQ(s.by_user[0].gpu_h, 16);
  EXPECT_DOUBLE_EQ(s.by_user[0].avg_wait, 1800);
  EXPECT_DOUBLE_EQ(s.by_user[0].avg_bounded_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(s.by_user[0].p99_wait, 3600);  // nearest rank of 2: the larger
  EXPECT_DOUBLE_EQ(s.by_user[0].max_wait, 3600);
  EXPECT_EQ(s.by_user[1].user, "b");
  EXPECT_DOUBLE_EQ(s.by_user[1].max_wait, 0);
  EXPECT_DOUBLE_EQ(s.by_user[1].gpu_h, 4);
  EXPECT_DOUBLE_EQ(s.by_user[1].avg_bounded_slowdown, 1);
  const UserRow& others = s.by_user[2];  // e, c, d
  EXPECT_EQ(others.user, "others");
  EXPECT_EQ(others.jobs, 3u);
  EXPECT_EQ(others.finished, 2u);
  EXPECT_DOUBLE_EQ(others.gpu_h, 2 + 1 + 5.0 / 3600);
  EXPECT_DOUBLE_EQ(others.avg_wait, (9900 + 7200 + 5) / 3.0);
  EXPECT_DOUBLE_EQ(others.avg_bounded_slowdown, (3 + 1) / 2.0);
  EXPECT_DOUBLE_EQ(others.max_wait, 9900);  // the waits of every user in the row
  EXPECT_DOUBLE_EQ(others.p99_wait, 9900);
  // Users a, b, c, d: slowdowns 1.5, 1, 3, 1.
  EXPECT_DOUBLE_EQ(s.jain_slowdown, 6.5 * 6.5 / (4 * 13.25));

  // All users listed when there are no more than top_users: no "others" row.
  EXPECT_EQ(Summarize("p", jobs, {}, c, 16, 5).by_user.size(), 5u);
  // Equal slowdowns are perfectly fair; no finished job at all counts as fair.
  EXPECT_DOUBLE_EQ(Summarize("p", {Job("x", 1, 0, 0, 100), Job("y", 1, 0, 0, 100)}, {}, c, 16).jain_slowdown, 1);
  EXPECT_DOUBLE_EQ(Summarize("p", {Job("x", 1, 0, -1, 100)}, {}, c, 16).jain_slowdown, 1);
}

// golden4.csv through the simulator (see simulator_test.cc, SimGolden.BackfillVersusFifo): j1
// (alice, 16 GPUs, 1000 s) and j2 (bob, 16, 2000 s) start at 0, j3 (alice, 32, 500 s) waits
// 1900 s, j4 (carol, 8, 300 s) waits 800 s. Users come from the trace; the tables reach the
// text and JSON reports.
TEST(SimMetrics, Golden4BySizeAndUser) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/traces/golden4.csv");
  std::stringstream ss;
  ss << in.rdbuf();
  auto trace = ReadTraceCsv(ss.str(), "golden4.csv");
  ASSERT_TRUE(trace) << trace.error().ToString();
  auto spec = GenerateByName("demo");
  ASSERT_TRUE(spec);
  auto config = PolicyPreset("phalanx");
  ASSERT_TRUE(config);
  auto r = Simulate(*trace, *spec, *config, {});
  ASSERT_TRUE(r) << r.error().ToString();
  const Summary s = Summarize(r->policy, r->jobs, r->series, r->counters, r->cluster_gpus);
  const SizeBucket& b16 = Bucket(s, "9-16");  // j1, j2
  EXPECT_DOUBLE_EQ(b16.avg_jct, 1500);
  EXPECT_DOUBLE_EQ(b16.p99_jct, 2000);
  EXPECT_DOUBLE_EQ(b16.max_jct, 2000);
  EXPECT_DOUBLE_EQ(b16.p99_wait, 0);
  EXPECT_DOUBLE_EQ(Bucket(s, "17-32").p99_wait, 1900);
  EXPECT_DOUBLE_EQ(Bucket(s, "17-32").max_jct, 2400);
  ASSERT_EQ(s.by_user.size(), 3u);
  // alice and bob both asked 32,000 GPU-seconds: by name.
  EXPECT_EQ(s.by_user[0].user, "alice");
  EXPECT_DOUBLE_EQ(s.by_user[0].gpu_h, 32000.0 / 3600);
  EXPECT_DOUBLE_EQ(s.by_user[0].avg_wait, 950);
  EXPECT_DOUBLE_EQ(s.by_user[0].avg_bounded_slowdown, (1 + 2400.0 / 500) / 2);
  EXPECT_EQ(s.by_user[1].user, "bob");
  EXPECT_EQ(s.by_user[2].user, "carol");
  EXPECT_DOUBLE_EQ(s.by_user[2].avg_bounded_slowdown, 1100.0 / 300);
  const double x[] = {2.9, 1, 1100.0 / 300};
  EXPECT_NEAR(s.jain_slowdown,
              (x[0] + x[1] + x[2]) * (x[0] + x[1] + x[2]) / (3 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2])), 1e-12);

  std::vector<PolicyRun> runs(1);
  runs[0].result = std::move(*r);
  runs[0].summary = s;
  ReportInfo info{"golden4.csv", "gen:demo", "", 4, 32};
  const std::string table = FormatTable(info, runs);
  EXPECT_NE(table.find("by user (3): wait avg/p99/max, bounded slowdown"), std::string::npos) << table;
  EXPECT_NE(table.find("alice (9 GPU-h, 2 jobs)"), std::string::npos) << table;
  EXPECT_NE(table.find("15.8m/31.7m/31.7m, 2.90"), std::string::npos) << table;  // alice: 0 and 1900 s, 2.9
  EXPECT_NE(table.find("25.0m/33.3m/33.3m"), std::string::npos) << table;        // JCT 9-16: 1500/2000/2000 s
  const std::string json = FormatJson(info, runs);
  EXPECT_NE(json.find("{\"user\": \"alice\", \"jobs\": 2, \"finished\": 2, \"gpu_h\": 8.89"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"p99_jct_s\": 2000, \"max_jct_s\": 2000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"avg_wait_s\": 950.0, \"p99_wait_s\": 1900, \"max_wait_s\": 1900"), std::string::npos) << json;
  EXPECT_NE(json.find("\"jain_slowdown\": "), std::string::npos) << json;
}

}  // namespace
}  // namespace phalanx
