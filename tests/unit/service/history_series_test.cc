// HistorySeries: the series of successive ClusterSnapshots -- every fixed series present, labeled
// series (queue by reason, users, accounts) written while non-zero and once at 0 after, the
// per-interval preemptions and lost GPU-hours as differences of the core's per-job counters
// (0 at the first sample: what a restart recovered is not counted again), label values made
// safe for the history API.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "service/history_sampler.h"

namespace phalanx::service {
namespace {

std::map<std::string, double> AsMap(const HistorySamples& s) {
  std::map<std::string, double> out;
  for (const auto& [name, v] : s) {
    EXPECT_TRUE(out.emplace(name, v).second) << "series " << name << " twice in one sample";
  }
  return out;
}

ClusterSnapshot Base() {
  ClusterSnapshot s;
  s.now = 1000;
  s.gpus_total = 32;
  s.gpus_allocated = 16;
  s.gpus_idle = 8;
  s.gpus_drained = 0;
  s.gpus_down = 8;
  s.nodes_down = 1;
  s.jobs_by_state = {{"pending", 2}, {"running", 1}, {"checkpointing", 1}};
  s.levels = {{"spine", 1, 8, 0, 0.5}, {"node", 4, 8, 1, 0}};
  s.fgd = 0.25;
  return s;
}

TEST(HistorySeries, FixedSeriesFromOneSnapshot) {
  HistorySeries h;
  ClusterSnapshot s = Base();
  s.placement_efficiency = 0.75;
  const auto m = AsMap(h.Next(s));
  EXPECT_EQ(m.at("gpus_total"), 32);
  EXPECT_EQ(m.at("gpus_allocated"), 16);
  EXPECT_EQ(m.at("gpus_idle"), 8);
  EXPECT_EQ(m.at("gpus_drained"), 0);
  EXPECT_EQ(m.at("gpus_down"), 8);
  EXPECT_EQ(m.at("nodes_down"), 1);
  EXPECT_EQ(m.at("jobs_pending"), 2);
  EXPECT_EQ(m.at("jobs_running"), 2);  // running + checkpointing
  EXPECT_EQ(m.at("largest_free_block_gpus.spine"), 8);
  EXPECT_EQ(m.at("fragmentation.spine"), 0.5);
  EXPECT_EQ(m.at("largest_free_block_gpus.node"), 8);
  EXPECT_EQ(m.at("fgd"), 0.25);
  EXPECT_EQ(m.at("placement_efficiency"), 0.75);
  EXPECT_EQ(m.at("preemptions"), 0);
  EXPECT_EQ(m.at("checkpoint_lost_gpu_hours"), 0);
  // No multi-GPU job running: no efficiency point (not a made-up 1).
  EXPECT_EQ(AsMap(h.Next(Base())).count("placement_efficiency"), 0u);
}

TEST(HistorySeries, LabeledSeriesDropToZeroOnce) {
  HistorySeries h;
  ClusterSnapshot s = Base();
  s.queue_by_reason = {{"Resources", 2}};
  s.user_gpus = {{"alice", 8}, {"bob", 8}};
  s.account_gpus = {{"ml", 16}};
  auto m = AsMap(h.Next(s));
  EXPECT_EQ(m.at("queue_jobs.Resources"), 2);
  EXPECT_EQ(m.at("user_gpus.alice"), 8);
  EXPECT_EQ(m.at("user_gpus.bob"), 8);
  EXPECT_EQ(m.at("account_gpus.ml"), 16);

  s.queue_by_reason = {{"TopologyBlock", 1}};
  s.user_gpus = {{"alice", 16}};
  m = AsMap(h.Next(s));
  EXPECT_EQ(m.at("queue_jobs.Resources"), 0);  // dropped: one 0
  EXPECT_EQ(m.at("queue_jobs.TopologyBlock"), 1);
  EXPECT_EQ(m.at("user_gpus.alice"), 16);
  EXPECT_EQ(m.at("user_gpus.bob"), 0);

  m = AsMap(h.Next(s));
  EXPECT_EQ(m.count("queue_jobs.Resources"), 0u);  // not again
  EXPECT_EQ(m.count("user_gpus.bob"), 0u);
  EXPECT_EQ(m.at("user_gpus.alice"), 16);
}

TEST(HistorySeries, PreemptionsAndLostWorkPerInterval) {
  HistorySeries h;
  ClusterSnapshot s = Base();
  s.job_losses = {{1, {3, 7200.0}}};  // recovered with 3 preemptions: not counted
  EXPECT_EQ(AsMap(h.Next(s)).at("preemptions"), 0);
  s.job_losses = {{1, {4, 10800.0}}, {2, {1, 3600.0}}};  // job 1 once more, new job 2 once
  auto m = AsMap(h.Next(s));
  EXPECT_EQ(m.at("preemptions"), 2);
  EXPECT_DOUBLE_EQ(m.at("checkpoint_lost_gpu_hours"), 2.0);
  m = AsMap(h.Next(s));  // nothing new
  EXPECT_EQ(m.at("preemptions"), 0);
  EXPECT_EQ(m.at("checkpoint_lost_gpu_hours"), 0);
  s.job_losses = {{2, {1, 3600.0}}};  // job 1 gone from the core: no negative amounts
  m = AsMap(h.Next(s));
  EXPECT_EQ(m.at("preemptions"), 0);
  EXPECT_EQ(m.at("checkpoint_lost_gpu_hours"), 0);
}

TEST(HistorySeries, LabelValuesAreMadeSafe) {
  EXPECT_EQ(SeriesName("user_gpus", "a,b*c"), "user_gpus.a_b_c");
  EXPECT_EQ(SeriesName("account_gpus", ""), "account_gpus.-");
  EXPECT_EQ(SeriesName("user_gpus", std::string(300, 'x')).size(), 200u);
}

}  // namespace
}  // namespace phalanx::service
