// WalkCounts (core/sched/internal/walk_counts.h): counts kept GPU by GPU, as a Reserve walk keeps
// them, allow a request exactly when CountsMayHold allows it on a Topology with those GPUs free.
// Random jobs on mixed nodes (8-GPU and 2-GPU) on several leaves; requests that must fit in a
// node, in a leaf, or be node-shaped, of many sizes; counts made up and taken down again
// (a GPU counted out, then in) along the way.
#include "core/sched/internal/walk_counts.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/placement/placement_counts.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::AllocateRandomJobs;

TEST(WalkCounts, AllowWhatCountsMayHoldAllowsOnTheSameFreeGpus) {
  Topology t = testing::Build(testing::MixedNodeLeaves(3, 4, 2, 8));
  std::mt19937_64 rng(11);
  std::vector<PlacementRequest> requests;
  for (uint32_t n : {1u, 2u, 3u, 4u, 6u, 8u, 12u, 16u, 24u, 32u}) {
    requests.push_back({.gpus = n, .level = Level::kNode, .fit = FitMode::kRequire});
    requests.push_back({.gpus = n, .level = Level::kLeaf, .fit = FitMode::kRequire});
  }
  for (uint32_t nodes : {1u, 2u, 4u}) {
    for (uint32_t per : {1u, 2u, 8u}) {
      requests.push_back(
          {.gpus = nodes * per, .nodes = nodes, .gpus_per_node = per, .level = Level::kLeaf, .fit = FitMode::kRequire});
    }
  }
  std::vector<DomainId> leaves;
  DomainsUpTo(t, Level::kLeaf, leaves);
  const DomainId root = t.root();
  WalkCounts counts;
  uint64_t allowed = 0, refused = 0;
  for (int round = 0; round < 30; ++round) {
    const size_t jobs = AllocateRandomJobs(t, rng, rng() % (t.gpu_count() / 2), 8).size();
    for (const PlacementRequest& r : requests) {
      const bool per_leaf = WithinDomainAboveNode(r);
      counts.Begin(t, per_leaf ? std::span<const DomainId>(leaves) : std::span<const DomainId>(&root, 1));
      // Every free GPU counted in; one in three counted out and in again.
      for (uint32_t g = 0; g < t.gpu_count(); ++g) {
        if (!t.is_free(GpuId(g))) continue;
        const uint32_t node = t.node_of(GpuId(g)).value;
        counts.Change(node, true);
        if (g % 3 == 0) {
          counts.Change(node, false);
          counts.Change(node, true);
        }
      }
      const bool expected = CountsMayHold(t, r, leaves);
      EXPECT_EQ(counts.Allow(r), expected) << "round " << round << ", " << r.gpus << " GPUs";
      (expected ? allowed : refused) += 1;
      if (per_leaf) {
        for (uint32_t i = 0; i < leaves.size(); ++i) {
          const DomainId one[] = {leaves[i]};
          EXPECT_EQ(counts.AllowIn(i, r), CountsMayHold(t, r, one)) << "leaf " << i;
        }
      }
    }
    for (size_t id = 1; id <= jobs; ++id) {
      ASSERT_TRUE(t.Release(id));
    }
  }
  EXPECT_GT(allowed, 100u);
  EXPECT_GT(refused, 100u);
}

}  // namespace
}  // namespace phalanx
