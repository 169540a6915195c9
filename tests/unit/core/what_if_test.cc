// WhatIf (core/sched/internal/what_if.h): however its releases and holds were made -- one job or
// many at once, with holds or apart, GPUs held, given back and held again -- undoing it leaves
// the Topology as it was, and while in force the Topology is as the same changes one by one
// would leave it.
#include "core/sched/internal/what_if.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::AllocateRandomJobs;
using testing::Build;
using testing::TwoTier;

// Every counter a search reads, per domain, the fingerprints and the what-if counts.
std::string CountersOf(const Topology& t) {
  std::string out = std::to_string(t.held_gpus()) + (t.none_suspended() ? "-" : "s") + ";";
  for (uint32_t i = 0; i < t.domain_count(); ++i) {
    const DomainId d(i);
    out += std::to_string(t.free_gpus(d)) + "/" + std::to_string(t.crossing_mbs(d)) + "/" +
           std::to_string(t.fingerprint(d).a) + "/" + std::to_string(t.fingerprint(d).b) + ":";
    for (uint32_t f = 0; f <= t.max_gpus_per_node(); ++f) out += std::to_string(t.nodes_with_free(d, f)) + ",";
  }
  for (uint32_t g = 0; g < t.gpu_count(); ++g) out += t.is_free(GpuId(g)) ? "f" : "b";
  return out;
}

TEST(WhatIf, UndoesEveryMixOfReleasesAndHolds) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 60; ++round) {
    Topology real = Build(TwoTier(2, 2));                                // 32 GPUs
    std::vector<JobId> ids(AllocateRandomJobs(real, rng, 4, 6).size());  // a few GPUs free
    std::iota(ids.begin(), ids.end(), JobId{1});
    const std::string before = CountersOf(real);
    Topology shadow = real;  // the same changes, one GPU and one job at a time
    std::vector<uint8_t> shadow_held(real.gpu_count(), 0);
    auto shadow_hold = [&](GpuId g) {
      if (!shadow.is_free(g)) return;
      ASSERT_TRUE(shadow.Hold(std::vector<GpuId>{g}));
      shadow_held[g.value] = 1;
    };
    {
      WhatIf what_if(real);
      what_if.Block({});
      for (int step = 0; step < 30; ++step) {
        const GpuId g(static_cast<uint32_t>(rng() % real.gpu_count()));
        const JobId job = ids[rng() % ids.size()];
        switch (rng() % 6) {
          case 0:
            what_if.ReleaseJob(job);
            (void)shadow.Suspend(job);
            break;
          case 1: {  // several at once, holding some wanted GPUs
            std::vector<JobId> jobs{job, ids[rng() % ids.size()]};
            std::vector<GpuId> want;
            for (uint32_t x = 0; x < real.gpu_count(); ++x) {
              if (rng() % 4 == 0) want.push_back(GpuId(x));
            }
            what_if.ReleaseJobsAndHold(jobs, want);
            for (JobId j : jobs) (void)shadow.Suspend(j);
            for (GpuId w : want) shadow_hold(w);
            break;
          }
          case 2:
            if (what_if.HoldOne(g)) shadow_hold(g);
            break;
          case 3:  // given back, maybe to be held again later
            what_if.UnholdOne(g);
            if (shadow_held[g.value]) {
              ASSERT_TRUE(shadow.Unhold(std::vector<GpuId>{g}));
              shadow_held[g.value] = 0;
            }
            break;
          case 4: {
            std::vector<GpuId> block{g, GpuId((g.value + 1) % real.gpu_count())};
            what_if.Extend(0, block);
            for (GpuId b : block) {
              if (shadow.is_free(b)) {
                ASSERT_TRUE(shadow.Hold(std::vector<GpuId>{b}));
              }
            }
            break;
          }
          default:
            what_if.ReleaseJobsAndHold(std::vector<JobId>{job}, {});
            (void)shadow.Suspend(job);
            break;
        }
        ASSERT_EQ(real.free_gpus(real.root()), shadow.free_gpus(shadow.root())) << "round " << round;
        ASSERT_EQ(real.held_gpus(), shadow.held_gpus()) << "round " << round;
        ASSERT_EQ(real.fingerprint(real.root()), shadow.fingerprint(shadow.root())) << "round " << round;
      }
    }
    EXPECT_EQ(CountersOf(real), before) << "round " << round;
    EXPECT_TRUE(real.no_what_if());
    EXPECT_EQ(real.CheckInvariants(), "");
  }
}

}  // namespace
}  // namespace phalanx
