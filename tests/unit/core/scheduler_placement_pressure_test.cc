// Placement under pressure (internal/patience.cc) on a cluster of mixed nodes: a job that could
// start now only on a slow block waits for a good one, and "good" is a block as fast as the
// tolerance allows, not the shape of the best block (which on mixed nodes is good on one kind
// of node only).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/placement/placer.h"
#include "core/sched/config.h"
#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::MixedNodes;
using testing::PlainJob;

std::set<std::string> NodesOfJob(const Scheduler& s, JobId id) {
  std::set<std::string> out;
  const Topology& t = s.topology();
  for (GpuId g : s.job(id)->gpus) out.insert(t.domain(t.node_domain(t.node_of(g))).name);
  return out;
}

// The best 8 GPUs are four 2-GPU nodes; with those busy and 6 GPUs of every 8-GPU node taken
// by two multi-node jobs, 8 GPUs are free only as 2 on each 8-GPU node, sharing the NICs with
// those jobs' rings: the best block's shape (four nodes, 2 GPUs each), on the wrong nodes. The
// job waits, and starts on a whole 8-GPU node when one frees up.
TEST(PlacementUnderPressure, OnMixedNodesAGoodBlockIsAsFastNotShapedAsTheBest) {
  auto config = PolicyPreset("phalanx");
  ASSERT_TRUE(config) << config.error().ToString();
  config->preemption = false;
  config->weights.fairshare = 0;
  auto made = Scheduler::Create(Build(MixedNodes()), *config);
  ASSERT_TRUE(made) << made.error().ToString();
  Scheduler& s = **made;
  for (JobId id = 1; id <= 4; ++id) {
    JobSpec j = PlainJob(id, 2, 100000);
    j.nodelist = {"small-n" + std::to_string(id - 1)};
    ASSERT_TRUE(s.Submit(j, 0));
  }
  for (JobId id : {5, 6}) {
    JobSpec j = PlainJob(id, 12, id == 5 ? 1000 : 100000);
    j.shape.nodes = 2;
    j.shape.gpus_per_node = 6;
    ASSERT_TRUE(s.Submit(j, 0));
  }
  s.Schedule(0);
  for (JobId id = 1; id <= 4; ++id) {
    ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;
    EXPECT_EQ(NodesOfJob(s, id).begin()->substr(0, 5), "small") << id;
  }
  for (JobId id : {5, 6}) ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;

  ASSERT_TRUE(s.Submit(PlainJob(7, 8, 100000), 10));
  s.Schedule(10);
  const JobRecord& job = *s.job(7);
  EXPECT_EQ(job.state, JobState::kPending)
      << "started on " << NodesOfJob(s, 7).size() << " nodes at " << job.busbw_gbs << " GB/s";
  EXPECT_EQ(job.wait.kind, WaitKind::kTopologyBlock) << job.wait.detail;
  EXPECT_NE(job.wait.detail.find("a slower block is free now"), std::string::npos) << job.wait.detail;

  ASSERT_TRUE(s.JobEnded(5, 1000, true));
  s.Schedule(1000);
  ASSERT_EQ(job.state, JobState::kRunning);
  const std::set<std::string> on = NodesOfJob(s, 7);
  ASSERT_EQ(on.size(), 1u);
  EXPECT_TRUE(on.contains("big-n0") || on.contains("big-n1") || on.contains("big-n2") || on.contains("big-n3"))
      << *on.begin();
  Topology empty = Build(MixedNodes());
  const double best = Placer(empty).Place({.gpus = 8}).placement.prediction.busbw_gbs;
  EXPECT_GE(job.busbw_gbs, config->node_fit_tolerance * best);
}

}  // namespace
}  // namespace phalanx
