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
  };

  explicit WhatIf(Topology& t) : WhatIf(t, own_) {}
  WhatIf(Topology& t, Buffers& lent)
      : t_(t),
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
  Topology& t_;
  std::vector<Topology::Suspended>& released_;
  std::vector<std::vector<GpuId>>& blocks_;
  std::vector<GpuId>& ones_;        // every GPU HoldOne held (some given back since)
  std::vector<uint8_t>& one_held_;  // by GPU: held by HoldOne now
  std::vector<GpuId>& scratch_;     // Extend's free GPUs, the GPUs held or given back at once
  size_t blocked_gpus_ = 0;
};

}  // namespace phalanx
