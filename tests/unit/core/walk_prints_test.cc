// WalkPrints (core/sched/internal/walk_prints.h): the fingerprints it follows for a state the
// Topology is not in are the ones the Topology has once brought to that state. Random jobs on
// two leaves; a walk releases some of them (their GPUs flipped, their rings unloaded) and holds
// some free GPUs (flipped): each leaf's fingerprint as followed equals the Topology's after the
// same releases and holds. Each walk ends with the loads back to zero, so the next one begins
// from the Topology as it is.
#include "core/sched/internal/walk_prints.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::AllocateRandomJobs;
using testing::Build;
using testing::TwoTier;

TEST(WalkPrints, FollowsTheFingerprintsOfTheStateAWalkReaches) {
  Topology t = Build(TwoTier(2, 4));
  const std::vector<DomainId> leaves{t.find("leaf0"), t.find("leaf1")};
  // Which leaf a GPU is in; which leaf's fingerprint a crossing load at d is part of (none when
  // it is the spine's: above both).
  auto leaf_of_gpu = [&](GpuId g) { return t.domain(leaves[1]).first_gpu <= g.value ? 1u : 0u; };
  auto top_of = [&](DomainId d) {
    const Domain& at = t.domain(t.print_domain(d));
    if (at.depth < t.domain(leaves[0]).depth) return WalkPrints::kNone;
    return t.domain(leaves[1]).first_node <= at.first_node ? 1u : 0u;
  };
  std::mt19937_64 rng(7);
  WalkPrints prints;
  uint64_t flips = 0, unloads = 0;
  for (int round = 0; round < 40; ++round) {
    const size_t count = AllocateRandomJobs(t, rng, 4 + rng() % 12, 12).size();  // jobs 1..count
    ASSERT_GT(count, 0u);
    std::vector<JobId> jobs(count);
    for (size_t i = 0; i < count; ++i) jobs[i] = i + 1;
    prints.Begin(t, leaves);
    for (uint32_t i = 0; i < leaves.size(); ++i) {
      EXPECT_EQ(prints.At(i), t.fingerprint(leaves[i]));
    }
    // The walk's state: half the jobs released, then a few GPUs free at that time held.
    std::vector<JobId> released;
    for (JobId id : jobs) {
      if (rng() % 2 != 0) continue;
      const std::vector<GpuId> gpus(t.job_gpus(id).begin(), t.job_gpus(id).end());
      prints.Unload(t, t.job_ring(id), top_of);
      for (GpuId g : gpus) prints.FlipGpu(t, leaf_of_gpu(g), g);
      unloads += !t.job_ring(id).crossed.empty();
      flips += gpus.size();
      released.push_back(id);
    }
    for (JobId id : released) {
      ASSERT_TRUE(t.Release(id));
    }
    std::vector<GpuId> held;
    for (uint32_t g = 0; g < t.gpu_count(); ++g) {
      if (t.is_free(GpuId(g)) && rng() % 4 == 0) held.push_back(GpuId(g));
    }
    for (GpuId g : held) prints.FlipGpu(t, leaf_of_gpu(g), g);
    ASSERT_TRUE(t.Hold(held));
    for (uint32_t i = 0; i < leaves.size(); ++i) {
      EXPECT_EQ(prints.At(i), t.fingerprint(leaves[i])) << "round " << round;
    }
    prints.End();
    ASSERT_TRUE(t.Unhold(held));
    for (JobId id : jobs) {
      if (!t.job_gpus(id).empty()) {
        ASSERT_TRUE(t.Release(id));
      }
    }
  }
  EXPECT_GT(flips, 500u);
  EXPECT_GT(unloads, 20u);
}

}  // namespace
}  // namespace phalanx
