#include "core/sched/policy/policies.h"

namespace phalanx {

namespace {

template <typename Key, typename Policy>
struct Entry {
  Key key;
  std::unique_ptr<Policy> (*make)(const PolicyInputs&);
};

// The registered policies, by the config value that chooses them.
constexpr Entry<QueueOrder, QueuePolicy> kQueuePolicies[] = {
    {QueueOrder::kPriority, MakeMultifactorQueue},
    {QueueOrder::kFifo, MakeFifoQueue},
    {QueueOrder::kAttained, MakeAttainedQueue},
};
constexpr Entry<BackfillMode, BackfillPolicy> kBackfillPolicies[] = {
    {BackfillMode::kNone, MakeNoBackfill},
    {BackfillMode::kEasy, MakeEasyBackfill},
    {BackfillMode::kConservative, MakeConservativeBackfill},
};
constexpr Entry<bool, PreemptionPolicy> kPreemptionPolicies[] = {
    {true, MakeCheckpointCostPreemption},
};

template <typename Key, typename Policy, size_t N>
std::unique_ptr<Policy> Make(const Entry<Key, Policy> (&table)[N], Key key, const PolicyInputs& in) {
  for (const auto& e : table) {
    if (e.key == key) return e.make(in);
  }
  return nullptr;
}

}  // namespace

Policies MakePolicies(const PolicyInputs& in) {
  Policies p;
  p.queue = Make(kQueuePolicies, in.config.order, in);
  p.backfill = Make(kBackfillPolicies, in.config.backfill, in);
  p.preemption = Make(kPreemptionPolicies, in.config.preemption, in);
  p.runtime = in.config.runtime == RuntimeMode::kPredicted ? MakePredictedEstimator(in) : MakeWalltimeEstimator(in);
  return p;
}

}  // namespace phalanx
