// LiveTops: which domains a Reserve walk that brings domains to its time one by one (`per_top`
// in reserve.cc) has brought there, and the jobs it released that the Topology has not released
// yet. Such a walk never brings the whole Topology to its time t: a domain of its `tops` is
// brought there the first time a search looks in it (its jobs released by t released in the
// Topology, its wanted GPUs held), and from then on the steps change it as they go. So each job
// the walk releases is listed in every domain its GPUs are in, and bringing a domain to t
// releases the listed jobs the Topology has not released yet (a job on two domains: once).
// Bookkeeping only: what the Topology does is the walk's (its WhatIf). `Words` is what the walk
// keeps of a released job (its GPUs' words). The storage is kept from walk to walk of a pass.
// Pure; no thread-safety.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/common/ids.h"

namespace phalanx {

template <class Words>
class LiveTops {
 public:
  // A walk's start over `tops` domains: none brought to t, no job released.
  void Begin(size_t tops) {
    live_.assign(tops, 0);
    domains_.clear();
    words_.clear();
    applied_.clear();
    if (lists_.size() < tops) lists_.resize(tops);
    for (size_t i = 0; i < tops; ++i) lists_[i].clear();
  }

  // Whether domain `top` (an index in `tops`) is brought to t.
  bool live(uint32_t top) const { return live_[top] != 0; }
  // The domains brought to t, in the order they were.
  std::span<const DomainId> domains() const { return domains_; }

  // The walk released its next job (index r: 0, 1, ... in the order released), with `words`;
  // List(top, r) for each domain its GPUs are in.
  uint32_t Released(Words words) {
    words_.push_back(words);
    applied_.push_back(0);
    return static_cast<uint32_t>(words_.size() - 1);
  }
  void List(uint32_t top, uint32_t r) { lists_[top].push_back(r); }
  Words words(uint32_t r) const { return words_[r]; }

  // Marks job r released in the Topology: false if it already was (nothing to do).
  bool Apply(uint32_t r) {
    if (applied_[r]) return false;
    applied_[r] = 1;
    return true;
  }

  // Marks domain `top` (the DomainId `domain`) brought to t; the jobs listed in it, for the
  // caller to release (Apply tells which the Topology has not released yet).
  std::span<const uint32_t> MakeLive(uint32_t top, DomainId domain) {
    live_[top] = 1;
    domains_.push_back(domain);
    return lists_[top];
  }

 private:
  std::vector<uint8_t> live_;  // by index in `tops`
  std::vector<DomainId> domains_;
  std::vector<Words> words_;                  // by released job
  std::vector<uint8_t> applied_;              // by released job: released in the Topology
  std::vector<std::vector<uint32_t>> lists_;  // by index in `tops`: its released jobs
};

}  // namespace phalanx
