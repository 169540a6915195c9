// FailureFrontier (core/sched/internal/failure_frontier.h): the pass's record of which
// (GPUs, walltime) failed to start, against the plain list it replaced.
#include "core/sched/internal/failure_frontier.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

namespace phalanx {
namespace {

TEST(FailureFrontier, CoversWhatNoBiggerAndNoLongerFailed) {
  FailureFrontier f;
  EXPECT_FALSE(f.Covers(1, 1));
  f.Add(8, 3600);
  EXPECT_TRUE(f.Covers(8, 3600));
  EXPECT_TRUE(f.Covers(16, 7200));
  EXPECT_FALSE(f.Covers(4, 7200));  // fewer GPUs may fit
  EXPECT_FALSE(f.Covers(8, 1800));  // a shorter job may fit a hole
  f.Add(4, 7200);
  EXPECT_TRUE(f.Covers(4, 7200));
  EXPECT_TRUE(f.Covers(6, 7200));
  EXPECT_FALSE(f.Covers(6, 3600));
  EXPECT_TRUE(f.Covers(8, 3600));
  f.Add(2, 600);  // covers both others from now on
  EXPECT_EQ(f.size(), 1u);
  EXPECT_TRUE(f.Covers(2, 600));
  EXPECT_FALSE(f.Covers(1, 86400));
  EXPECT_FALSE(f.Covers(64, 599));
}

// Random failures and questions: the same answers as a scan of every failure added.
TEST(FailureFrontier, AnswersAsAScanOfEveryFailure) {
  std::mt19937 rng(17);
  for (int round = 0; round < 200; ++round) {
    FailureFrontier f;
    std::vector<std::pair<uint32_t, Duration>> all;
    const uint32_t max_gpus = 1 + rng() % 64;
    const Duration max_wall = 1 + rng() % 50;
    for (int step = 0; step < 100; ++step) {
      const uint32_t g = 1 + rng() % max_gpus;
      const Duration w = 1 + static_cast<Duration>(rng() % static_cast<uint32_t>(max_wall));
      bool scan = false;
      for (const auto& [fg, fw] : all) scan = scan || (fg <= g && fw <= w);
      ASSERT_EQ(f.Covers(g, w), scan) << "round " << round << " step " << step << ": " << g << " GPUs, " << w << " s";
      if (rng() % 2 == 0) {
        f.Add(g, w);
        all.emplace_back(g, w);
      }
    }
    EXPECT_LE(f.size(), all.size());
  }
}

}  // namespace
}  // namespace phalanx
