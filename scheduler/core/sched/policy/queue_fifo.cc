// QueueOrder::kFifo: submit time only (every priority is 0).
#include "core/sched/policy/queue_policy.h"

namespace phalanx {

namespace {

class FifoQueue final : public QueuePolicy {
 public:
  void BeginPass(Time) override {}
  double Priority(const JobRecord&, Time) override { return 0; }
  bool Keyed() const override { return true; }
  PriorityKey KeyOf(const JobRecord&) override { return {}; }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeFifoQueue(const PolicyInputs&) { return std::make_unique<FifoQueue>(); }

}  // namespace phalanx
