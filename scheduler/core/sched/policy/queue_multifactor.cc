// QueueOrder::kPriority: the multifactor priority of core/queue/priority.h.
#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/sched/policy/queue_policy.h"

namespace phalanx {

namespace {

class MultifactorQueue final : public QueuePolicy {
 public:
  explicit MultifactorQueue(const PolicyInputs& in)
      : classes_(in.classes), fairshare_(in.fairshare), weights_(in.config.weights), cluster_gpus_(in.cluster_gpus) {}

  void BeginPass(Time) override { std::fill(owner_known_.begin(), owner_known_.end(), 0); }

  double Priority(const JobRecord& job, Time now) override {
    PriorityInputs in;
    in.class_factor = classes_.class_factor(PriorityClassId(static_cast<uint32_t>(job.class_rank)));
    in.submit = job.spec.submit;
    in.gpus = job.spec.shape.gpus;
    in.cluster_gpus = cluster_gpus_;
    in.fairshare_factor = Factor(OwnerOf(job), now);
    return JobPriority(in, weights_, now);
  }

  bool Keyed() const override { return true; }
  // The class and size terms as ExplainPriority weighs them (Terms gives the others).
  PriorityKey KeyOf(const JobRecord& job) override {
    using namespace priority_internal;
    const double class_factor = classes_.class_factor(PriorityClassId(static_cast<uint32_t>(job.class_rank)));
    return {.submit = job.spec.submit,
            .owner = OwnerOf(job),
            .fixed_a = weights_.priority_class * Clamp01(class_factor),
            .fixed_b = weights_.job_size * SizeFactor(job.spec.shape.gpus, cluster_gpus_, weights_.favor_small)};
  }
  // ExplainPriority's total as terms, in its order (nice is 0 here): the owner term is its
  // weighted fairshare.
  KeyedTerms Terms(Time) override {
    return {.age_weight = weights_.age,
            .max_age = weights_.max_age,
            .owner_terms = owner_terms_.data(),
            .known = owner_known_.data()};
  }
  double OwnerTerm(uint32_t owner, Time now) override {
    (void)Factor(owner, now);
    return owner_terms_[owner];
  }

 private:
  const PriorityClassTable& classes_;
  const FairshareTracker& fairshare_;
  const PriorityWeights weights_;
  const uint32_t cluster_gpus_;
  // Every (user, account) a job was asked about, numbered in order (hashed nodes: the names stay
  // put; found by views of a record's names, not copies); their fairshare factor and weighted
  // term in this pass (known: computed already; all forgotten at BeginPass).
  struct OwnerHash {
    using is_transparent = void;
    size_t operator()(const std::pair<std::string_view, std::string_view>& p) const {
      const size_t a = std::hash<std::string_view>{}(p.first);
      return a ^ (std::hash<std::string_view>{}(p.second) + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    }
    size_t operator()(const std::pair<std::string, std::string>& p) const {
      return (*this)(std::pair<std::string_view, std::string_view>(p.first, p.second));
    }
  };
  struct OwnerEq {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::string_view(a.first) == std::string_view(b.first) &&
             std::string_view(a.second) == std::string_view(b.second);
    }
  };
  std::unordered_map<std::pair<std::string, std::string>, uint32_t, OwnerHash, OwnerEq> owner_ids_;
  std::vector<const std::pair<std::string, std::string>*> owners_;
  std::vector<double> owner_factors_, owner_terms_;
  std::vector<uint8_t> owner_known_;
  uint32_t last_owner_ = 0;  // OwnerOf's last answer

  // The job's (user, account) number. Jobs come in runs of one user's: the last answer first.
  uint32_t OwnerOf(const JobRecord& job) {
    const std::pair<std::string_view, std::string_view> who{job.spec.user, job.spec.account};
    if (last_owner_ < owners_.size() && OwnerEq{}(*owners_[last_owner_], who)) return last_owner_;
    auto it = owner_ids_.find(who);
    if (it == owner_ids_.end()) {
      it = owner_ids_.emplace(std::pair<std::string, std::string>(who), static_cast<uint32_t>(owners_.size())).first;
      owners_.push_back(&it->first);
      owner_factors_.push_back(0);
      owner_terms_.push_back(0);
      owner_known_.push_back(0);
    }
    return last_owner_ = it->second;
  }
  // The owner's fairshare factor, computed once a pass (its weighted term with it).
  double Factor(uint32_t owner, Time now) {
    if (!owner_known_[owner]) {
      const double f = fairshare_.UserFactor(owners_[owner]->first, owners_[owner]->second, now);
      owner_factors_[owner] = f;
      owner_terms_[owner] = weights_.fairshare * priority_internal::Clamp01(f);
      owner_known_[owner] = 1;
    }
    return owner_factors_[owner];
  }
};

}  // namespace

std::unique_ptr<QueuePolicy> MakeMultifactorQueue(const PolicyInputs& in) {
  return std::make_unique<MultifactorQueue>(in);
}

}  // namespace phalanx
