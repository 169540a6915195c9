// BackfillMode::kNone: strict queue order. Nothing passes a job that cannot start; only the
// starvation guard makes reservations (for the first blocked job, or preemptors with a claim).
#include "core/sched/policy/backfill_policy.h"

namespace phalanx {

namespace {

class NoBackfill final : public BackfillPolicy {
 public:
  explicit NoBackfill(const SchedulerConfig& config) : guard_(config) {}
  bool Backfills() const override { return false; }
  bool Reserves(Time waiting_since, uint32_t gpus, size_t made, Time now) const override {
    return guard_.Reserves(waiting_since, gpus, made, now);
  }

 private:
  StarvationGuard guard_;
};

}  // namespace

std::unique_ptr<BackfillPolicy> MakeNoBackfill(const PolicyInputs& in) {
  return std::make_unique<NoBackfill>(in.config);
}

}  // namespace phalanx
