#include "core/sched/policy/runtime_history.h"

#include <algorithm>

namespace phalanx {

void RuntimeHistory::Push(Last& l, Duration seconds) {
  l.b = l.a;
  l.a = std::max<Duration>(seconds, 1);
  l.n = std::min<uint32_t>(l.n + 1, 2);
}

void RuntimeHistory::Record(const std::string& user, const std::string& name, uint32_t gpus, Duration seconds) {
  Push(by_name_[{user, name, gpus}], seconds);
  Push(by_size_[{user, gpus}], seconds);
}

std::optional<Duration> RuntimeHistory::Predict(const std::string& user, const std::string& name, uint32_t gpus) const {
  const Last* l = nullptr;
  if (auto it = by_name_.find({user, name, gpus}); it != by_name_.end()) l = &it->second;
  else if (auto jt = by_size_.find({user, gpus}); jt != by_size_.end()) l = &jt->second;
  if (!l || l->n == 0) return std::nullopt;
  return l->n == 1 ? l->a : (l->a + l->b + 1) / 2;
}

}  // namespace phalanx
