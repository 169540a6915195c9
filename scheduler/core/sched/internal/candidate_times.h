// CandidateTimes: the times a Reserve walk tries, in order and each once: the running jobs'
// release times and the reservations' bounds, both sorted, merged as the walk goes (most walks
// end after a few dozen steps, long before the last of hundreds of releases, and merging them
// all first cost more than the steps). A walk that starts at a later time (its floor) skips to
// it.
// Pure; no thread-safety.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <utility>

#include "core/common/ids.h"
#include "core/common/time.h"

namespace phalanx {

class CandidateTimes {
 public:
  CandidateTimes(std::span<const std::pair<Time, JobId>> ends, std::span<const Time> bounds)
      : ends_(ends), bounds_(bounds) {}

  // The next time, or none after the last.
  std::optional<Time> Next() {
    for (;;) {
      const bool has_end = end_ < ends_.size(), has_bound = bound_ < bounds_.size();
      if (!has_end && !has_bound) return std::nullopt;
      const Time t =
          !has_bound || (has_end && ends_[end_].first <= bounds_[bound_]) ? ends_[end_++].first : bounds_[bound_++];
      if (any_ && t == last_) continue;
      any_ = true;
      last_ = t;
      return t;
    }
  }

  // The first time not before `t` (kForever: none), wherever the walk is.
  Time From(Time t) const {
    const size_t e = EndsFrom(t), b = BoundsFrom(t);
    Time first = kForever;
    if (e < ends_.size()) first = ends_[e].first;
    if (b < bounds_.size()) first = std::min(first, bounds_[b]);
    return first;
  }

  // Next() returns From(t) next, then the times after it. Returns the index of the first release
  // time not before t.
  size_t SkipTo(Time t) {
    end_ = EndsFrom(t);
    bound_ = BoundsFrom(t);
    any_ = false;
    return end_;
  }

 private:
  size_t EndsFrom(Time t) const {
    return static_cast<size_t>(std::lower_bound(ends_.begin(), ends_.end(), t,
                                                [](const std::pair<Time, JobId>& e, Time v) { return e.first < v; }) -
                               ends_.begin());
  }
  size_t BoundsFrom(Time t) const {
    return static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), t) - bounds_.begin());
  }

  std::span<const std::pair<Time, JobId>> ends_;
  std::span<const Time> bounds_;
  size_t end_ = 0, bound_ = 0;
  bool any_ = false;  // a time returned, `last_`
  Time last_ = 0;
};

}  // namespace phalanx
