// preemption = on: victims by the priority-class table, cheapest lost work first.
#include "core/sched/policy/preemption_policy.h"

namespace phalanx {

namespace {

PriorityClassId ClassOf(const JobRecord& job) { return PriorityClassId(static_cast<uint32_t>(job.class_rank)); }

class CheckpointCostPreemption final : public PreemptionPolicy {
 public:
  explicit CheckpointCostPreemption(const PriorityClassTable& classes) : classes_(classes) {}

  bool MayPreempt(PriorityClassId preemptor, const JobRecord& victim) const override {
    return classes_.CanPreempt(preemptor, ClassOf(victim));
  }

  std::optional<double> Cost(const JobRecord& v, bool shrink, Time now) const override {
    const double gpus = static_cast<double>(v.gpus.size());
    // A shrink goes through a checkpoint: only the restart is lost.
    if (shrink) return gpus * static_cast<double>(v.spec.restart_cost);
    if (!v.preemptible || now - v.start < classes_.min_runtime_before_preemption(ClassOf(v))) return std::nullopt;
    return gpus * static_cast<double>(now - v.last_checkpoint + v.spec.restart_cost);
  }

 private:
  const PriorityClassTable& classes_;
};

}  // namespace

std::unique_ptr<PreemptionPolicy> MakeCheckpointCostPreemption(const PolicyInputs& in) {
  return std::make_unique<CheckpointCostPreemption>(in.classes);
}

}  // namespace phalanx
