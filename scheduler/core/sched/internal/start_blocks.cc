#include "core/sched/internal/start_blocks.h"

#include <algorithm>

namespace phalanx {

void StartBlocks::Want(const std::vector<GpuId>& gpus) {
  if (wants_.size() < t_.gpu_count()) {
    wants_.resize(t_.gpu_count(), 0);
    mine_.resize(t_.gpu_count(), 0);
    listed_.resize(t_.gpu_count(), 0);
  }
  changed_.clear();
  for (GpuId g : gpus) {
    if (wants_[g.value]++ > 0) continue;
    if (!listed_[g.value]) {
      listed_[g.value] = 1;
      wanted_.push_back(g);
    }
    if (t_.is_free(g)) {
      mine_[g.value] = 1;
      changed_.push_back(g);
    }
  }
  if (!changed_.empty() && t_.Hold(changed_)) held_ += changed_.size();  // cannot fail: all free
}

void StartBlocks::Unwant(const std::vector<GpuId>& gpus) {
  changed_.clear();
  for (GpuId g : gpus) {
    if (--wants_[g.value] > 0 || !mine_[g.value]) continue;
    mine_[g.value] = 0;
    changed_.push_back(g);
  }
  if (!changed_.empty() && t_.Unhold(changed_)) held_ -= changed_.size();  // cannot fail: held here
}

void StartBlocks::Clear() {
  changed_.clear();
  for (GpuId g : wanted_) {
    wants_[g.value] = 0;
    listed_[g.value] = 0;
    if (mine_[g.value]) {
      mine_[g.value] = 0;
      changed_.push_back(g);
    }
  }
  wanted_.clear();
  std::sort(changed_.begin(), changed_.end());  // a node's GPUs together: one counter update per node
  if (!changed_.empty() && t_.Unhold(changed_)) held_ -= changed_.size();
  applied_ = 0;
  applied_end_ = -kForever;
  frees_ = t_.frees();
}

void StartBlocks::Set(const std::vector<Reservation>& reservations, Time end, JobId except) {
  if (t_.frees() != frees_) Clear();  // a wanted GPU may have come free: all made anew
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
    // A preemptor must not be blocked by its own claim: the others, one by one.
    for (size_t i : order_) {
      if (reservations[i].start < end && reservations[i].job != except) Want(reservations[i].gpus);
    }
    order_dirty_ = true;  // what is applied is no prefix: the next Set starts anew
    return;
  }
  ApplyTo(reservations, end);
}

void StartBlocks::ApplyTo(const std::vector<Reservation>& reservations, Time end) {
  const size_t want = static_cast<size_t>(
      std::partition_point(order_.begin(), order_.end(), [&](size_t i) { return reservations[i].start < end; }) -
      order_.begin());
  while (applied_ > want) Unwant(reservations[order_[--applied_]].gpus);
  while (applied_ < want) Want(reservations[order_[applied_++]].gpus);
  applied_end_ = end;
}

void StartBlocks::Appended(const std::vector<Reservation>& reservations) {
  if (order_dirty_) return;  // made anew at the next Set
  const Time end = applied_end_;
  if (t_.frees() != frees_) Clear();  // a wanted GPU may have come free: made anew below
  for (size_t i = order_.size(); i < reservations.size(); ++i) {
    const Time start = reservations[i].start;
    order_.insert(std::upper_bound(order_.begin(), order_.end(), start,
                                   [&](Time t, size_t j) { return t < reservations[j].start; }),
                  i);
    // Before the last Set's end: inside the applied prefix (every reservation after it in the
    // order begins at that end or later).
    if (start < applied_end_) {
      ++applied_;
      Want(reservations[i].gpus);
    }
  }
  if (applied_end_ != end) ApplyTo(reservations, end);
}

}  // namespace phalanx
