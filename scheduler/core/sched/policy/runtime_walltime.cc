// Jobs are planned to run their walltime (what users ask for, and the limit they are held to).
#include "core/sched/policy/runtime_estimator.h"

namespace phalanx {

namespace {

class WalltimeEstimator final : public RuntimeEstimator {
 public:
  Duration Run(const JobRecord& job) const override { return RemainingWalltime(job); }
  Time End(const JobRecord& running, Time now) const override { return running.expected_end(now); }
};

}  // namespace

std::unique_ptr<RuntimeEstimator> MakeWalltimeEstimator(const PolicyInputs&) {
  return std::make_unique<WalltimeEstimator>();
}

}  // namespace phalanx
