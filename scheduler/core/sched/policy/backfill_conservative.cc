// BackfillMode::kConservative: conservative backfill. The first reserve_depth jobs that cannot
// start (0: every one) get a reservation; a later job may start now only if it delays none of
// them.
#include <cstdint>

#include "core/sched/policy/backfill_policy.h"

namespace phalanx {

namespace {

class ConservativeBackfill final : public BackfillPolicy {
 public:
  explicit ConservativeBackfill(const SchedulerConfig& config)
      : depth_(config.reserve_depth == 0 ? SIZE_MAX : config.reserve_depth), guard_(config) {}
  bool Backfills() const override { return true; }
  bool Reserves(Time waiting_since, uint32_t gpus, size_t made, Time now) const override {
    return made < depth_ || guard_.Reserves(waiting_since, gpus, made, now);
  }

 private:
  size_t depth_;
  StarvationGuard guard_;
};

}  // namespace

std::unique_ptr<BackfillPolicy> MakeConservativeBackfill(const PolicyInputs& in) {
  return std::make_unique<ConservativeBackfill>(in.config);
}

}  // namespace phalanx
