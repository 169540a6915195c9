// The walltime estimate model (--walltime model): requests never below the runtime, round values,
// the site's limit as the popular value, overestimation on average, seeded.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/job_mapping.h"
#include "sim/random.h"

namespace phalanx {
namespace {

WalltimeModel Model() {
  WalltimeModel m;
  m.mode = WalltimeModel::Mode::kModel;
  m.limit = 7 * 24 * 3600;
  return m;
}

TEST(WalltimeModel, NeverBelowTheRuntimeNorTheMinimumNorAboveTheLimit) {
  const WalltimeModel m = Model();
  for (Duration d : {0L, 1L, 59L, 61L, 3599L, 3601L, 86400L, 600000L}) {
    for (double u1 : {0.0, 0.05, 0.5, 0.99}) {
      for (double u2 : {0.0, 0.3, 0.999}) {
        const Duration w = EstimateWalltime(d, m, u1, u2);
        EXPECT_GE(w, d);
        EXPECT_GE(w, m.minimum);
        EXPECT_LE(w, m.limit);
      }
    }
  }
  // A job longer than the limit asks for its runtime rounded up (it did run).
  EXPECT_EQ(EstimateWalltime(8 * 86400 + 5, m, 0.5, 0.5), 14 * 86400);
}

TEST(WalltimeModel, RequestsAreRoundValuesAndATenthAskForTheLimit) {
  const WalltimeModel m = Model();
  std::map<Duration, int> counts;
  double ratio = 0;
  constexpr int kJobs = 20000;
  for (int i = 0; i < kJobs; ++i) {
    const Duration d = 60 + static_cast<Duration>(SeededUniform(7, i, 9) * 20000);
    const Duration w = EstimateWalltime(d, m, SeededUniform(1, i, 0), SeededUniform(1, i, 1));
    counts[w]++;
    ratio += static_cast<double>(d) / static_cast<double>(w);
    EXPECT_TRUE(w % 60 == 0) << w;
  }
  EXPECT_LE(counts.size(), 27u);  // the round values up to a week
  EXPECT_NEAR(counts[m.limit] / double(kJobs), m.share_at_limit, 0.01);
  // Users overestimate: mean accuracy well below 1 (Tsafrir et al. report about 0.3-0.5).
  EXPECT_GT(ratio / kJobs, 0.2);
  EXPECT_LT(ratio / kJobs, 0.6);
}

TEST(WalltimeModel, MapTraceJobDrawsFromTheSeed) {
  TraceJob j;
  j.id = "a";
  j.gpus = 4;
  j.duration = 5000;
  const WalltimeModel m = Model();
  std::set<Duration> seen;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Duration a = MapTraceJob(j, 3, seed, m, {}).spec.walltime;
    EXPECT_EQ(a, MapTraceJob(j, 3, seed, m, {}).spec.walltime);
    seen.insert(a);
  }
  EXPECT_GT(seen.size(), 3u);
}

}  // namespace
}  // namespace phalanx
