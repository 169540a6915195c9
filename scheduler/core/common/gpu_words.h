// GPUs as 64-GPU words: the bit sets the core's hot loops (Reserve's walk, the Topology's bulk
// changes) use instead of lists.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "core/common/ids.h"

namespace phalanx {

// Calls f(word, bits) for the GPUs of `list`, 64 GPUs a word, a word at a time (once per word for
// a list in order); a GPU listed twice comes in two calls, as it counts twice.
template <class F>
void ByWord(std::span<const GpuId> list, F&& f) {
  uint32_t cw = 0;
  uint64_t cm = 0;
  for (GpuId g : list) {
    const uint32_t w = g.value >> 6;
    const uint64_t b = uint64_t{1} << (g.value & 63);
    if (cm != 0 && (w != cw || (cm & b) != 0)) {
      f(cw, cm);
      cm = 0;
    }
    cw = w;
    cm |= b;
  }
  if (cm != 0) f(cw, cm);
}

}  // namespace phalanx
