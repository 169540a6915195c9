// Scheduler::WhatIf, internal to the scheduler's .cc files.
#pragma once

#include <vector>

#include "core/sched/scheduler.h"

namespace phalanx {

// Temporary changes to the Topology, undone in reverse order when the WhatIf goes away:
// "release these running jobs" (as if their time had come) and "block these GPUs" (as if
// reserved). Pseudo job ids for blocks live above 2^62, where no real job id may be.
class Scheduler::WhatIf {
 public:
  explicit WhatIf(Topology& t) : t_(t) {}
  WhatIf(const WhatIf&) = delete;
  WhatIf& operator=(const WhatIf&) = delete;
  ~WhatIf() { Undo(); }

  void ReleaseJob(JobId job) {
    if (t_.Suspend(job)) released_.push_back(job);
  }
  // Blocks the currently free GPUs among `gpus` (one entry on the block stack, maybe empty).
  void Block(const std::vector<GpuId>& gpus) {
    std::vector<GpuId> free;
    for (GpuId g : gpus) {
      if (t_.is_free(g)) free.push_back(g);
    }
    const JobId id = kBlockBase + next_block_++;
    const bool blocked = !free.empty() && t_.Restore(id, free, 0);
    blocks_.push_back(blocked ? id : kNoJob);
    sizes_.push_back(blocked ? free.size() : 0);
    blocked_gpus_ += sizes_.back();
  }
  // Undoes the last Block.
  void PopBlock() {
    if (blocks_.back() != kNoJob) (void)t_.Release(blocks_.back());
    blocks_.pop_back();
    blocked_gpus_ -= sizes_.back();
    sizes_.pop_back();
  }
  // GPUs currently held by blocks (owned by nobody real; maybe on any node).
  size_t blocked_gpus() const { return blocked_gpus_; }
  void Unblock() {
    while (!blocks_.empty()) PopBlock();
  }
  void Undo() {
    Unblock();
    for (auto it = released_.rbegin(); it != released_.rend(); ++it) (void)t_.Resume(*it);
    released_.clear();
  }

 private:
  static constexpr JobId kBlockBase = JobId{1} << 62;
  Topology& t_;
  std::vector<JobId> released_;
  std::vector<JobId> blocks_;
  std::vector<size_t> sizes_;
  size_t blocked_gpus_ = 0;
  uint64_t next_block_ = 0;
};

}  // namespace phalanx
