// FenceTimer (agent/fence_timer.h): the agent's count of time without contact with phalanxd,
// on made-up time points.
#include "agent/fence_timer.h"

#include "agent/daemon_link.h"

#include <gtest/gtest.h>

namespace phalanx::agent {
namespace {

using namespace std::chrono_literals;
using Clock = FenceTimer::Clock;

TEST(FenceTimer, OffUntilTheDaemonGivesALimit) {
  FenceTimer f;
  const Clock::time_point t0{};
  EXPECT_FALSE(f.Due(t0 + 1000s));
  f.SetLimit(0ms, t0);  // an older daemon, or agents.fence: false
  EXPECT_FALSE(f.Due(t0 + 1000s));
  EXPECT_EQ(f.UntilDue(t0), 1000ms);  // just a poll period
}

TEST(FenceTimer, DueOnceTheLimitPassesWithoutContact) {
  FenceTimer f;
  const Clock::time_point t0 = Clock::time_point{} + 100s;
  f.SetLimit(45s, t0);  // the registration is a contact
  EXPECT_EQ(f.UntilDue(t0 + 5s), 40s);
  EXPECT_FALSE(f.Due(t0 + 44'999ms));
  EXPECT_TRUE(f.Due(t0 + 45s));
  f.Fence();
  EXPECT_TRUE(f.fenced());
  EXPECT_FALSE(f.Due(t0 + 46s));  // once per cut
  EXPECT_FALSE(f.Due(t0 + 500s));
}

TEST(FenceTimer, ContactBeforeTheLimitPutsItOff) {
  FenceTimer f;
  const Clock::time_point t0 = Clock::time_point{} + 100s;
  f.SetLimit(45s, t0);
  f.Contact(t0 + 40s);  // a heartbeat ack
  EXPECT_FALSE(f.Due(t0 + 45s));
  EXPECT_FALSE(f.Due(t0 + 84s));
  EXPECT_TRUE(f.Due(t0 + 85s));
  EXPECT_EQ(f.UntilDue(t0 + 90s), 0ms);
}

TEST(FenceTimer, ContactAfterAFenceArmsItAgain) {
  FenceTimer f;
  const Clock::time_point t0 = Clock::time_point{} + 100s;
  f.SetLimit(10s, t0);
  ASSERT_TRUE(f.Due(t0 + 10s));
  f.Fence();
  f.Contact(t0 + 30s);  // the link is back
  EXPECT_FALSE(f.fenced());
  EXPECT_FALSE(f.Due(t0 + 39s));
  EXPECT_TRUE(f.Due(t0 + 40s));
}

TEST(FenceTimer, ANewRegistrationCanTurnItOff) {
  FenceTimer f;
  const Clock::time_point t0 = Clock::time_point{} + 100s;
  f.SetLimit(10s, t0);
  f.SetLimit(0ms, t0 + 5s);  // re-registered with a daemon that does not fence
  EXPECT_FALSE(f.Due(t0 + 100s));
  EXPECT_EQ(f.limit(), 0ms);
}

// The link's wait between rounds of attempts, as the agent caps it at a quarter of the fence:
// a daemon back 2 s into a 4 s fence is tried again before the fence, however long the link
// had been backing off (a flaky CI run once showed 0.5, 1.2, 2.3 s waits: the third retry
// came 20 ms after the fence had stopped the job).
TEST(FenceTimer, TheLinkRetriesAtLeastFourTimesWithinTheFence) {
  const std::chrono::milliseconds fence = 4s, initial = 500ms, max = 30s;
  std::chrono::milliseconds backoff = initial, waited{0};
  int attempts = 0;
  while (waited < fence) {
    const std::chrono::milliseconds base = CappedBackoff(backoff, fence / 4, initial);
    EXPECT_LE(base, fence / 4);
    waited += base * 12 / 10;  // the longest jitter
    ++attempts;
    backoff = std::min(backoff * 2, max);
  }
  EXPECT_GE(attempts, 4);
  EXPECT_EQ(CappedBackoff(16s, 0ms, initial), 16s);        // no fence: the plain backoff
  EXPECT_EQ(CappedBackoff(16s, 100ms, initial), initial);  // never faster than the first retry
  EXPECT_EQ(CappedBackoff(250ms, 1s, initial), 250ms);     // below the cap: unchanged
}

}  // namespace
}  // namespace phalanx::agent
