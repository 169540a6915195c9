#include "core/sched/policy/backfill_policy.h"

#include <cstdint>

namespace phalanx {

StarvationGuard::StarvationGuard(const SchedulerConfig& config)
    : large_gpus_(config.reserve_large_gpus),
      after_wait_(config.reserve_after_wait),
      cap_(config.reserve_depth == 0 ? SIZE_MAX : config.reserve_depth) {}

bool StarvationGuard::Reserves(Time waiting_since, uint32_t gpus, size_t made, Time now) const {
  const bool guarded =
      (large_gpus_ > 0 && gpus >= large_gpus_) || (after_wait_ > 0 && now - waiting_since >= after_wait_);
  return guarded && made < cap_;
}

}  // namespace phalanx
