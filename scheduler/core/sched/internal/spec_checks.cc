#include "core/sched/internal/spec_checks.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "core/sched/internal/dependencies.h"
#include "core/sched/internal/scheduler_state.h"
#include "util/duration.h"
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
  PHX_RETURN_IF_ERROR(CheckPartitions(s, spec));  // a partition's MaxTime is the walltime limit
  PHX_RETURN_IF_ERROR(CheckArrayFields(s, spec));
  PHX_RETURN_IF_ERROR(CheckDependencyTargets(s, spec));
  if (auto hit = s.limits.CheckSubmit(spec.user, spec.account))
    return Fail(ErrorCode::kResourceExhausted, where, hit->ToString());
  return cls;
}

Result<std::vector<uint32_t>> CheckPartitions(const SchedulerState& s, const JobSpec& spec) {
  const std::string where = JobWhere(spec.id);
  auto ids = s.partitions.Resolve(spec.partitions);
  if (!ids) return Fail(where, ids.error().ToString());
  const uint32_t gpus = NormalisedShape(spec.shape).gpus;
  for (uint32_t i : *ids) {
    const Partition& p = s.partitions.at(i);
    const std::string in = "partition " + p.name + ": ";
    if (p.state == PartitionState::kDrain || p.state == PartitionState::kInactive) {
      return Fail(ErrorCode::kFailedPrecondition, where,
                  in + "state " + std::string(PartitionStateName(p.state)) + ": no new jobs");
    }
    if (spec.walltime > p.max_walltime) {
      return Fail(where, "walltime " + std::to_string(spec.walltime) + "s exceeds the maximum " +
                             std::to_string(p.max_walltime) + "s of partition " + p.name + " (MaxTime " +
                             FormatSlurmDuration(p.max_walltime) + ")");
    }
    if (p.max_gpus_per_job > 0 && gpus > p.max_gpus_per_job) {
      return Fail(where,
                  in + std::to_string(gpus) + " GPUs exceed its MaxGPUsPerJob " + std::to_string(p.max_gpus_per_job));
    }
  }
  return ids;
}

std::string PartitionsUnsatisfiable(const SchedulerState& s, const JobSpec& spec, const std::vector<uint32_t>& ids,
                                    uint32_t n) {
  std::string why;
  for (uint32_t i : ids) {
    const Partition& p = s.partitions.at(i);
    std::string no;
    if (n > p.gpus) {
      no = "partition " + p.name + " has " + std::to_string(p.gpus) + " GPUs";
    } else if (spec.shape.nodes > 0 && spec.shape.gpus_per_node > p.max_node_gpus) {
      no = "partition " + p.name + " has no node with " + std::to_string(spec.shape.gpus_per_node) + " GPUs";
    } else {
      return {};
    }
    why += (why.empty() ? "" : "; ") + no;
  }
  return why;
}

Duration DefaultWalltime(const SchedulerState& s, const std::vector<uint32_t>& ids) {
  return ids.empty() ? s.config.default_walltime : s.partitions.at(ids.front()).default_walltime;
}

Duration MaxWalltime(const SchedulerState& s, const std::vector<uint32_t>& ids) {
  Duration m = ids.empty() ? s.config.max_walltime : kUnlimitedWalltime;
  for (uint32_t i : ids) m = std::min(m, s.partitions.at(i).max_walltime);
  return m;
}

}  // namespace phalanx
