// BitCounts: a small counter per GPU, 64 GPUs to a word, kept in bit planes (plane p of word w
// holds bit p of the counts of the word's 64 GPUs). Adding one to, or taking one from, every GPU
// of a 64-bit mask is then a binary increment or decrement of 64 counters at once: a few word
// operations per plane the carry reaches. Reserve's walks count this way, before they change the
// Topology, how many reservations want each GPU (a reservation's GPUs are a few words: a block
// is a few nodes, numbered together).
// Pure; no thread-safety.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace phalanx {

class BitCounts {
 public:
  // `words` words of counters, all zero, each of which may reach `most` (no further).
  void Reset(size_t words, size_t most) {
    planes_ = static_cast<uint32_t>(std::bit_width(most));
    bits_.assign(words * planes_, 0);
  }
  // One more for each GPU of mask m in word w.
  void Add(uint32_t w, uint64_t m) {
    uint64_t* plane = bits_.data() + size_t{w} * planes_;
    for (uint64_t carry = m, p = 0; carry != 0; ++p) {  // never past the last plane: counts fit
      const uint64_t next = plane[p] & carry;
      plane[p] ^= carry;
      carry = next;
    }
  }
  // One less for each GPU of mask m in word w, each above zero; returns those now at zero.
  uint64_t Remove(uint32_t w, uint64_t m) {
    uint64_t* plane = bits_.data() + size_t{w} * planes_;
    for (uint64_t borrow = m, p = 0; borrow != 0; ++p) {  // every count is above zero: no borrow out
      const uint64_t next = ~plane[p] & borrow;
      plane[p] ^= borrow;
      borrow = next;
    }
    uint64_t any = 0;
    for (uint32_t p = 0; p < planes_; ++p) any |= plane[p];
    return m & ~any;
  }
  // The count of GPU `bit` (0-63) of word w.
  uint32_t Count(uint32_t w, uint32_t bit) const {
    const uint64_t* plane = bits_.data() + size_t{w} * planes_;
    uint32_t count = 0;
    for (uint32_t p = 0; p < planes_; ++p) count |= static_cast<uint32_t>((plane[p] >> bit) & 1) << p;
    return count;
  }

 private:
  std::vector<uint64_t> bits_;  // plane p of word w at [w * planes_ + p]
  uint32_t planes_ = 0;
};

}  // namespace phalanx
