// Seeded randomness for the simulator: a fixed, portable hash (std distributions differ
// between standard libraries), so the same seed gives the same run everywhere.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace phalanx {

// splitmix64's finalizer.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1), a pure function of its arguments.
constexpr double SeededUniform(uint64_t seed, uint64_t a, uint64_t b) {
  const uint64_t h = SplitMix64(SplitMix64(SplitMix64(seed) ^ a) ^ (b * 0x632be59bd9b4e019ull));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace phalanx
