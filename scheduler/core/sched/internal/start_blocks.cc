#include "core/sched/internal/start_blocks.h"

#include <algorithm>

namespace phalanx {

void StartBlocks::Clear() {
  what_if_.Unblock();
  applied_ = 0;
}

void StartBlocks::Set(const std::vector<Reservation>& reservations, Time end, JobId except) {
  bool own = false;
  for (const Reservation& r : reservations) own = own || r.job == except;
  if (order_dirty_ || own) {
    Clear();
    order_.resize(reservations.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return reservations[a].start < reservations[b].start; });
    order_dirty_ = false;
  }
  if (own) {
    // A preemptor must not be blocked by its own claim: block the others one by one.
    for (size_t i : order_) {
      if (reservations[i].start < end && reservations[i].job != except) what_if_.Block(reservations[i].gpus);
    }
    order_dirty_ = true;  // the stack no longer matches a prefix
    applied_ = 0;
    return;
  }
  const size_t want = static_cast<size_t>(
      std::partition_point(order_.begin(), order_.end(), [&](size_t i) { return reservations[i].start < end; }) -
      order_.begin());
  while (applied_ > want) {
    what_if_.PopBlock();
    --applied_;
  }
  while (applied_ < want) what_if_.Block(reservations[order_[applied_++]].gpus);
}

}  // namespace phalanx
