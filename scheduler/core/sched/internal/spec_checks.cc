#include "core/sched/internal/spec_checks.h"

#include <cstdint>
#include <optional>

#include "core/sched/internal/dependencies.h"
#include "core/sched/internal/scheduler_state.h"
#include "util/job_fields.h"

namespace phalanx {

std::string JobWhere(JobId id) { return "job " + std::to_string(id); }

PlacementRequest NormalisedShape(PlacementRequest shape) {
  if (shape.nodes > 0 && shape.gpus == 0) shape.gpus = shape.nodes * shape.gpus_per_node;
  return shape;
}

Status CheckNewId(const SchedulerState& s, JobId id) {
  if (id == kNoJob || id >= (uint64_t{1} << 62))
    return Fail(JobWhere(id), "id " + std::to_string(id) + ": job ids must be in 1..2^62-1");
  if (s.jobs.contains(id))
    return Fail(ErrorCode::kAlreadyExists, JobWhere(id), "id " + std::to_string(id) + ": duplicate job id");
  return {};
}

Result<PriorityClassId> CheckShape(const SchedulerState& s, const JobSpec& spec) {
  const std::string where = JobWhere(spec.id);
  auto cls = s.classes.Find(spec.priority_class);
  if (!cls) return Fail(where, "priority_class: " + cls.error().message);
  const PlacementRequest& shape = spec.shape;
  if (shape.nodes > 0) {
    const std::string n = std::to_string(shape.nodes), gpn = std::to_string(shape.gpus_per_node);
    if (shape.gpus_per_node == 0) return Fail(where, "shape: nodes=" + n + " given without gpus_per_node");
    const uint64_t total = uint64_t{shape.nodes} * shape.gpus_per_node;
    if (total > UINT32_MAX) return Fail(where, "shape: nodes=" + n + " x gpus_per_node=" + gpn + " is too many GPUs");
    if (shape.gpus != 0 && shape.gpus != total) {
      return Fail(where, "shape: gpus=" + std::to_string(shape.gpus) + " != nodes=" + n + " x gpus_per_node=" + gpn);
    }
    if (spec.min_gpus != 0)
      return Fail(where, "min_gpus=" + std::to_string(spec.min_gpus) + ": node-shaped jobs cannot be elastic");
  }
  const uint32_t gpus = NormalisedShape(shape).gpus;
  if (gpus == 0) return Fail(where, "shape: gpus=0: a job needs at least one GPU");
  if (spec.min_gpus > gpus) {
    return Fail(where, "min_gpus: elastic min " + std::to_string(spec.min_gpus) + " > max " + std::to_string(gpus));
  }
  if (spec.step_kind == ElasticStep::kMultiple && spec.step == 0)
    return Fail(where, "step: elastic step multiple of 0");
  if (spec.walltime < 0) return Fail(where, "walltime: negative (" + std::to_string(spec.walltime) + "s)");
  if (spec.begin < 0) return Fail(where, "begin: negative (" + std::to_string(spec.begin) + ")");
  if (spec.restart_cost < 0) return Fail(where, "restart_cost: negative (" + std::to_string(spec.restart_cost) + "s)");
  if (spec.checkpoint_interval < 0) {
    return Fail(where, "checkpoint_interval: negative (" + std::to_string(spec.checkpoint_interval) + "s)");
  }
  if (spec.checkpoint_grace < 0) {
    return Fail(where, "checkpoint_grace: negative (" + std::to_string(spec.checkpoint_grace) +
                           "s); 0 uses the configured " + std::to_string(s.config.checkpoint_grace) + "s");
  }
  return *cls;
}

Status CheckLabelOf(JobId id, std::string_view field, std::string_view value) {
  if (auto st = CheckLabel(field, value); !st) return Fail(JobWhere(id), st.error().ToString());
  return {};
}

Status CheckSubmittedText(const JobSpec& spec) {
  PHX_RETURN_IF_ERROR(CheckLabelOf(spec.id, "name", spec.name));
  PHX_RETURN_IF_ERROR(CheckLabelOf(spec.id, "user", spec.user));
  PHX_RETURN_IF_ERROR(CheckLabelOf(spec.id, "account", spec.account));
  return CheckLabelOf(spec.id, "priority_class", spec.priority_class);
}

Status CheckElasticSizes(const JobSpec& spec) {
  static constexpr ElasticStepRule kRules[] = {ElasticStepRule::kAny, ElasticStepRule::kMultiple,
                                               ElasticStepRule::kPowerOfTwo};
  const PlacementRequest shape = NormalisedShape(spec.shape);
  const uint64_t step = spec.step_kind == ElasticStep::kMultiple ? spec.step : 0;
  if (auto st =
          CheckElastic("", shape.gpus, spec.min_gpus, shape.nodes, kRules[static_cast<int>(spec.step_kind)], step);
      !st) {
    return Fail(JobWhere(spec.id), st.error().ToString());
  }
  return {};
}

Result<PriorityClassId> CheckSubmit(const SchedulerState& s, const JobSpec& spec) {
  const std::string where = JobWhere(spec.id);
  if (s.restoring) return Fail(ErrorCode::kFailedPrecondition, where, "restore in progress: call FinishRestore first");
  PHX_RETURN_IF_ERROR(CheckNewId(s, spec.id));
  PHX_RETURN_IF_ERROR(CheckSubmittedText(spec));
  auto cls = CheckShape(s, spec);
  PHX_RETURN_IF_ERROR(cls);
  PHX_RETURN_IF_ERROR(CheckElasticSizes(spec));
  if (spec.walltime > s.config.max_walltime) {
    return Fail(where, "walltime " + std::to_string(spec.walltime) + "s exceeds the maximum " +
                           std::to_string(s.config.max_walltime) + "s");
  }
  PHX_RETURN_IF_ERROR(CheckArrayFields(s, spec));
  PHX_RETURN_IF_ERROR(CheckDependencyTargets(s, spec));
  if (auto hit = s.limits.CheckSubmit(spec.user, spec.account))
    return Fail(ErrorCode::kResourceExhausted, where, hit->ToString());
  return cls;
}

}  // namespace phalanx
