// BitCounts (core/sched/internal/bit_counts.h): counters kept in bit planes, a mask of 64 at a
// time, against a plain count per GPU.
#include "core/sched/internal/bit_counts.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

namespace phalanx {
namespace {

TEST(BitCounts, CountsAsAPlainCounterPerGpu) {
  std::mt19937_64 rng(41);
  for (int round = 0; round < 50; ++round) {
    const uint32_t words = 1 + static_cast<uint32_t>(rng() % 4);
    const size_t most = 1 + rng() % 40;
    BitCounts counts;
    counts.Reset(words, most);
    std::vector<uint32_t> plain(words * 64, 0);
    for (int step = 0; step < 400; ++step) {
      const uint32_t w = static_cast<uint32_t>(rng() % words);
      const uint64_t m = rng() & rng();  // about a quarter of the word
      uint64_t can_add = 0, can_remove = 0;
      for (uint32_t b = 0; b < 64; ++b) {
        if ((m >> b) & 1) {
          can_add |= uint64_t{plain[w * 64 + b] < most} << b;
          can_remove |= uint64_t{plain[w * 64 + b] > 0} << b;
        }
      }
      if (rng() % 2 == 0) {
        counts.Add(w, can_add);
        for (uint32_t b = 0; b < 64; ++b) plain[w * 64 + b] += (can_add >> b) & 1;
      } else {
        uint64_t zero = 0;
        for (uint32_t b = 0; b < 64; ++b) {
          if ((can_remove >> b) & 1) zero |= uint64_t{--plain[w * 64 + b] == 0} << b;
        }
        ASSERT_EQ(counts.Remove(w, can_remove), zero) << "round " << round << " step " << step;
      }
      for (uint32_t b = 0; b < 64; ++b) ASSERT_EQ(counts.Count(w, b), plain[w * 64 + b]);
    }
  }
}

TEST(BitCounts, ResetGivesZeroesWithRoomForTheMost) {
  BitCounts counts;
  counts.Reset(2, 5);
  for (int i = 0; i < 5; ++i) counts.Add(1, ~uint64_t{0});
  EXPECT_EQ(counts.Count(1, 63), 5u);
  EXPECT_EQ(counts.Count(0, 0), 0u);
  EXPECT_EQ(counts.Remove(1, uint64_t{1} << 7), 0u);  // 4 left
  counts.Reset(2, 1);
  EXPECT_EQ(counts.Count(1, 63), 0u);
  counts.Add(0, 1);
  EXPECT_EQ(counts.Remove(0, 1), 1u);
}

}  // namespace
}  // namespace phalanx
