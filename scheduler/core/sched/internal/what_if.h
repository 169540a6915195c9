// WhatIf: temporary changes to the Topology, for asking the Placer "what if ...": release running
// jobs (as if their time had come) and block GPUs (as if reserved; Topology::Hold). Everything
// is undone when the WhatIf goes away: blocks first, then releases in reverse order.
//
// Blocks are numbered in the order they are made. A block holds only GPUs that were free when
// they were added to it; the last block can be undone (PopBlock), and any block can take more
// GPUs (Extend) or give all of its GPUs back and stay, empty (Empty). Single GPUs can also be
// held and given back one at a time (HoldOne, UnholdOne), apart from the blocks, for a caller
// that keeps its own count of who wants each GPU.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/common/ids.h"
#include "core/topology/topology.h"

namespace phalanx {

class WhatIf {
 public:
  // The lists a WhatIf keeps, lent by a caller that makes many in turn (one walk after another)
  // so that each does not allocate them anew; empty (one_held all zero) between WhatIfs.
  struct Buffers {
    std::vector<Topology::Suspended> released;
    std::vector<std::vector<GpuId>> blocks;
    std::vector<GpuId> ones;
    std::vector<uint8_t> one_held;
    std::vector<GpuId> scratch;
    std::vector<uint64_t> held_bits;          // Retarget's, all clear between calls
    std::vector<Topology::Suspended> resume;  // Retarget's
    std::vector<JobId> release;               // Retarget's
  };

  explicit WhatIf(Topology& t) : WhatIf(t, own_) {}
  WhatIf(Topology& t, Buffers& lent)
      : lent_(&lent),
        t_(t),
        released_(lent.released),
        blocks_(lent.blocks),
        ones_(lent.ones),
        one_held_(lent.one_held),
        scratch_(lent.scratch) {}
  WhatIf(const WhatIf&) = delete;
  WhatIf& operator=(const WhatIf&) = delete;
  ~WhatIf() { Undo(); }

  void ReleaseJob(JobId job) {
    if (std::optional<Topology::Suspended> s = t_.SuspendJob(job)) released_.push_back(*s);
  }
  // A new block: the currently free GPUs among `gpus` (maybe none).
  void Block(const std::vector<GpuId>& gpus) {
    blocks_.emplace_back();
    Extend(blocks_.size() - 1, gpus);
  }
  // Adds the currently free GPUs among `gpus` to block `i`.
  void Extend(size_t i, const std::vector<GpuId>& gpus) {
    std::vector<GpuId>& free = scratch_;  // reused: Reserve extends a block at every step it places
    free.clear();
    for (GpuId g : gpus) {
      if (t_.is_free(g)) free.push_back(g);
    }
    if (free.empty() || !t_.Hold(free)) return;  // Hold cannot fail: all free
    blocked_gpus_ += free.size();
    blocks_[i].insert(blocks_[i].end(), free.begin(), free.end());
  }
  // Gives block `i`'s GPUs back; the block stays, empty.
  void Empty(size_t i) {
    (void)t_.Unhold(blocks_[i]);
    blocked_gpus_ -= blocks_[i].size();
    blocks_[i].clear();
  }
  bool empty(size_t i) const { return blocks_[i].empty(); }
  // Undoes the last block.
  void PopBlock() {
    Empty(blocks_.size() - 1);
    blocks_.pop_back();
  }
  // Holds GPU `g` if it is free; true if it did.
  bool HoldOne(GpuId g) {
    if (!t_.is_free(g) || !t_.Hold({&g, 1})) return false;
    if (one_held_.size() <= g.value) one_held_.resize(t_.gpu_count(), 0);
    one_held_[g.value] = 1;
    ones_.push_back(g);
    ++blocked_gpus_;
    return true;
  }
  // HoldOne on each of `gpus`, which must all be free (and distinct): one Topology::Hold.
  void HoldEach(const std::vector<GpuId>& gpus) {
    if (gpus.empty() || !t_.Hold(gpus)) return;
    NoteHeld(gpus);
  }
  // ReleaseJob on each of `jobs`, then HoldOne on each of `want` that is free by then: one
  // Topology change (Topology::SuspendJobsAndHold).
  void ReleaseJobsAndHold(std::span<const JobId> jobs, std::span<const GpuId> want) {
    t_.SuspendJobsAndHold(jobs, released_, want, scratch_);
    NoteHeld(scratch_);
  }
  // Gives back GPU `g` if HoldOne holds it.
  void UnholdOne(GpuId g) {
    if (g.value >= one_held_.size() || !one_held_[g.value]) return;
    (void)t_.Unhold({&g, 1});
    one_held_[g.value] = 0;
    --blocked_gpus_;
  }
  // Brings the what-if to: exactly `jobs` released (those the Topology can release), exactly
  // the GPUs of `hold` held (by 64-GPU word; each free once they are), as by HoldOne, and
  // one block, empty. Only the difference from what is in force changes the Topology: the GPUs
  // held that `hold` does not list given back and the released jobs it does not list resumed (one
  // change), then the others released and held (one change). For a WhatIf kept from one use to
  // the next (walk_twin.h).
  void Retarget(std::span<const JobId> jobs, std::span<const uint64_t> hold) {
    const size_t words = hold.size();
    std::vector<uint64_t>& cur = lent_->held_bits;
    cur.resize(words, 0);
    auto mark = [&](GpuId g) { cur[g.value >> 6] |= uint64_t{1} << (g.value & 63); };
    for (const std::vector<GpuId>& block : blocks_) std::for_each(block.begin(), block.end(), mark);
    for (GpuId g : ones_) {
      if (one_held_[g.value]) {
        one_held_[g.value] = 0;
        mark(g);
      }
    }
    // Given back: held and not wanted (in order, a node's GPUs together); resumed: released and
    // not listed.
    std::vector<GpuId>& back = scratch_;
    back.clear();
    for (uint32_t w = 0; w < words; ++w) {
      for (uint64_t b = cur[w] & ~hold[w]; b != 0; b &= b - 1)
        back.push_back(GpuId(w * 64 + static_cast<uint32_t>(std::countr_zero(b))));
    }
    std::vector<JobId>& release = lent_->release;
    std::vector<Topology::Suspended>& resume = lent_->resume;
    t_.SplitSuspended(jobs, released_, resume, release);
    if (!back.empty() || !resume.empty()) {
      if (!t_.UnholdAndResume(back, resume)) {  // cannot happen: every GPU of `back` is held, once
        (void)t_.Unhold(back);
        (void)t_.ResumeJobs(resume);
      }
    }
    // Released, and held: wanted, not held yet (free once released).
    std::vector<GpuId>& add = ones_;  // rebuilt below
    add.clear();
    for (uint32_t w = 0; w < words; ++w) {
      for (uint64_t b = hold[w] & ~cur[w]; b != 0; b &= b - 1)
        add.push_back(GpuId(w * 64 + static_cast<uint32_t>(std::countr_zero(b))));
    }
    if (!release.empty() || !add.empty()) t_.SuspendJobsAndHold(release, released_, add, scratch_);
    else scratch_.clear();
    // Now held: those kept, and those just held.
    for (GpuId g : scratch_) cur[g.value >> 6] |= uint64_t{1} << (g.value & 63);
    ones_.clear();
    if (one_held_.size() < t_.gpu_count()) one_held_.resize(t_.gpu_count(), 0);
    for (uint32_t w = 0; w < words; ++w) {
      for (uint64_t b = cur[w] & hold[w]; b != 0; b &= b - 1) {
        const GpuId g(w * 64 + static_cast<uint32_t>(std::countr_zero(b)));
        one_held_[g.value] = 1;
        ones_.push_back(g);
      }
      cur[w] = 0;
    }
    blocks_.clear();
    blocks_.emplace_back();
    blocked_gpus_ = ones_.size();
  }
  // Forgets every change in force without undoing it (the Topology is about to be replaced).
  void Forget() {
    for (GpuId g : ones_) one_held_[g.value] = 0;
    ones_.clear();
    blocks_.clear();
    released_.clear();
    blocked_gpus_ = 0;
  }

  // GPUs currently held by blocks and HoldOne (owned by nobody real; maybe on any node).
  size_t blocked_gpus() const { return blocked_gpus_; }
  void Unblock() {
    while (!blocks_.empty()) PopBlock();
    // Those HoldOne still holds, given back in one Topology::Unhold.
    std::vector<GpuId>& back = scratch_;
    back.clear();
    for (GpuId g : ones_) {
      if (one_held_[g.value]) {
        one_held_[g.value] = 0;
        back.push_back(g);
      }
    }
    // A node's GPUs together: one counter update per node (mostly in order already: HoldEach).
    if (!std::is_sorted(back.begin(), back.end())) std::sort(back.begin(), back.end());
    (void)t_.Unhold(back);
    blocked_gpus_ -= back.size();
    ones_.clear();
  }
  void Undo() {
    // Every GPU held, given back with the releases undone in one Topology change.
    std::vector<GpuId>& back = scratch_;
    back.clear();
    for (const std::vector<GpuId>& block : blocks_) back.insert(back.end(), block.begin(), block.end());
    const size_t from_ones = back.size();
    for (GpuId g : ones_) {
      if (one_held_[g.value]) {  // (a GPU held, given back and held again is listed twice)
        one_held_[g.value] = 0;
        back.push_back(g);
      }
    }
    if (t_.UnholdAndResume(back, released_)) {  // the last released first
      blocks_.clear();
      ones_.clear();
      blocked_gpus_ = 0;
    } else {  // (not all held: each block and the rest given back apart, as they can be)
      for (size_t i = from_ones; i < back.size(); ++i) one_held_[back[i].value] = 1;
      Unblock();
      (void)t_.ResumeJobs(released_);
    }
    released_.clear();
  }

 private:
  void NoteHeld(std::span<const GpuId> gpus) {
    if (gpus.empty()) return;
    if (one_held_.size() < t_.gpu_count()) one_held_.resize(t_.gpu_count(), 0);
    for (GpuId g : gpus) one_held_[g.value] = 1;
    ones_.insert(ones_.end(), gpus.begin(), gpus.end());
    blocked_gpus_ += gpus.size();
  }

  Buffers own_;  // (unused when lent others)
  Buffers* lent_ = &own_;
  Topology& t_;
  std::vector<Topology::Suspended>& released_;
  std::vector<std::vector<GpuId>>& blocks_;
  std::vector<GpuId>& ones_;        // every GPU HoldOne held (some given back since)
  std::vector<uint8_t>& one_held_;  // by GPU: held by HoldOne now
  std::vector<GpuId>& scratch_;     // Extend's free GPUs, the GPUs held or given back at once
  size_t blocked_gpus_ = 0;
};

}  // namespace phalanx
