// Placement under pressure (internal/patience.cc) on a cluster of mixed nodes: a job that could
// start now only on a slow block waits for a good one, and "good" is a block as fast as the
// tolerance allows, not the shape of the best block (which on mixed nodes is good on one kind
// of node only).
#include <gtest/gtest.h>

#include <cmath>
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
using testing::TwoTier;

std::set<std::string> NodesOfJob(const Scheduler& s, JobId id) {
  std::set<std::string> out;
  const Topology& t = s.topology();
  for (GpuId g : s.job(id)->gpus) out.insert(t.domain(t.node_domain(t.node_of(g))).name);
  return out;
}

// The best 8 GPUs are four 2-GPU nodes; with those busy and 6 GPUs of every 8-GPU node taken
// by two multi-node jobs (job 5 ends at 1000, job 6 much later), 8 GPUs are free only as 2 on
// each 8-GPU node, sharing the NICs with those jobs' rings.
// Submitted and scheduled at `at` (job 5 then ends at `at` + 1000).
void FillSmallNodesAndSixOfEachBigNode(Scheduler& s, Time at = 0) {
  for (JobId id = 1; id <= 4; ++id) {
    JobSpec j = PlainJob(id, 2, 100000);
    j.nodelist = {"small-n" + std::to_string(id - 1)};
    ASSERT_TRUE(s.Submit(j, at));
  }
  for (JobId id : {5, 6}) {
    JobSpec j = PlainJob(id, 12, id == 5 ? 1000 : 100000);
    j.shape.nodes = 2;
    j.shape.gpus_per_node = 6;
    ASSERT_TRUE(s.Submit(j, at));
  }
  s.Schedule(at);
  for (JobId id = 1; id <= 4; ++id) {
    ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;
    EXPECT_EQ(NodesOfJob(s, id).begin()->substr(0, 5), "small") << id;
  }
  for (JobId id : {5, 6}) ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;
}

// The phalanx preset, without preemption and fairshare (the queue in submit order).
SchedulerConfig PressureConfig() {
  auto config = PolicyPreset("phalanx");
  EXPECT_TRUE(config) << config.error().ToString();
  if (!config) return {};
  config->preemption = false;
  config->weights.fairshare = 0;
  return *config;
}

// A Scheduler on MixedNodes under `config`, as FillSmallNodesAndSixOfEachBigNode leaves it.
void MakeFilled(const SchedulerConfig& config, std::unique_ptr<Scheduler>& out) {
  auto made = Scheduler::Create(Build(MixedNodes()), config);
  ASSERT_TRUE(made) << made.error().ToString();
  out = std::move(*made);
  ASSERT_NO_FATAL_FAILURE(FillSmallNodesAndSixOfEachBigNode(*out));
}

// MakeFilled under PressureConfig with `depth`, then two 8-GPU jobs at 10 that could start only
// on the slow block: job 7 (long) and job 8 (500 s, short enough to end before job 7's good
// block frees up at 1000), and a pass.
void MakeTwoWaiting(uint32_t depth, std::unique_ptr<Scheduler>& out) {
  SchedulerConfig config = PressureConfig();
  config.patience_depth = depth;
  ASSERT_NO_FATAL_FAILURE(MakeFilled(config, out));
  ASSERT_TRUE(out->Submit(PlainJob(7, 8, 100000), 10));
  ASSERT_TRUE(out->Submit(PlainJob(8, 8, 500), 10));
  out->Schedule(10);
}

// The best 8 GPUs are four 2-GPU nodes; with those busy and 6 GPUs of every 8-GPU node taken
// by two multi-node jobs, 8 GPUs are free only as 2 on each 8-GPU node, sharing the NICs with
// those jobs' rings: the best block's shape (four nodes, 2 GPUs each), on the wrong nodes. The
// job waits, and starts on a whole 8-GPU node when one frees up.
TEST(PlacementUnderPressure, OnMixedNodesAGoodBlockIsAsFastNotShapedAsTheBest) {
  const SchedulerConfig config = PressureConfig();
  std::unique_ptr<Scheduler> made;
  ASSERT_NO_FATAL_FAILURE(MakeFilled(config, made));
  Scheduler& s = *made;

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
  EXPECT_GE(job.busbw_gbs, config.node_fit_tolerance * best);
}

// patience_depth: only the first jobs of a pass that wait for a good block have it planned and
// reserved; the others wait for one to the same bound without a reservation (no walk over the
// release times). Two 8-GPU jobs that could start now only on the slow block (job 8 short enough
// to end before the first one's reservation): with a depth of 1 the first holds a reservation on
// a whole 8-GPU node from job 5's end; the second holds none, is told its bound and starts on the
// slow block then. With no depth (0) both hold one.
TEST(PlacementUnderPressure, BeyondThePatienceDepthJobsWaitWithoutAPlannedBlock) {
  for (const uint32_t depth : {1u, 0u}) {
    SCOPED_TRACE("patience_depth " + std::to_string(depth));
    std::unique_ptr<Scheduler> made;
    ASSERT_NO_FATAL_FAILURE(MakeTwoWaiting(depth, made));
    Scheduler& s = *made;
    for (JobId id : {7, 8}) {
      const JobRecord& job = *s.job(id);
      ASSERT_EQ(job.state, JobState::kPending) << id;
      EXPECT_EQ(job.wait.kind, WaitKind::kTopologyBlock) << id << ": " << job.wait.detail;
      EXPECT_NE(job.wait.detail.find("a slower block is free now"), std::string::npos) << job.wait.detail;
    }
    auto reservation_of = [&](JobId id) -> const Reservation* {
      for (const Reservation& r : s.reservations()) {
        if (r.job == id) return &r;
      }
      return nullptr;
    };
    const Reservation* first = reservation_of(7);
    ASSERT_NE(first, nullptr);
    EXPECT_TRUE(first->for_patience);
    EXPECT_EQ(first->start, 1000);
    EXPECT_EQ(s.job(7)->wait.predicted_start, 1000);
    const Reservation* second = reservation_of(8);
    if (depth == 0) {
      ASSERT_NE(second, nullptr);
      EXPECT_TRUE(second->for_patience);
      EXPECT_EQ(s.job(8)->wait.predicted_start, second->start);
      continue;
    }
    EXPECT_EQ(second, nullptr);
    // Its bound: the cost of the slower run, from when it began to wait.
    const Time bound = s.job(8)->wait.predicted_start;
    ASSERT_GT(bound, 10);
    ASSERT_LT(bound + 500, 1000);  // it would end before the first one's reservation begins
    s.Schedule(bound - 1);
    EXPECT_EQ(s.job(8)->state, JobState::kPending);
    s.Schedule(bound);
    ASSERT_EQ(s.job(8)->state, JobState::kRunning);
    EXPECT_GT(NodesOfJob(s, 8).size(), 1u);
    EXPECT_EQ(s.job(7)->state, JobState::kPending);
  }
}

// The bound of a job of `gpus` GPUs and `walltime` asked, held since `since`, with `queued` other
// pending jobs, on the cluster built from `spec` as `s` has it now:
//     since + ceil((slowdown - 1 + imposed) x walltime x (1 + Q n / N)),
//     slowdown = 0.85 + 0.15 best / b,  imposed = 0.15 best / b - 0.15 best / shape,
// with b the predicted bandwidth of the fastest `gpus` GPUs free now, `shape` the same GPUs' in
// the empty cluster.
Time BoundOf(const Scheduler& s, const TopologySpec& spec, uint32_t gpus, Duration walltime, Time since,
             double queued) {
  const SchedulerConfig& config = s.config();
  const PlaceOutcome now = Placer(s.topology(), config.model).Place({.gpus = gpus});
  EXPECT_EQ(now.status, PlaceStatus::kPlaced);
  Topology empty = Build(spec);
  const Placer empty_placer(empty, config.model);
  const double best = empty_placer.Place({.gpus = gpus}).placement.prediction.busbw_gbs;
  const double b = now.placement.prediction.busbw_gbs;
  const double shape = empty_placer.model().Predict(now.placement.gpus).busbw_gbs;
  const double c = config.placement_comm_share;
  const double slowdown = (1 - c) + c * best / b;
  const double imposed = shape > b ? c * best / b - c * best / shape : 0;
  const double n = static_cast<double>(s.topology().gpu_count());
  return since + static_cast<Time>(
                     std::ceil((slowdown - 1 + imposed) * static_cast<double>(walltime) * (1 + queued * gpus / n)));
}

// Job 8's in MakeTwoWaiting: its block is slow because of the rings beside it.
Time BoundOfJob8(const Scheduler& s, double queued) { return BoundOf(s, MixedNodes(), 8, 500, 10, queued); }

// The bound of a job held back for a good block counts, besides its own slowdown, the slowdown
// its ring would impose on the running jobs whose links it shares: the part of its slowdown that
// comes from them (its block's shape alone, in the empty cluster, is faster). Job 8 (500 s) could
// start now only on 2 GPUs of each 8-GPU node, beside jobs 5 and 6's rings; beyond the depth it
// waits without a planned block, told its bound, which is exactly
//     10 + ceil((slowdown - 1 + imposed) x 500 x (1 + Q n / N)),
//     slowdown = 0.85 + 0.15 best / b,  imposed = 0.15 best / b - 0.15 best / shape,
// with b its block's predicted bandwidth now, `shape` the same GPUs' in the empty cluster and Q = 1.
TEST(PlacementUnderPressure, AContendedBlockCountsTheSlowdownItImposesOnTheJobsItShares) {
  std::unique_ptr<Scheduler> made;
  ASSERT_NO_FATAL_FAILURE(MakeTwoWaiting(1, made));
  Scheduler& s = *made;
  ASSERT_EQ(s.job(8)->state, JobState::kPending);
  ASSERT_EQ(s.job(8)->wait.kind, WaitKind::kTopologyBlock) << s.job(8)->wait.detail;
  // The slow block it was offered is the fastest 8 free GPUs now (job 7's good block begins at
  // 1000, after job 8 would end, so it blocks nothing of job 8's); Q = 1 (job 7).
  const Time bound = BoundOfJob8(s, 1);
  EXPECT_EQ(s.job(8)->wait.predicted_start, bound);
  s.Schedule(bound - 1);
  EXPECT_EQ(s.job(8)->state, JobState::kPending);
  s.Schedule(bound);
  EXPECT_EQ(s.job(8)->state, JobState::kRunning);
}

// A held job's bound is counted on the slower block free then, and counted again on the one free
// then every patience_replan seconds (300 in the preset), not at every pass: between, the job
// searches only for a good block. Three leaves of two 8-GPU nodes, 4:1 under the spine; one node
// free in each of leaf0 and leaf1, so 16 GPUs span the spine, beside the ring of job 3 (2 GPUs on
// a node of each leaf, ending at 100). Job 10 (16 GPUs) is held at 10 with a bound counted on
// that contended block. Once job 3 ends the same block is faster, but job 10 keeps its bound to
// 310; counted again then, on the faster block, the bound is earlier.
TEST(PlacementUnderPressure, TheSlowerBlockIsLookedAtAgainEveryReplanPeriod) {
  const TopologySpec spec = TwoTier(3, 2, "dgx-h100", 4.0);
  auto made = Scheduler::Create(Build(spec), PressureConfig());
  ASSERT_TRUE(made) << made.error().ToString();
  Scheduler& s = **made;
  auto on = [](JobId id, uint32_t gpus, Duration walltime, std::vector<std::string> nodes) {
    JobSpec j = PlainJob(id, gpus, walltime);
    if (nodes.size() > 1) {
      j.shape.nodes = static_cast<uint32_t>(nodes.size());
      j.shape.gpus_per_node = gpus / j.shape.nodes;
    }
    j.nodelist = std::move(nodes);
    return j;
  };
  ASSERT_TRUE(s.Submit(on(1, 6, 100000, {"leaf0-n1"}), 0));
  ASSERT_TRUE(s.Submit(on(2, 6, 100000, {"leaf1-n1"}), 0));
  ASSERT_TRUE(s.Submit(on(3, 4, 100, {"leaf0-n1", "leaf1-n1"}), 0));
  ASSERT_TRUE(s.Submit(on(4, 16, 100000, {"leaf2-n0", "leaf2-n1"}), 0));
  s.Schedule(0);
  for (JobId id = 1; id <= 4; ++id) ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;
  ASSERT_TRUE(s.Submit(PlainJob(10, 16, 20000), 10));
  s.Schedule(10);
  const JobRecord& job = *s.job(10);
  ASSERT_EQ(job.state, JobState::kPending);
  ASSERT_EQ(job.wait.kind, WaitKind::kTopologyBlock) << job.wait.detail;
  const Time bound = BoundOf(s, spec, 16, 20000, 10, 0);
  ASSERT_EQ(s.next_patience_deadline(), bound);
  ASSERT_TRUE(s.JobEnded(3, 100, true));
  const Time faster = BoundOf(s, spec, 16, 20000, 10, 0);
  ASSERT_LT(faster, bound);
  ASSERT_GT(faster, 310);
  ASSERT_EQ(s.config().patience_replan, 300);
  for (Time t = 100; t < 310; t += 7) {
    s.Schedule(t);
    ASSERT_EQ(job.state, JobState::kPending) << "at " << t;
    ASSERT_EQ(s.next_patience_deadline(), bound) << "at " << t << " (the bound on the faster block: " << faster << ")";
  }
  s.Schedule(310);
  ASSERT_EQ(job.state, JobState::kPending);
  EXPECT_EQ(s.next_patience_deadline(), faster);
  s.Schedule(faster - 1);
  EXPECT_EQ(job.state, JobState::kPending);
  s.Schedule(faster);
  ASSERT_EQ(job.state, JobState::kRunning);
  std::set<std::string> nodes = NodesOfJob(s, 10);
  EXPECT_EQ(nodes, (std::set<std::string>{"leaf0-n0", "leaf1-n0"}));
}

// The queue's share of a held job's bound (Q n / N) is counted at every pass: job 7, the only
// other pending job, is cancelled at 11, and job 8 starts at the bound with Q = 0.
TEST(PlacementUnderPressure, TheQueuesShareOfTheBoundFollowsTheQueue) {
  std::unique_ptr<Scheduler> made;
  ASSERT_NO_FATAL_FAILURE(MakeTwoWaiting(1, made));
  Scheduler& s = *made;
  const Time bound = BoundOfJob8(s, 1), alone = BoundOfJob8(s, 0);
  ASSERT_EQ(s.job(8)->wait.predicted_start, bound);
  ASSERT_LT(alone, bound);
  ASSERT_TRUE(s.Cancel(7, 11));
  for (Time t = 11; t < alone; ++t) {
    s.Schedule(t);
    ASSERT_EQ(s.job(8)->state, JobState::kPending) << "at " << t;
    ASSERT_EQ(s.next_patience_deadline(), alone) << "at " << t;
  }
  s.Schedule(alone);
  ASSERT_EQ(s.job(8)->state, JobState::kRunning);
  EXPECT_GT(NodesOfJob(s, 8).size(), 1u);
}

// runtime=predicted plans a held job's good block on its predicted run, but its bound is counted
// on its walltime request, as under runtime=walltime: on the (shorter) prediction the bound
// came out so short that jobs started split at once and ran past their predictions (ITP x2:
// placement efficiency 0.397). Alice's last two 8-GPU jobs ran 50 s each; then, as in
// MakeTwoWaiting from 100, job 7 is planned a whole node from job 5's end (1100) for its
// prediction (50 s; 100,000 on its walltime) and job 8 (500 s requested), beyond the depth,
// waits to its bound: the same under both estimators.
TEST(PlacementUnderPressure, TheBoundIsCountedOnTheWalltimeRequestUnderAnyEstimator) {
  Time bound[2] = {0, 0};
  for (const RuntimeMode mode : {RuntimeMode::kWalltime, RuntimeMode::kPredicted}) {
    const bool predicted = mode == RuntimeMode::kPredicted;
    SCOPED_TRACE(predicted ? "runtime=predicted" : "runtime=walltime");
    SchedulerConfig config = PressureConfig();
    config.patience_depth = 1;
    config.runtime = mode;
    auto made = Scheduler::Create(Build(MixedNodes()), config);
    ASSERT_TRUE(made) << made.error().ToString();
    Scheduler& s = **made;
    for (JobId id : {101, 102}) ASSERT_TRUE(s.Submit(PlainJob(id, 8, 500), 0));
    s.Schedule(0);
    for (JobId id : {101, 102}) {
      ASSERT_EQ(s.job(id)->state, JobState::kRunning) << id;
      ASSERT_TRUE(s.JobEnded(id, 50, true));
    }
    ASSERT_NO_FATAL_FAILURE(FillSmallNodesAndSixOfEachBigNode(s, 100));
    ASSERT_TRUE(s.Submit(PlainJob(7, 8, 100000), 110));
    ASSERT_TRUE(s.Submit(PlainJob(8, 8, 500), 110));
    s.Schedule(110);
    for (JobId id : {7, 8}) {
      ASSERT_EQ(s.job(id)->state, JobState::kPending) << id;
      ASSERT_EQ(s.job(id)->wait.kind, WaitKind::kTopologyBlock) << id << ": " << s.job(id)->wait.detail;
    }
    const Reservation* planned = nullptr;
    for (const Reservation& r : s.reservations()) {
      if (r.job == 7) planned = &r;
    }
    ASSERT_NE(planned, nullptr);
    EXPECT_EQ(planned->start, 1100);
    EXPECT_EQ(planned->end - planned->start, predicted ? 50 : 100000);
    bound[predicted] = s.job(8)->wait.predicted_start;
    ASSERT_GT(bound[predicted], 110);
    s.Schedule(bound[predicted] - 1);
    EXPECT_EQ(s.job(8)->state, JobState::kPending);
    s.Schedule(bound[predicted]);
    EXPECT_EQ(s.job(8)->state, JobState::kRunning);
  }
  EXPECT_EQ(bound[1], bound[0]);
}

// patience_replan: a deferred job's planned good block is kept without a walk for that long
// while it stays free for the job, then planned anew. Job 7 is planned the node job 5 frees at
// 1000; job 5's walltime is then cut to end at 500. Re-planned in every pass (0), job 7 is
// promised 500 at once; with 300 s it keeps 1000 until 300 s after its plan, then gets 500. A
// block planned reserve_horizon or more out (990 s here, from 10; a horizon of 900 s) is kept
// patience_far_keep seconds per hour it was planned out (1,200 s an hour: 330 s), not when the
// horizon is further (1,000 s) or patience_far_keep is 0. A kept block that is no longer free
// for it (its node drained) is planned anew at once: the other node job 5 frees.
TEST(PlacementUnderPressure, APlannedGoodBlockIsKeptWhileFreeUntilTheReplanTime) {
  struct Case {
    Duration replan, horizon, far_keep, kept_for;
  };
  for (const Case c : {Case{0, 0, 0, 0}, Case{300, 0, 0, 300}, Case{300, 900, 1200, 330}, Case{300, 1000, 1200, 300},
                       Case{300, 900, 0, 300}}) {
    const Duration replan = c.replan;
    SCOPED_TRACE("patience_replan " + std::to_string(replan) + ", reserve_horizon " + std::to_string(c.horizon) +
                 ", patience_far_keep " + std::to_string(c.far_keep));
    SchedulerConfig config = PressureConfig();
    config.patience_replan = replan;
    config.reserve_horizon = c.horizon;
    config.patience_far_keep = c.far_keep;
    std::unique_ptr<Scheduler> made;
    ASSERT_NO_FATAL_FAILURE(MakeFilled(config, made));
    Scheduler& s = *made;
    ASSERT_TRUE(s.Submit(PlainJob(7, 8, 100000), 10));
    s.Schedule(10);
    const JobRecord& job = *s.job(7);
    ASSERT_EQ(job.state, JobState::kPending);
    ASSERT_EQ(job.wait.predicted_start, 1000) << job.wait.detail;
    auto block_of_7 = [&]() -> std::set<std::string> {
      for (const Reservation& r : s.reservations()) {
        if (r.job != 7) continue;
        std::set<std::string> nodes;
        const Topology& t = s.topology();
        for (GpuId g : r.gpus) nodes.insert(t.domain(t.node_domain(t.node_of(g))).name);
        return nodes;
      }
      return {};
    };
    const std::set<std::string> planned = block_of_7();
    ASSERT_EQ(planned.size(), 1u);
    Scheduler::JobUpdate shorter;
    shorter.walltime = 500;
    ASSERT_TRUE(s.Update(5, shorter, 20));
    s.Schedule(20);
    ASSERT_EQ(job.state, JobState::kPending);
    if (replan == 0) {
      EXPECT_EQ(job.wait.predicted_start, 500);
      continue;
    }
    EXPECT_EQ(job.wait.predicted_start, 1000);  // kept
    EXPECT_EQ(block_of_7(), planned);
    s.Schedule(10 + c.kept_for - 1);
    EXPECT_EQ(job.wait.predicted_start, 1000);  // kept: planned at 10
    EXPECT_EQ(block_of_7(), planned);
    const Time replanned = 10 + c.kept_for;
    s.Schedule(replanned);
    EXPECT_EQ(job.wait.predicted_start, 500);  // planned anew
    const std::set<std::string> again = block_of_7();
    ASSERT_EQ(again.size(), 1u);
    // Kept again; its node drained (and a small node freed: a slow block is still free now, so
    // the job still waits for a good one): planned anew at once, on the other node.
    ASSERT_TRUE(s.JobEnded(1, replanned + 10, true));
    ASSERT_TRUE(s.SetNodeState(*again.begin(), NodeState::kDrain, replanned + 10));
    s.Schedule(replanned + 10);
    ASSERT_EQ(job.state, JobState::kPending);
    EXPECT_NE(job.wait.detail.find("a slower block is free now"), std::string::npos) << job.wait.detail;
    EXPECT_EQ(job.wait.predicted_start, 500);
    const std::set<std::string> other = block_of_7();
    ASSERT_EQ(other.size(), 1u);
    EXPECT_NE(other, again);
  }
}

}  // namespace
}  // namespace phalanx
