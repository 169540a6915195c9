// Seeded randomness for the simulator: a fixed, portable hash (std distributions differ
// between standard libraries), so the same seed gives the same run everywhere.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "core/common/hash.h"

namespace phalanx {

// Uniform in [0, 1), a pure function of its arguments.
constexpr double SeededUniform(uint64_t seed, uint64_t a, uint64_t b) {
  const uint64_t h = SplitMix64(SplitMix64(SplitMix64(seed) ^ a) ^ (b * 0x632be59bd9b4e019ull));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace phalanx
