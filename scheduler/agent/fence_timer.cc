#include "agent/fence_timer.h"

#include <algorithm>

namespace phalanx::agent {

using std::chrono::milliseconds;

void FenceTimer::SetLimit(milliseconds limit, Clock::time_point now) {
  limit_ = std::max(limit, milliseconds(0));
  Contact(now);
}

void FenceTimer::Contact(Clock::time_point now) {
  last_contact_ = now;
  fenced_ = false;
}

bool FenceTimer::Due(Clock::time_point now) const {
  return limit_.count() > 0 && !fenced_ && now - last_contact_ >= limit_;
}

milliseconds FenceTimer::UntilDue(Clock::time_point now) const {
  if (limit_.count() <= 0 || fenced_) return std::max(limit_, milliseconds(1'000));
  const auto left = std::chrono::duration_cast<milliseconds>(last_contact_ + limit_ - now);
  return std::max(left, milliseconds(0));
}

}  // namespace phalanx::agent
