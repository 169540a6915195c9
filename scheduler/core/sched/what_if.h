// Scheduler::WhatIf, internal to the scheduler's .cc files.
#pragma once

#include <vector>

#include "core/sched/scheduler.h"

namespace phalanx {

// Temporary changes to the Topology, undone in reverse order when the WhatIf goes away:
// "release these running jobs" (as if their time had come) and "block these GPUs" (as if
// reserved; Topology::Hold).
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
    (void)t_.Hold(free);  // cannot fail: all free
    blocked_gpus_ += free.size();
    blocks_.push_back(std::move(free));
  }
  // Undoes the last Block.
  void PopBlock() {
    (void)t_.Unhold(blocks_.back());
    blocked_gpus_ -= blocks_.back().size();
    blocks_.pop_back();
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
  Topology& t_;
  std::vector<JobId> released_;
  std::vector<std::vector<GpuId>> blocks_;
  size_t blocked_gpus_ = 0;
};

}  // namespace phalanx
