#include "core/queue/priority.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

namespace phalanx {

Status ValidatePriorityWeights(const PriorityWeights& w) {
  const std::pair<const char*, double> weights[] = {
      {"priority.weights.priority_class", w.priority_class},
      {"priority.weights.age", w.age},
      {"priority.weights.fairshare", w.fairshare},
      {"priority.weights.job_size", w.job_size},
  };
  for (const auto& [where, v] : weights) {
    if (!std::isfinite(v) || v < 0) return Fail(where, "must be finite and >= 0, got " + std::to_string(v));
  }
  if (w.max_age < 0) return Fail("priority.weights.max_age", "must be >= 0 seconds, got " + std::to_string(w.max_age));
  return {};
}

// ---- priority classes ---------------------------------------------------------------------

PriorityClassConfig DefaultPriorityClasses() {
  PriorityClassConfig c;
  c.classes = {
      {.name = "low",
       .preemptible_by_default = true,
       .min_runtime_before_preemption = 600,
       .can_preempt = std::nullopt},
      {.name = "normal",
       .preemptible_by_default = true,
       .min_runtime_before_preemption = 600,
       .can_preempt = std::nullopt},
      {.name = "high",
       .preemptible_by_default = false,
       .min_runtime_before_preemption = 600,
       .can_preempt = std::nullopt},
      {.name = "urgent",
       .preemptible_by_default = false,
       .min_runtime_before_preemption = 600,
       .can_preempt = std::nullopt},
  };
  c.default_class = "normal";
  return c;
}

std::string PriorityClassTable::KnownNames() const {
  std::string out;
  for (const Class& c : classes_) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

Result<PriorityClassTable> PriorityClassTable::Build(const PriorityClassConfig& config) {
  if (config.classes.empty()) return Fail("priority_classes", "no classes defined");
  PriorityClassTable t;
  std::map<std::string, uint32_t, std::less<>> index;
  for (size_t i = 0; i < config.classes.size(); ++i) {
    const PriorityClassSpec& s = config.classes[i];
    const std::string where = "priority_classes[" + std::to_string(i) + "]";
    if (s.name.empty()) return Fail(where + ".name", "empty class name");
    if (!index.emplace(s.name, static_cast<uint32_t>(i)).second) {
      return Fail(where + ".name", "class '" + s.name + "' defined twice");
    }
    if (s.min_runtime_before_preemption < 0) {
      return Fail(where + ".min_runtime_before_preemption",
                  "must be >= 0 seconds, got " + std::to_string(s.min_runtime_before_preemption));
    }
    t.classes_.push_back({s.name, s.preemptible_by_default, s.min_runtime_before_preemption,
                          std::vector<bool>(config.classes.size(), false)});
  }
  for (size_t i = 0; i < config.classes.size(); ++i) {
    const PriorityClassSpec& s = config.classes[i];
    std::vector<bool>& preempts = t.classes_[i].preempts;
    if (!s.can_preempt) {
      for (size_t v = 0; v < i; ++v) preempts[v] = true;
      continue;
    }
    const std::string where = "priority_classes[" + std::to_string(i) + "].can_preempt";
    for (const std::string& victim : *s.can_preempt) {
      const auto it = index.find(victim);
      if (it == index.end()) {
        return Fail(where,
                    "class '" + s.name + "' lists unknown class '" + victim + "' (known: " + t.KnownNames() + ")");
      }
      if (it->second >= i) {
        return Fail(where, "class '" + s.name + "' may only preempt lower classes, not '" + victim + "'");
      }
      if (preempts[it->second]) return Fail(where, "class '" + victim + "' listed twice for '" + s.name + "'");
      preempts[it->second] = true;
    }
  }
  if (config.default_class.empty()) {
    return Fail("priority_classes.default_class", "empty (known: " + t.KnownNames() + ")");
  }
  const auto def = index.find(config.default_class);
  if (def == index.end()) {
    return Fail("priority_classes.default_class",
                "unknown class '" + config.default_class + "' (known: " + t.KnownNames() + ")");
  }
  t.default_ = PriorityClassId(def->second);
  return t;
}

Result<PriorityClassId> PriorityClassTable::Find(std::string_view name) const {
  if (name.empty()) return default_;
  for (uint32_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].name == name) return PriorityClassId(i);
  }
  return Fail("priority_class", "unknown class '" + std::string(name) + "' (known: " + KnownNames() + ")");
}

bool PriorityClassTable::CanPreempt(PriorityClassId preemptor, PriorityClassId victim) const {
  return Valid(preemptor) && Valid(victim) && classes_[preemptor.value].preempts[victim.value];
}

bool PriorityClassTable::preemptible_by_default(PriorityClassId id) const {
  return Valid(id) && classes_[id.value].preemptible_by_default;
}

Duration PriorityClassTable::min_runtime_before_preemption(PriorityClassId id) const {
  return Valid(id) ? classes_[id.value].min_runtime : 0;
}

double PriorityClassTable::class_factor(PriorityClassId id) const {
  if (!Valid(id) || classes_.size() < 2) return 0;
  return static_cast<double>(id.value) / static_cast<double>(classes_.size() - 1);
}

const std::string& PriorityClassTable::name(PriorityClassId id) const {
  static const std::string kEmpty;
  return Valid(id) ? classes_[id.value].name : kEmpty;
}

Result<bool> PriorityClassTable::CanPreempt(std::string_view preemptor, std::string_view victim) const {
  auto a = Find(preemptor);
  PHX_RETURN_IF_ERROR(a);
  auto b = Find(victim);
  PHX_RETURN_IF_ERROR(b);
  return CanPreempt(*a, *b);
}

Result<double> PriorityClassTable::class_factor(std::string_view name) const {
  auto id = Find(name);
  PHX_RETURN_IF_ERROR(id);
  return class_factor(*id);
}

}  // namespace phalanx
