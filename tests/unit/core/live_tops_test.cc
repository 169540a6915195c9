// LiveTops (core/sched/internal/live_tops.h): a walk that brings domains to its time one by one
// releases a job in the Topology exactly once, as soon as one of the domains its GPUs are in is
// brought there, and never a job none of whose domains is. Random jobs over random domains,
// released and brought to t in random order, as reserve.cc drives it; then a second walk on the
// same storage starts clean.
#include "core/sched/internal/live_tops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace phalanx {
namespace {

TEST(LiveTops, ReleasesAJobOnceWhenTheFirstOfItsDomainsIsBroughtToTheWalksTime) {
  std::mt19937_64 rng(5);
  LiveTops<int> live;
  for (int walk = 0; walk < 50; ++walk) {
    const auto tops = static_cast<uint32_t>(1 + rng() % 12);
    live.Begin(tops);
    ASSERT_TRUE(live.domains().empty());
    std::vector<std::set<uint32_t>> in;  // by job: its domains
    std::vector<int> released;           // by job: times released in the "Topology"
    std::vector<DomainId> order;         // the domains brought to t, in order
    auto apply = [&](uint32_t r) {
      if (live.Apply(r)) ++released[r];
    };
    for (int step = 0; step < 60; ++step) {
      if (rng() % 3 == 0) {  // a search brings a domain to t
        const auto top = static_cast<uint32_t>(rng() % tops);
        if (live.live(top)) continue;
        for (uint32_t r : live.MakeLive(top, DomainId(100 + top))) apply(r);
        order.push_back(DomainId(100 + top));
        continue;
      }
      // The walk releases a job whose GPUs lie in 1-3 domains, listed in each once.
      std::set<uint32_t> on;
      for (uint64_t k = 1 + rng() % 3; k > 0; --k) on.insert(static_cast<uint32_t>(rng() % tops));
      const uint32_t r = live.Released(static_cast<int>(in.size()) * 10);
      ASSERT_EQ(r, in.size());
      in.push_back(on);
      released.push_back(0);
      bool in_live = false;
      for (uint32_t top : on) {
        live.List(top, r);
        in_live = in_live || live.live(top);
      }
      if (in_live) apply(r);
    }
    ASSERT_TRUE(std::equal(order.begin(), order.end(), live.domains().begin(), live.domains().end()));
    for (uint32_t r = 0; r < in.size(); ++r) {
      const bool any_live = std::any_of(in[r].begin(), in[r].end(), [&](uint32_t top) { return live.live(top); });
      EXPECT_EQ(released[r], any_live ? 1 : 0) << "walk " << walk << " job " << r;
      EXPECT_EQ(live.words(r), static_cast<int>(r) * 10);
    }
  }
}

}  // namespace
}  // namespace phalanx
