// runtime = predicted: jobs are planned to run what the same user's last two jobs of the same
// name and size ran (RuntimeHistory), never more than their walltime; a job without history,
// or running past its prediction, is planned on its walltime (Tsafrir et al.'s correction:
// back to the user's estimate). The walltime stays the kill limit.
#include "core/sched/policy/runtime_estimator.h"

#include <algorithm>

namespace phalanx {

namespace {

class PredictedEstimator final : public RuntimeEstimator {
 public:
  explicit PredictedEstimator(const RuntimeHistory& history) : history_(history) {}

  Duration Run(const JobRecord& job) const override {
    const Duration wall = RemainingWalltime(job);
    const std::optional<Duration> p = history_.Predict(job.spec.user, job.spec.name, job.spec.shape.gpus);
    if (!p || *p <= job.progress) return wall;
    return std::clamp<Duration>(*p - job.progress, 1, wall);
  }

  Time End(const JobRecord& running, Time now) const override {
    if (running.spec.suspended) return running.expected_end(now);  // when it will end is the walltime's
    const std::optional<Duration> p = history_.Predict(running.spec.user, running.spec.name, running.spec.shape.gpus);
    if (!p) return running.expected_end();
    const Time planned = running.start + std::clamp<Duration>(*p - running.progress, 1, running.run_walltime);
    return planned > now ? planned : running.expected_end();
  }

 private:
  const RuntimeHistory& history_;
};

}  // namespace

std::unique_ptr<RuntimeEstimator> MakePredictedEstimator(const PolicyInputs& in) {
  return std::make_unique<PredictedEstimator>(in.history);
}

}  // namespace phalanx
