// BackfillMode::kEasy: EASY backfill. The first job that cannot start gets a reservation; later
// jobs may start now if they leave it alone (and the starvation guard's reservations).
#include "core/sched/policy/backfill_policy.h"

namespace phalanx {

namespace {

class EasyBackfill final : public BackfillPolicy {
 public:
  explicit EasyBackfill(const SchedulerConfig& config) : guard_(config) {}
  bool Backfills() const override { return true; }
  bool Reserves(Time waiting_since, uint32_t gpus, size_t made, Time now) const override {
    return made < 1 || guard_.Reserves(waiting_since, gpus, made, now);
  }

 private:
  StarvationGuard guard_;
};

}  // namespace

std::unique_ptr<BackfillPolicy> MakeEasyBackfill(const PolicyInputs& in) {
  return std::make_unique<EasyBackfill>(in.config);
}

}  // namespace phalanx
