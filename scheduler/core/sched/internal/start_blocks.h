// StartBlocks: the reservations a job must not touch if it starts now, applied to the Topology
// as blocks (WhatIf) while the pass asks the Placer. A job that starts now and would end at
// `end` must stay off the GPUs of every reservation that begins before `end`; in start order,
// those reservations are a prefix of the pass's reservations, kept applied as a stack from one
// job to the next so that each job only adds or pops the difference.
// One per pass (PassState). Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/sched/internal/what_if.h"
#include "core/sched/scheduler.h"
#include "core/topology/topology.h"

namespace phalanx {

class StartBlocks {
 public:
  explicit StartBlocks(Topology& t) : what_if_(t) {}

  // Blocks the GPUs of every reservation in `reservations` that begins before `end`, except
  // those of job `except` (a preemptor is not blocked by its own claim).
  void Set(const std::vector<Reservation>& reservations, Time end, JobId except);
  // Gives every blocked GPU back.
  void Clear();
  // Clear, and forget the start order: the reservations changed.
  void Invalidate() {
    Clear();
    order_dirty_ = true;
  }
  // GPUs currently blocked (all of them free otherwise).
  size_t blocked_gpus() const { return what_if_.blocked_gpus(); }

 private:
  WhatIf what_if_;
  std::vector<size_t> order_;  // indices into the reservations, by start time
  size_t applied_ = 0;         // blocks on the stack: order_[0..applied_)
  bool order_dirty_ = true;
};

}  // namespace phalanx
