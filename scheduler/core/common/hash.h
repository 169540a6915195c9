// A fixed, portable 64-bit mix (std::hash differs between standard libraries), for hashes that
// must give the same answers everywhere: the simulator's seeded randomness, the planner's treap,
// the Topology's fingerprints.
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

}  // namespace phalanx
