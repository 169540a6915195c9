// QueueOrder::kAttained: least attained service first (Tiresias' discretised 2D-LAS). The
// priority is, from most to least significant: the class rank, the service queue (lower
// first: service_queue.h), then the multifactor priority without its class term (age,
// fairshare, size; core/queue/priority.h), below one queue step, within a queue.
#include <map>
#include <string_view>
#include <utility>

#include "core/sched/policy/queue_policy.h"
#include "core/sched/policy/service_queue.h"

namespace phalanx {

namespace {

class AttainedQueue final : public QueuePolicy {
 public:
  explicit AttainedQueue(const PolicyInputs& in)
      : fairshare_(in.fairshare),
        weights_(in.config.weights),
        thresholds_(in.config.service_queues),
        cluster_gpus_(in.cluster_gpus) {
    // One queue step outweighs the whole multifactor rest; one class step every queue.
    step_ = 10 * (weights_.age + weights_.fairshare + weights_.job_size) + 1;
    class_step_ = step_ * static_cast<double>(thresholds_.size() + 1);
  }

  void BeginPass(Time) override { factors_.clear(); }

  double Priority(const JobRecord& job, Time now) override {
    PriorityInputs in;
    in.class_factor = 0;
    in.submit = job.spec.submit;
    in.gpus = job.spec.shape.gpus;
    in.cluster_gpus = cluster_gpus_;
    auto [f, added] = factors_.try_emplace({job.spec.user, job.spec.account}, 0.0);
    if (added) f->second = fairshare_.UserFactor(job.spec.user, job.spec.account, now);
    in.fairshare_factor = f->second;
    const uint32_t queue = ServiceQueue(thresholds_, job, now);
    return class_step_ * job.class_rank + step_ * static_cast<double>(thresholds_.size() - queue) +
           JobPriority(in, weights_, now);
  }

 private:
  const FairshareTracker& fairshare_;
  const PriorityWeights weights_;
  const std::vector<double> thresholds_;
  const uint32_t cluster_gpus_;
  double step_ = 0, class_step_ = 0;
  std::map<std::pair<std::string_view, std::string_view>, double> factors_;
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeAttainedQueue(const PolicyInputs& in) { return std::make_unique<AttainedQueue>(in); }

}  // namespace phalanx
