// Scheduling policies compared on runs of the property harness (scheduler_property_harness.h):
// backfill against strict order for a large gang under a stream of small jobs, and best-fit
// against worst-fit tie-breaking (and first fit) for the free blocks they leave.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scheduler_property_harness.h"

namespace phalanx::scheduler_property {
namespace {

// ---- 3. no starvation of a large gang under a stream of small jobs ------------------------------
//
// A 112-GPU job (of 128) arrives at t=600 into a cluster kept full by a stream of 1-8 GPU jobs
// that arrive faster than they finish (about twice the cluster's capacity), all with exact
// walltimes of at most 1800 s. With EASY and conservative backfill the large job is the head of
// the queue (oldest, largest, its user has no usage), so it gets a reservation that backfill may
// not delay: it must start by its first promise and within 1800 s of its arrival. The contrast:
// with no backfill (strict order) it starts no later, but while it waits no small job starts at
// all, so the GPUs the large job waits for sit idle; backfill runs small jobs in that window.
struct StarvationRun {
  Time big_start = -1, big_promise = kForever;
  size_t small_started_while_waiting = 0;
  double idle_gpu_seconds_while_waiting = 0;
  std::string error;
};

StarvationRun RunStarvation(BackfillMode mode) {
  constexpr JobId kBig = 100000;
  constexpr Time kBigAt = 600;
  SimOptions o;
  o.fabric = "leafspine:16:4:2";
  o.backfill = mode;
  o.preemption = false;
  o.elastic = false;
  o.exact_walltime = true;
  Rng rng(2024);
  std::vector<std::pair<Time, JobSpec>> jobs;
  std::vector<Duration> runtimes;
  std::map<JobId, Time> arrival;
  Time at = 0;
  for (JobId id = 1; at < 3600; ++id) {
    at += rng.Exp(15);
    if (at >= kBigAt && !arrival.contains(kBig)) {
      JobSpec big;
      big.id = kBig;
      big.user = "big";
      big.account = "big";
      big.shape.gpus = 112;
      big.walltime = 3600;
      jobs.push_back({kBigAt, big});
      runtimes.push_back(3600);
      arrival[kBig] = kBigAt;
    }
    JobSpec s;
    s.id = id;
    s.user = "s" + std::to_string(rng.Uniform(0, 9));
    s.account = "small";
    s.shape.gpus = static_cast<uint32_t>(rng.Uniform(1, 8));
    s.walltime = rng.Uniform(300, 1800);
    jobs.push_back({at, s});
    runtimes.push_back(s.walltime);
    arrival[id] = at;
  }
  SimResult r = RunSim(o, jobs, runtimes);
  StarvationRun out;
  out.error = r.error;
  const SimJob& big = r.jobs.at(kBig);
  out.big_start = big.first_start;
  out.big_promise = big.first_promise;
  const Time from = kBigAt, to = big.first_start < 0 ? r.end : big.first_start;
  double busy = 0;
  for (const auto& [id, j] : r.jobs) {
    if (id == kBig || j.first_start < 0) continue;
    out.small_started_while_waiting += j.first_start >= from && j.first_start < to;
    const Time a = std::max(from, j.first_start), b = std::min(to, j.first_start + j.runtime);
    if (b > a) busy += static_cast<double>(b - a) * j.spec.shape.gpus;
  }
  out.idle_gpu_seconds_while_waiting = 128.0 * static_cast<double>(to - from) - busy;
  return out;
}

TEST(SchedulerProperty, LargeGangIsNotStarvedByAStreamOfSmallJobs) {
  std::map<BackfillMode, StarvationRun> runs;
  for (BackfillMode mode : {BackfillMode::kNone, BackfillMode::kEasy, BackfillMode::kConservative}) {
    StarvationRun r = RunStarvation(mode);
    ASSERT_TRUE(r.error.empty()) << ModeName(mode) << ": " << r.error;
    std::cout << "backfill=" << ModeName(mode) << ": 112-GPU job submitted t=600, first promise t="
              << (r.big_promise == kForever ? std::string("-") : std::to_string(r.big_promise))
              << ", started t=" << r.big_start
              << "; small jobs started while it waited: " << r.small_started_while_waiting
              << ", idle GPU-hours while it waited: " << r.idle_gpu_seconds_while_waiting / 3600.0 << "\n";
    ASSERT_GE(r.big_start, 600) << ModeName(mode) << ": the large job never started";
    EXPECT_LE(r.big_start, 600 + 1800) << ModeName(mode);
    runs[mode] = r;
  }
  for (BackfillMode mode : {BackfillMode::kEasy, BackfillMode::kConservative}) {
    const StarvationRun& r = runs[mode];
    EXPECT_NE(r.big_promise, kForever) << ModeName(mode) << ": the head job got no reservation";
    EXPECT_LE(r.big_start, r.big_promise) << ModeName(mode) << ": started after its promise";
    EXPECT_GT(r.small_started_while_waiting, 0u) << ModeName(mode) << ": backfill ran nothing";
    EXPECT_LT(r.idle_gpu_seconds_while_waiting, runs[BackfillMode::kNone].idle_gpu_seconds_while_waiting)
        << ModeName(mode);
  }
  EXPECT_EQ(runs[BackfillMode::kNone].small_started_while_waiting, 0u) << "strict order let a small job pass";
}

// ---- 4. fragmentation-aware choice, measured --------------------------------------------------
//
// Among placements of equal bandwidth the placer picks the fullest domains (best fit). The same
// seeded workload (plain GPU counts, the size mix of SizeOf, ~90% offered load) is played with
// best-fit and with worst-fit tie-breaking (the same bandwidth objective, ties broken towards the
// emptiest domains) and, for context, with first-fit placement (no topology). Measured: the time
// average of the largest free block at each level (max over the level's domains of free GPUs).
// Claim: best fit keeps larger node- and leaf-level blocks than worst fit.
TEST(SchedulerProperty, BestFitTieBreakingKeepsLargerFreeBlocks) {
  for (const char* fabric : {"superpod:2:8", "leafspine:16:4:2"}) {
    struct Sum {
      std::map<Level, double> block_seconds;
      double seconds = 0, busy = 0, gpus = 0, busbw_weighted = 0, multi_node_gpus = 0;
    };
    const std::vector<std::pair<std::string, std::pair<PlacementMode, bool>>> variants = {
        {"topology, best fit ", {PlacementMode::kTopology, true}},
        {"topology, worst fit", {PlacementMode::kTopology, false}},
        {"first fit          ", {PlacementMode::kFirstFit, true}}};
    std::map<std::string, Sum> sums;
    for (const auto& [name, v] : variants) {
      for (uint32_t seed : {77u, 78u, 79u, 80u, 81u, 82u, 83u, 84u}) {
        SimOptions o;
        o.fabric = fabric;
        o.seed = seed;
        o.placement = v.first;
        o.best_fit = v.second;
        o.backfill = BackfillMode::kConservative;
        o.preemption = false;
        o.elastic = false;
        o.shapes = false;
        o.jobs = 300;
        o.mean_interarrival = 135;
        SimResult r = RunSim(o);
        ASSERT_TRUE(r.error.empty()) << Dump(r, "fragmentation");
        Sum& s = sums[name];
        for (const auto& [level, val] : r.largest_free_block_seconds) s.block_seconds[level] += val;
        s.seconds += static_cast<double>(r.end);
        s.busy += r.busy_gpu_seconds;
        s.gpus = static_cast<double>(r.gpus);
        for (const auto& [id, j] : r.jobs) {
          if (j.first_start < 0 || j.spec.shape.gpus <= 8) continue;
          s.busbw_weighted += j.busbw * j.spec.shape.gpus;
          s.multi_node_gpus += j.spec.shape.gpus;
        }
      }
    }
    std::cout << fabric << ", 8 seeds x 300 jobs, time-averaged largest free block (GPUs):\n";
    for (const auto& [name, v] : variants) {
      const Sum& s = sums[name];
      std::cout << "  " << name << ":";
      for (const auto& [level, val] : s.block_seconds) std::cout << " " << LevelName(level) << " " << val / s.seconds;
      std::cout << "  | utilization " << 100.0 * s.busy / (s.seconds * s.gpus) << "%, mean busbw of >8-GPU jobs "
                << s.busbw_weighted / s.multi_node_gpus << " GB/s\n";
    }
    const Sum &best = sums[variants[0].first], &worst = sums[variants[1].first];
    for (Level level : {Level::kNode, Level::kLeaf}) {
      EXPECT_GT(best.block_seconds.at(level) / best.seconds, worst.block_seconds.at(level) / worst.seconds)
          << fabric << " " << LevelName(level) << ": best-fit tie-breaking should keep larger free blocks";
    }
    // The bandwidth objective itself is what separates topology placement from first fit.
    EXPECT_GT(best.busbw_weighted / best.multi_node_gpus,
              sums[variants[2].first].busbw_weighted / sums[variants[2].first].multi_node_gpus);
  }
}

}  // namespace
}  // namespace phalanx::scheduler_property
