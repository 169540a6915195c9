// Class rules: how the simulator maps trace jobs to priority classes, preemptibility,
// elasticity, checkpointing and placement constraints (`phalanx sim --class-rule`,
// docs/simulator.md#class-rules).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/result.h"
#include "core/common/time.h"
#include "core/topology/level.h"
#include "sim/trace.h"

namespace phalanx {

// A rule mapping trace jobs to classes. A job matches when every given condition holds; all
// matching rules apply in order, later ones overriding the fields they set.
struct ClassRule {
  // conditions
  uint32_t min_gpus = 0, max_gpus = UINT32_MAX;
  std::string user;    // empty: any user
  double share = 1.0;  // only this (seeded random) fraction of the matching jobs
  // what it sets
  std::optional<std::string> priority_class;
  std::optional<bool> preemptible;
  std::optional<double> elastic_min;  // elastic with min = ceil(gpus x elastic_min) (0 < x < 1)
  std::optional<Duration> checkpoint_interval;
  std::optional<Duration> restart_cost;
  std::optional<Level> level;  // the job must fit in one domain of this level (fit=require)
  bool prefer = false;         // with level: prefer it instead of requiring it
  uint32_t gpus_per_node = 0;  // > 0: whole-node shape (gpus/N nodes x N) when N divides
                               // gpus and gpus > N (not for elastic jobs)

  std::string text;  // as given, for reports
};

// "gpus>=64:class=high", "user=vc_1,share=0.3:elastic=0.5,ckpt=3600", "all:preemptible=no".
// Conditions: all, gpus>=N, gpus<=N, gpus=N, user=NAME, share=F. Settings: class=NAME,
// preemptible=yes|no, elastic=F, ckpt=SECONDS, restart=SECONDS, level=node|leaf|... (must fit in
// one domain of that level), prefer=LEVEL (prefers it), gpn=N (whole nodes of N GPUs). Fails
// naming the bad part.
Result<ClassRule> ParseClassRule(std::string_view text);

// Whether `rule` (the `rule_index`-th) applies to trace job `index`; the share condition draws
// from `seed`, so the same jobs match in every run.
bool RuleMatches(const ClassRule& rule, const TraceJob& job, size_t index, size_t rule_index, uint64_t seed);

}  // namespace phalanx
