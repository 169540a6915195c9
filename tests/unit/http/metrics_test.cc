// MetricsRegistry: exact text (format 0.0.4) for every metric type with labels, escaping, name
// checks, families, collectors and concurrent updates.
#include "service/http/metrics.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace phalanx::http {
namespace {

template <typename T>
T* Must(Result<T*> result) {
  if (!result) {
    ADD_FAILURE() << result.error().ToString();
    return nullptr;
  }
  return *result;
}

TEST(MetricsRegistryTest, RendersCountersGaugesHistogramsExactly) {
  MetricsRegistry registry;
  auto* submissions = Must(registry.AddCounter("phalanx_submissions_total", "Jobs submitted."));
  auto* decisions = Must(registry.AddCounter("phalanx_decisions", "Scheduling decisions by kind.", {"kind"}));
  auto* jobs = Must(registry.AddGauge("phalanx_jobs", "Jobs by state.", {"state"}));
  auto* fgd = Must(registry.AddGauge("phalanx_fragmentation_fgd", "Shape-aware fragmentation."));
  auto* wait = Must(
      registry.AddHistogram("phalanx_job_wait_seconds", "Seconds from submission to start.", {"class"}, {1, 60, 3600}));
  auto* pass = Must(registry.AddHistogram("phalanx_schedule_pass_seconds", "Duration of one scheduling pass.", {},
                                          {0.001, 0.01, 0.1}));
  ASSERT_TRUE(submissions && decisions && jobs && fgd && wait && pass);

  submissions->WithLabels({}).Inc(7);
  decisions->WithLabels({"start"}).Inc(3);
  decisions->WithLabels({"preempt"}).Inc();
  jobs->WithLabels({"running"}).Set(2);
  jobs->WithLabels({"pending"}).Set(5);
  fgd->WithLabels({}).Set(0.125);
  wait->WithLabels({"normal"}).Observe(0.5);
  wait->WithLabels({"normal"}).Observe(30);
  wait->WithLabels({"normal"}).Observe(7200);
  wait->WithLabels({"high"}).Observe(1);     // le is inclusive
  pass->WithLabels({}).Observe(0.00390625);  // 2^-8 and 2^-11: an exact sum
  pass->WithLabels({}).Observe(0.00048828125);

  EXPECT_EQ(registry.Render(),
            "# HELP phalanx_decisions_total Scheduling decisions by kind.\n"
            "# TYPE phalanx_decisions_total counter\n"
            "phalanx_decisions_total{kind=\"preempt\"} 1\n"
            "phalanx_decisions_total{kind=\"start\"} 3\n"
            "# HELP phalanx_fragmentation_fgd Shape-aware fragmentation.\n"
            "# TYPE phalanx_fragmentation_fgd gauge\n"
            "phalanx_fragmentation_fgd 0.125\n"
            "# HELP phalanx_job_wait_seconds Seconds from submission to start.\n"
            "# TYPE phalanx_job_wait_seconds histogram\n"
            "phalanx_job_wait_seconds_bucket{class=\"high\",le=\"1\"} 1\n"
            "phalanx_job_wait_seconds_bucket{class=\"high\",le=\"60\"} 1\n"
            "phalanx_job_wait_seconds_bucket{class=\"high\",le=\"3600\"} 1\n"
            "phalanx_job_wait_seconds_bucket{class=\"high\",le=\"+Inf\"} 1\n"
            "phalanx_job_wait_seconds_sum{class=\"high\"} 1\n"
            "phalanx_job_wait_seconds_count{class=\"high\"} 1\n"
            "phalanx_job_wait_seconds_bucket{class=\"normal\",le=\"1\"} 1\n"
            "phalanx_job_wait_seconds_bucket{class=\"normal\",le=\"60\"} 2\n"
            "phalanx_job_wait_seconds_bucket{class=\"normal\",le=\"3600\"} 2\n"
            "phalanx_job_wait_seconds_bucket{class=\"normal\",le=\"+Inf\"} 3\n"
            "phalanx_job_wait_seconds_sum{class=\"normal\"} 7230.5\n"
            "phalanx_job_wait_seconds_count{class=\"normal\"} 3\n"
            "# HELP phalanx_jobs Jobs by state.\n"
            "# TYPE phalanx_jobs gauge\n"
            "phalanx_jobs{state=\"pending\"} 5\n"
            "phalanx_jobs{state=\"running\"} 2\n"
            "# HELP phalanx_schedule_pass_seconds Duration of one scheduling pass.\n"
            "# TYPE phalanx_schedule_pass_seconds histogram\n"
            "phalanx_schedule_pass_seconds_bucket{le=\"0.001\"} 1\n"
            "phalanx_schedule_pass_seconds_bucket{le=\"0.01\"} 2\n"
            "phalanx_schedule_pass_seconds_bucket{le=\"0.1\"} 2\n"
            "phalanx_schedule_pass_seconds_bucket{le=\"+Inf\"} 2\n"
            "phalanx_schedule_pass_seconds_sum 0.00439453125\n"
            "phalanx_schedule_pass_seconds_count 2\n"
            "# HELP phalanx_submissions_total Jobs submitted.\n"
            "# TYPE phalanx_submissions_total counter\n"
            "phalanx_submissions_total 7\n");
}

TEST(MetricsRegistryTest, UnlabeledFamiliesStartAtZeroLabeledOnesAreLeftOutUntilUsed) {
  MetricsRegistry registry;
  Must(registry.AddCounter("a_events", "A."));
  auto* b = Must(registry.AddGauge("b_things", "B.", {"x"}));
  Must(registry.AddHistogram("c_seconds", "C.", {}, {1}));
  EXPECT_EQ(registry.Render(),
            "# HELP a_events_total A.\n# TYPE a_events_total counter\na_events_total 0\n"
            "# HELP c_seconds C.\n# TYPE c_seconds histogram\n"
            "c_seconds_bucket{le=\"1\"} 0\nc_seconds_bucket{le=\"+Inf\"} 0\n"
            "c_seconds_sum 0\nc_seconds_count 0\n");
  b->WithLabels({"y"}).Set(1);
  EXPECT_NE(registry.Render().find("b_things{x=\"y\"} 1\n"), std::string::npos);
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry registry;
  auto* g = Must(registry.AddGauge("phalanx_escape_test",
                                   "Help with \\ backslash,\n"
                                   "newline and \"quotes\".",
                                   {"path", "user"}));
  ASSERT_TRUE(g);
  g->WithLabels({"C:\\dir\\\"q\"\nnext", "bad\xff utf8 é"}).Set(-2.5);
  g->WithLabels({"", "}{,="}).Set(std::numeric_limits<double>::infinity());
  g->WithLabels({"nan", ""}).Set(std::nan(""));
  EXPECT_EQ(registry.Render(),
            "# HELP phalanx_escape_test Help with \\\\ backslash,\\nnewline and \"quotes\".\n"
            "# TYPE phalanx_escape_test gauge\n"
            "phalanx_escape_test{path=\"\",user=\"}{,=\"} +Inf\n"
            "phalanx_escape_test{path=\"C:\\\\dir\\\\\\\"q\\\"\\nnext\","
            "user=\"bad\xEF\xBF\xBD utf8 \xC3\xA9\"} -2.5\n"
            "phalanx_escape_test{path=\"nan\",user=\"\"} NaN\n");
}

TEST(MetricsRegistryTest, NamesAreCheckedAndTheErrorNamesThem) {
  MetricsRegistry registry;
  auto error = [](auto result) { return result ? std::string("(accepted)") : result.error().ToString(); };
  EXPECT_EQ(error(registry.AddGauge("phalanx-jobs", "h")),
            "phalanx-jobs: metric name must match [a-z_][a-z0-9_]* (snake_case)");
  EXPECT_EQ(error(registry.AddGauge("phalanx:jobs", "h")),
            "phalanx:jobs: metric name must match [a-z_][a-z0-9_]* (snake_case; ':' is for "
            "recording rules)");
  EXPECT_EQ(error(registry.AddGauge("phalanxJobs", "h")),
            "phalanxJobs: metric name must match [a-z_][a-z0-9_]* (snake_case)");
  EXPECT_EQ(error(registry.AddGauge("9lives", "h")), "9lives: metric name must match [a-z_][a-z0-9_]* (snake_case)");
  EXPECT_EQ(error(registry.AddGauge("", "h")), "metric name is empty");
  EXPECT_EQ(error(registry.AddGauge("__x", "h")), "__x: metric name may not start with \"__\" (reserved)");
  EXPECT_EQ(error(registry.AddGauge("x_total", "h")),
            "x_total: gauge name may not end in _total (counters and histograms add it)");
  EXPECT_EQ(error(registry.AddHistogram("x_count", "h", {}, {1})),
            "x_count: histogram name may not end in _count (counters and histograms add it)");
  EXPECT_EQ(error(registry.AddGauge("x", "")), "x: HELP text is empty");
  EXPECT_EQ(error(registry.AddGauge("x", "h", {"le"})),
            "x: label 'le': label name is reserved (histogram buckets and summary quantiles)");
  EXPECT_EQ(error(registry.AddGauge("x", "h", {"Node"})),
            "x: label 'Node': label name must match [a-z_][a-z0-9_]* (snake_case)");
  EXPECT_EQ(error(registry.AddGauge("x", "h", {"__name__"})),
            "x: label '__name__': label name may not start with \"__\" (reserved)");
  EXPECT_EQ(error(registry.AddGauge("x", "h", {"a", "a"})), "x: label name 'a' repeats");
  EXPECT_EQ(error(registry.AddHistogram("h_seconds", "h", {}, {})),
            "h_seconds: histogram needs at least one finite bucket bound");
  EXPECT_EQ(error(registry.AddHistogram("h_seconds", "h", {}, {1, 1})),
            "h_seconds: bucket bounds must increase: 1 after 1");
  EXPECT_EQ(error(registry.AddHistogram("h_seconds", "h", {}, {std::nan("")})),
            "h_seconds: bucket bound NaN is not finite");

  ASSERT_TRUE(registry.AddCounter("jobs_done", "h"));
  EXPECT_EQ(error(registry.AddCounter("jobs_done_total", "h")), "jobs_done: metric name is already registered");
  EXPECT_EQ(error(registry.AddGauge("jobs_done", "h")), "jobs_done: metric name is already registered");
  // A trailing +Inf bound is the implicit bucket: accepted and dropped.
  auto* h = Must(registry.AddHistogram("h_seconds", "h", {}, {1, std::numeric_limits<double>::infinity()}));
  ASSERT_TRUE(h);
  EXPECT_NE(registry.Render().find("h_seconds_bucket{le=\"1\"} 0\n"
                                   "h_seconds_bucket{le=\"+Inf\"} 0\n"),
            std::string::npos);
  EXPECT_TRUE(ValidateLabelName("gpu_model"));
  EXPECT_FALSE(ValidateMetricName("a b"));
}

TEST(MetricsRegistryTest, FamiliesGetRemoveClearAndWrongArity) {
  MetricsRegistry registry;
  auto* jobs = Must(registry.AddGauge("jobs_now", "h", {"state", "class"}));
  ASSERT_TRUE(jobs);
  auto child = jobs->Get({"running"});
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().ToString(), "jobs_now: wants 2 label value(s), got 1");
  jobs->WithLabels({"running"}).Set(99);  // a bug at the call site: not rendered
  EXPECT_EQ(jobs->size(), 0u);
  EXPECT_EQ(registry.Render(), "");

  Gauge* running = Must(jobs->Get({"running", "high"}));
  ASSERT_TRUE(running);
  EXPECT_EQ(&jobs->WithLabels({"running", "high"}), running);  // the same child
  running->Inc(2);
  running->Dec(0.5);
  EXPECT_EQ(running->Value(), 1.5);
  jobs->WithLabels({"pending", "low"}).Set(4);
  EXPECT_EQ(jobs->size(), 2u);
  EXPECT_TRUE(jobs->Remove({"running", "high"}));
  EXPECT_FALSE(jobs->Remove({"running", "high"}));
  EXPECT_EQ(registry.Render(),
            "# HELP jobs_now h\n# TYPE jobs_now gauge\n"
            "jobs_now{state=\"pending\",class=\"low\"} 4\n");
  jobs->Clear();
  EXPECT_EQ(registry.Render(), "");

  auto* total = Must(registry.AddCounter("things", "h"));
  total->WithLabels({}).Inc(5);
  total->WithLabels({}).Inc(-1);  // ignored
  total->WithLabels({}).Inc(std::nan(""));
  EXPECT_EQ(total->WithLabels({}).Value(), 5);
  total->WithLabels({}).SetTotal(40);
  EXPECT_EQ(total->WithLabels({}).Value(), 40);
  EXPECT_FALSE(total->Remove({}));  // the unlabeled child stays
  total->Clear();
  EXPECT_EQ(registry.Render(), "# HELP things_total h\n# TYPE things_total counter\nthings_total 0\n");
}

TEST(MetricsRegistryTest, CollectorsRunAtEveryRenderInOrder) {
  MetricsRegistry registry;
  auto* gpus = Must(registry.AddGauge("phalanx_gpus", "GPUs by state.", {"state"}));
  ASSERT_TRUE(gpus);
  int scrapes = 0;
  std::string order;
  registry.AddCollector([&] {
    ++scrapes;
    order += "a";
    gpus->Clear();  // states that vanished must not linger
    gpus->WithLabels({"allocated"}).Set(8 * scrapes);
    if (scrapes == 1) gpus->WithLabels({"unavailable"}).Set(8);
    gpus->WithLabels({"free"}).Set(64 - 8 * scrapes);
  });
  registry.AddCollector([&] { order += "b"; });
  EXPECT_EQ(registry.Render(),
            "# HELP phalanx_gpus GPUs by state.\n# TYPE phalanx_gpus gauge\n"
            "phalanx_gpus{state=\"allocated\"} 8\nphalanx_gpus{state=\"free\"} 56\n"
            "phalanx_gpus{state=\"unavailable\"} 8\n");
  EXPECT_EQ(registry.Render(),
            "# HELP phalanx_gpus GPUs by state.\n# TYPE phalanx_gpus gauge\n"
            "phalanx_gpus{state=\"allocated\"} 16\nphalanx_gpus{state=\"free\"} 48\n");
  EXPECT_EQ(scrapes, 2);
  EXPECT_EQ(order, "abab");
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry registry;
  auto* c = Must(registry.AddCounter("ops", "h", {"t"}));
  auto* h = Must(registry.AddHistogram("op_seconds", "h", {}, {0.5}));
  ASSERT_TRUE(c && h);
  constexpr int kThreads = 4, kOps = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        c->WithLabels({"shared"}).Inc();
        c->WithLabels({std::to_string(t)}).Inc(0.5);
        h->WithLabels({}).Observe(i % 2 == 0 ? 0.25 : 1.0);
        if (i % 1000 == 0) (void)registry.Render();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->WithLabels({"shared"}).Value(), kThreads * kOps);
  EXPECT_EQ(c->WithLabels({"3"}).Value(), kOps / 2);
  Histogram::Snapshot s = h->WithLabels({}).Read();
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kOps));
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{kThreads * kOps / 2, kThreads * kOps}));
  EXPECT_EQ(s.sum, kThreads * kOps / 2 * 1.25);
}

TEST(MetricsRegistryTest, BucketHelpers) {
  EXPECT_EQ(DefaultBuckets().size(), 11u);
  EXPECT_EQ(ExponentialBuckets(0.5, 2, 4), (std::vector<double>{0.5, 1, 2, 4}));
  EXPECT_EQ(LinearBuckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
}

}  // namespace
}  // namespace phalanx::http
