// QueueOrder::kPriority: the multifactor priority of core/queue/priority.h.
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/sched/policy/queue_policy.h"

namespace phalanx {

namespace {

class MultifactorQueue final : public QueuePolicy {
 public:
  explicit MultifactorQueue(const PolicyInputs& in)
      : classes_(in.classes), fairshare_(in.fairshare), weights_(in.config.weights), cluster_gpus_(in.cluster_gpus) {}

  void BeginPass(Time) override {
    factors_.clear();
    last_ = nullptr;
  }

  double Priority(const JobRecord& job, Time now) override {
    PriorityInputs in;
    in.class_factor = classes_.class_factor(PriorityClassId(static_cast<uint32_t>(job.class_rank)));
    in.submit = job.spec.submit;
    in.gpus = job.spec.shape.gpus;
    in.cluster_gpus = cluster_gpus_;
    // Jobs come in id order, and users submit in runs: most jobs are the last one's user's.
    if (!last_ || last_->first.first != job.spec.user || last_->first.second != job.spec.account) {
      auto [f, added] = factors_.try_emplace({job.spec.user, job.spec.account}, 0.0);
      if (added) f->second = fairshare_.UserFactor(job.spec.user, job.spec.account, now);
      last_ = &*f;
    }
    in.fairshare_factor = last_->second;
    return JobPriority(in, weights_, now);
  }

 private:
  const PriorityClassTable& classes_;
  const FairshareTracker& fairshare_;
  const PriorityWeights weights_;
  const uint32_t cluster_gpus_;
  // (user, account) -> fairshare factor, for this pass (the views point into the job records).
  // Hashed: asked for every pending job of every pass.
  struct HashPair {
    size_t operator()(const std::pair<std::string_view, std::string_view>& p) const {
      const size_t a = std::hash<std::string_view>{}(p.first);
      return a ^ (std::hash<std::string_view>{}(p.second) + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    }
  };
  std::unordered_map<std::pair<std::string_view, std::string_view>, double, HashPair> factors_;
  const std::pair<const std::pair<std::string_view, std::string_view>, double>* last_ = nullptr;  // into factors_
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeMultifactorQueue(const PolicyInputs& in) {
  return std::make_unique<MultifactorQueue>(in);
}

}  // namespace phalanx
