#include "service/user_limits.h"

#include <algorithm>

namespace phalanx::service {

bool TokenBucket::Take(double now_s) {
  if (now_s > last_) {
    tokens_ = std::min(burst_, tokens_ + (now_s - last_) * rate_);
    last_ = now_s;
  }
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

bool TokenBucket::Full(double now_s) const {
  return std::min(burst_, tokens_ + std::max(0.0, now_s - last_) * rate_) >= burst_;
}

bool UidRateLimiter::Allow(uint32_t uid, double now_s) {
  if (!enabled() || exempt_.contains(uid)) return true;
  MutexLock lock(&mu_);
  // Bounded memory: buckets that refilled completely are the same as new ones.
  if (buckets_.size() > 10000) std::erase_if(buckets_, [now_s](const auto& kv) { return kv.second.Full(now_s); });
  auto it = buckets_.try_emplace(uid, rate_, static_cast<double>(burst_), now_s).first;
  if (it->second.Take(now_s)) return true;
  ++refused_;
  return false;
}

uint64_t UidRateLimiter::refused() const {
  MutexLock lock(&mu_);
  return refused_;
}

}  // namespace phalanx::service
