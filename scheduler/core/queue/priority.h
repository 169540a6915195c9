// Multifactor job priority (after Slurm's priority/multifactor) and the priority-class table.
//
// JobPriority is a weighted sum of factors, each in [0, 1], minus the job's nice value:
//   priority = w_class * class_factor + w_age * age + w_fairshare * fairshare
//            + w_size * size - nice
//   age  = min(1, (now - submit) / max_age)   (0 before submit; 1 when max_age <= 0)
//   size = gpus / cluster_gpus, or 1 - that with favor_small  (clamped to [0, 1]; 0 when
//          cluster_gpus = 0, and then 1 with favor_small)
// Inputs outside [0, 1] (class_factor, fairshare_factor) are clamped. See docs/priority.md.
//
// PriorityClassTable: named classes in ascending rank ("low" < "normal" < "high" < "urgent"),
// a default class, who may preempt whom, and per-class preemption defaults. Built once from a
// plain PriorityClassConfig (no file I/O here); names resolve to a PriorityClassId.
// Thread-safety: free functions are pure; a built table is immutable and safe to share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/common/time.h"

namespace phalanx {

struct PriorityWeights {
  double priority_class = 10000;
  double age = 1000;
  double fairshare = 5000;
  double job_size = 1000;
  Duration max_age = 7 * 24 * 3600;  // age saturates here (Slurm's PriorityMaxAge)
  bool favor_small = false;          // size factor 1 - gpus/cluster_gpus (PriorityFavorSmall)
};

// Fails on a weight that is negative or not finite, or max_age < 0.
Status ValidatePriorityWeights(const PriorityWeights& weights);

struct PriorityInputs {
  double class_factor = 0;  // 0..1, from the job's priority class rank (class_factor())
  Time submit = 0;
  uint32_t gpus = 0;
  uint32_t cluster_gpus = 0;
  double fairshare_factor = 1;  // 0..1, FairshareTracker::UserFactor
  double nice = 0;              // subtracted as is; may be negative
};

// Every factor and its weighted term, as `sprio` shows them. total = the sum of the weighted
// terms minus nice.
struct PriorityBreakdown {
  double class_factor = 0, age = 0, fairshare = 0, job_size = 0;  // each in [0, 1]
  double weighted_class = 0, weighted_age = 0, weighted_fairshare = 0, weighted_job_size = 0;
  double nice = 0;
  double total = 0;
};

namespace priority_internal {

inline double Clamp01(double v) { return std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 1.0); }

inline double AgeFactor(Time submit, Time now, Duration max_age) {
  if (now <= submit) return 0;
  if (max_age <= 0 || now - submit >= max_age) return 1;  // (the quotient would be >= 1)
  return std::min(1.0, static_cast<double>(now - submit) / static_cast<double>(max_age));
}

inline double SizeFactor(uint32_t gpus, uint32_t cluster_gpus, bool favor_small) {
  const double share = cluster_gpus == 0 ? 0.0 : Clamp01(static_cast<double>(gpus) / cluster_gpus);
  return favor_small ? 1.0 - share : share;
}

}  // namespace priority_internal

// Inline: a pass asks it for every pending job (and JobPriority is its total, to the bit).
inline PriorityBreakdown ExplainPriority(const PriorityInputs& in, const PriorityWeights& w, Time now) {
  using namespace priority_internal;
  PriorityBreakdown b;
  b.class_factor = Clamp01(in.class_factor);
  b.age = AgeFactor(in.submit, now, w.max_age);
  b.fairshare = Clamp01(in.fairshare_factor);
  b.job_size = SizeFactor(in.gpus, in.cluster_gpus, w.favor_small);
  b.weighted_class = w.priority_class * b.class_factor;
  b.weighted_age = w.age * b.age;
  b.weighted_fairshare = w.fairshare * b.fairshare;
  b.weighted_job_size = w.job_size * b.job_size;
  b.nice = in.nice;
  b.total = b.weighted_class + b.weighted_age + b.weighted_fairshare + b.weighted_job_size - b.nice;
  return b;
}

inline double JobPriority(const PriorityInputs& in, const PriorityWeights& weights, Time now) {
  return ExplainPriority(in, weights, now).total;
}

// ---- priority classes ---------------------------------------------------------------------

using PriorityClassId = StrongId<struct PriorityClassTag>;  // index into the table, = rank

struct PriorityClassSpec {
  std::string name;
  bool preemptible_by_default = false;  // a job of this class is preemptible unless it says
  Duration min_runtime_before_preemption = 0;
  // Classes a job of this class may preempt; each must rank strictly lower (so preemption can
  // never cycle). Unset: every lower class. Empty: none.
  std::optional<std::vector<std::string>> can_preempt;
};

struct PriorityClassConfig {
  std::vector<PriorityClassSpec> classes;  // lowest rank first
  std::string default_class;               // for jobs that name none
};

// low < normal < high < urgent, default normal; low and normal preemptible by default, after
// 10 minutes; each class may preempt every lower class.
PriorityClassConfig DefaultPriorityClasses();

class PriorityClassTable {
 public:
  // Fails on: no classes, an empty or repeated name, min_runtime_before_preemption < 0, a
  // can_preempt entry that is unknown, repeated, the class itself or a higher class, or a
  // default_class that is empty or unknown. Unknown names are reported with the known ones.
  static Result<PriorityClassTable> Build(const PriorityClassConfig& config);

  // The class named `name`; an empty name means the default class. Fails on an unknown name,
  // naming it and listing the known classes.
  Result<PriorityClassId> Find(std::string_view name) const;
  PriorityClassId default_class() const { return default_; }

  // By id (ids come from Find/default_class; an invalid id gives false / 0 / "").
  bool CanPreempt(PriorityClassId preemptor, PriorityClassId victim) const;
  bool preemptible_by_default(PriorityClassId id) const;
  Duration min_runtime_before_preemption(PriorityClassId id) const;
  double class_factor(PriorityClassId id) const;  // rank / (classes - 1); 0 with one class
  const std::string& name(PriorityClassId id) const;

  // By name: the same, failing on unknown names as Find does.
  Result<bool> CanPreempt(std::string_view preemptor, std::string_view victim) const;
  Result<double> class_factor(std::string_view name) const;

  size_t size() const { return classes_.size(); }
  std::string KnownNames() const;  // "low, normal, high, urgent"

 private:
  struct Class {
    std::string name;
    bool preemptible_by_default = false;
    Duration min_runtime = 0;
    std::vector<bool> preempts;  // indexed by victim id
  };
  bool Valid(PriorityClassId id) const { return id.valid() && id.value < classes_.size(); }

  std::vector<Class> classes_;
  PriorityClassId default_;
};

}  // namespace phalanx
