// Scheduler: events, bookkeeping and invariants. The pass itself is in scheduler_pass.cc.
#include "core/sched/scheduler.h"

#include "core/sched/what_if.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <sstream>

namespace phalanx {

Result<std::unique_ptr<Scheduler>> Scheduler::Create(Topology topology, SchedulerConfig config) {
  if (auto s = ValidatePriorityWeights(config.weights); !s) return std::unexpected(s.error());
  auto classes = PriorityClassTable::Build(config.classes);
  if (!classes) return std::unexpected(classes.error());
  auto fairshare = FairshareTracker::Create(config.fairshare);
  if (!fairshare) return std::unexpected(fairshare.error());
  if (config.default_walltime <= 0 || config.max_walltime < config.default_walltime) {
    return Fail("config", "walltimes: need 0 < default_walltime <= max_walltime");
  }
  if (config.checkpoint_grace < 0 || config.periodic_checkpoint < 0 || config.grow_after_idle < 0 || config.charge_period < 0) {
    return Fail("config", "durations must not be negative");
  }
  return std::unique_ptr<Scheduler>(new Scheduler(std::make_unique<Topology>(std::move(topology)), std::move(config),
                                                  std::move(*classes), std::move(*fairshare)));
}

Scheduler::Scheduler(std::unique_ptr<Topology> topology, SchedulerConfig config, PriorityClassTable classes,
                     FairshareTracker fairshare)
    : topo_(std::move(topology)),
      placer_(std::make_unique<Placer>(*topo_, config.model)),
      config_(std::move(config)),
      classes_(std::move(classes)),
      fairshare_(std::move(fairshare)),
      limits_(config_.limits) {
  placer_->set_best_fit(config_.best_fit);
  placer_->set_node_fit_tolerance(config_.node_fit_tolerance);
}

const JobRecord* Scheduler::job(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobRecord* Scheduler::Find(JobId id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

Result<JobRecord*> Scheduler::FindOr(JobId id, std::string_view event) {
  JobRecord* j = Find(id);
  if (!j) return Fail("job " + std::to_string(id), std::string(event) + ": unknown job");
  return j;
}

Status Scheduler::Advance(Time now) {
  if (restoring_) return Fail("restore", "restore in progress: call FinishRestore first");
  if (now < now_) return Fail("time", "events must not go back in time (" + std::to_string(now) + " < " + std::to_string(now_) + ")");
  now_ = now;
  return {};
}

// ---- spec checks -------------------------------------------------------------------------

namespace {

std::string JobWhere(JobId id) { return "job " + std::to_string(id); }

// The smallest size LegalSizes() gives `spec` (the sizes it may run at), found without listing
// them: a spec may ask for billions of GPUs. nullopt when every size it may run at is larger
// than the cluster's GPU count.
std::optional<uint32_t> SmallestLegalSize(const JobSpec& spec, bool elastic_on, size_t cluster_gpus) {
  if (!elastic_on || !spec.elastic()) return spec.shape.gpus;
  const uint32_t top = static_cast<uint32_t>(std::min<uint64_t>(spec.shape.gpus, cluster_gpus));
  for (uint32_t g = spec.min_gpus; g >= 1 && g <= top; ++g) {
    if (spec.step_kind == ElasticStep::kAny || (spec.step_kind == ElasticStep::kMultiple && g % spec.step == 0) ||
        (spec.step_kind == ElasticStep::kPowerOfTwo && std::has_single_bit(g))) {
      return g;
    }
  }
  // No legal size within the cluster: with none at all the job runs at its maximum.
  if (top == spec.shape.gpus) return spec.shape.gpus;
  return std::nullopt;
}

}  // namespace

PlacementRequest Scheduler::NormalisedShape(PlacementRequest shape) {
  if (shape.nodes > 0 && shape.gpus == 0) shape.gpus = shape.nodes * shape.gpus_per_node;
  return shape;
}

Status Scheduler::CheckNewId(JobId id) const {
  if (id == kNoJob || id >= (uint64_t{1} << 62)) return Fail(JobWhere(id), "id " + std::to_string(id) + ": job ids must be in 1..2^62-1");
  if (jobs_.contains(id)) return Fail(JobWhere(id), "id " + std::to_string(id) + ": duplicate job id");
  return {};
}

Result<PriorityClassId> Scheduler::CheckShape(const JobSpec& spec) const {
  const std::string where = JobWhere(spec.id);
  auto cls = classes_.Find(spec.priority_class);
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
    if (spec.min_gpus != 0) return Fail(where, "min_gpus=" + std::to_string(spec.min_gpus) + ": node-shaped jobs cannot be elastic");
  }
  const uint32_t gpus = NormalisedShape(shape).gpus;
  if (gpus == 0) return Fail(where, "shape: gpus=0: a job needs at least one GPU");
  if (spec.min_gpus > gpus) {
    return Fail(where, "min_gpus: elastic min " + std::to_string(spec.min_gpus) + " > max " + std::to_string(gpus));
  }
  if (spec.step_kind == ElasticStep::kMultiple && spec.step == 0) return Fail(where, "step: elastic step multiple of 0");
  if (spec.walltime < 0) return Fail(where, "walltime: negative (" + std::to_string(spec.walltime) + "s)");
  if (spec.restart_cost < 0) return Fail(where, "restart_cost: negative (" + std::to_string(spec.restart_cost) + "s)");
  if (spec.checkpoint_interval < 0) {
    return Fail(where, "checkpoint_interval: negative (" + std::to_string(spec.checkpoint_interval) + "s)");
  }
  if (spec.checkpoint_grace < 0) {
    return Fail(where, "checkpoint_grace: negative (" + std::to_string(spec.checkpoint_grace) +
                           "s); 0 uses the configured " + std::to_string(config_.checkpoint_grace) + "s");
  }
  return *cls;
}

Result<PriorityClassId> Scheduler::CheckSubmit(const JobSpec& spec) const {
  const std::string where = JobWhere(spec.id);
  if (restoring_) return Fail(where, "restore in progress: call FinishRestore first");
  if (auto s = CheckNewId(spec.id); !s) return std::unexpected(s.error());
  auto cls = CheckShape(spec);
  if (!cls) return cls;
  if (spec.walltime > config_.max_walltime) {
    return Fail(where, "walltime " + std::to_string(spec.walltime) + "s exceeds the maximum " + std::to_string(config_.max_walltime) + "s");
  }
  for (JobId dep : spec.after_ok) {
    if (dep == spec.id) return Fail(where, "after_ok: a job cannot depend on itself");
    if (!jobs_.contains(dep)) return Fail(where, "after_ok: dependency on unknown job " + std::to_string(dep));
  }
  if (auto why = limits_.CheckSubmit(spec.user, spec.account)) return Fail(where, *why);
  return cls;
}

Status Scheduler::ValidateSpec(const JobSpec& spec) const {
  auto cls = CheckSubmit(spec);
  if (!cls) return std::unexpected(cls.error());
  // Can never fit: the smallest size the job may run at, on the empty cluster.
  JobRecord probe;
  probe.spec.shape = NormalisedShape(spec.shape);
  probe.spec.min_gpus = spec.min_gpus;
  probe.spec.step_kind = spec.step_kind;
  probe.spec.step = spec.step;
  const std::optional<uint32_t> smallest = SmallestLegalSize(probe.spec, config_.elastic, topo_->gpu_count());
  if (!smallest) {
    return Fail(JobWhere(spec.id), "shape: can never fit this cluster: no size between min_gpus=" + std::to_string(spec.min_gpus) +
                                       " and gpus=" + std::to_string(probe.spec.shape.gpus) + " that it may run at is within the cluster's " +
                                       std::to_string(topo_->gpu_count()) + " GPUs");
  }
  const uint32_t n = *smallest;
  if (std::string why = placer_->Unsatisfiable(ShapeFor(probe, n)); !why.empty()) {
    const bool elastic = config_.elastic && probe.spec.elastic();
    const std::string size = elastic ? " (at its smallest legal size, " + std::to_string(n) + " GPUs)" : "";
    return Fail(JobWhere(spec.id), "shape: can never fit this cluster" + size + ": " + why);
  }
  return {};
}

Status Scheduler::Submit(JobSpec spec, Time now) {
  auto cls = CheckSubmit(spec);
  if (!cls) return std::unexpected(cls.error());
  if (now < now_) return Fail("time", "events must not go back in time");
  now_ = now;
  spec.shape = NormalisedShape(spec.shape);
  JobRecord rec;
  rec.class_rank = static_cast<int>(cls->value);
  rec.preemptible = spec.preemptible.value_or(classes_.preemptible_by_default(*cls));
  rec.walltime = spec.walltime > 0 ? spec.walltime : config_.default_walltime;
  if (spec.submit == 0) spec.submit = now;
  rec.spec = std::move(spec);
  const JobId id = rec.spec.id;
  limits_.AddPending(rec.spec.user, rec.spec.account);
  JobRecord& job = jobs_.emplace(id, std::move(rec)).first->second;
  pending_.Insert(id, &job);
  return {};
}

Status Scheduler::Cancel(JobId id, Time now) {
  auto j = FindOr(id, "cancel");
  if (!j) return std::unexpected(j.error());
  JobRecord& job = **j;
  if (IsFinal(job.state)) return Fail("job " + std::to_string(id), "cancel: already " + std::string(JobStateName(job.state)));
  if (auto s = Advance(now); !s) return s;
  if (job.state == JobState::kPending) {
    (void)limits_.RemovePending(job.spec.user, job.spec.account);
    pending_.Erase(id);
    // Its victims keep running: a checkpoint they are taking is then just a checkpoint.
    for (JobId v : job.victims) {
      if (JobRecord* victim = Find(v); victim && victim->preempted_for == id) {
        victim->preempted_for = kNoJob;
        victim->after_checkpoint = JobRecord::After::kNothing;
        victim->shrink_to.clear();
      }
    }
    job.victims.clear();
    job.claim.clear();
  } else {
    StopJob(job, now);
  }
  job.state = JobState::kCancelled;
  job.end = now;
  return {};
}

Status Scheduler::Hold(JobId id, Time now) {
  auto j = FindOr(id, "hold");
  if (!j) return std::unexpected(j.error());
  if ((*j)->state != JobState::kPending) return Fail("job " + std::to_string(id), "hold: only pending jobs can be held");
  if (auto s = Advance(now); !s) return s;
  (*j)->spec.held = true;
  return {};
}

Status Scheduler::Release(JobId id, Time now) {
  auto j = FindOr(id, "release");
  if (!j) return std::unexpected(j.error());
  if ((*j)->state != JobState::kPending || !(*j)->spec.held) return Fail("job " + std::to_string(id), "release: job is not held");
  if (auto s = Advance(now); !s) return s;
  (*j)->spec.held = false;
  return {};
}

Status Scheduler::Update(JobId id, const JobUpdate& u, Time now) {
  auto j = FindOr(id, "update");
  if (!j) return std::unexpected(j.error());
  JobRecord& job = **j;
  const std::string where = "job " + std::to_string(id);
  if (IsFinal(job.state)) return Fail(where, "update: already " + std::string(JobStateName(job.state)));
  if (u.walltime && (*u.walltime <= 0 || *u.walltime > config_.max_walltime)) {
    return Fail(where, "walltime: " + std::to_string(*u.walltime) + "s is outside 1.." + std::to_string(config_.max_walltime) + "s");
  }
  std::optional<PriorityClassId> cls;
  if (u.priority_class) {
    auto c = classes_.Find(*u.priority_class);
    if (!c) return Fail(where, "priority_class: " + c.error().message);
    cls = *c;
  }
  if (auto s = Advance(now); !s) return s;
  if (u.name) job.spec.name = *u.name;
  if (cls) {
    job.spec.priority_class = *u.priority_class;
    job.class_rank = static_cast<int>(cls->value);
    job.preemptible = job.spec.preemptible.value_or(classes_.preemptible_by_default(*cls));
  }
  if (u.walltime) {
    const Duration delta = *u.walltime - job.walltime;
    job.spec.walltime = *u.walltime;
    job.walltime = *u.walltime;
    if (job.state != JobState::kPending) {
      job.run_walltime = std::max<Duration>(1, job.run_walltime + delta);
      ends_dirty_ = true;
      res_order_dirty_ = true;
      NoteTimer(NextTimer(job));
    }
  }
  return {};
}

Status Scheduler::JobEnded(JobId id, Time now, bool success) {
  auto j = FindOr(id, "job ended");
  if (!j) return std::unexpected(j.error());
  JobRecord& job = **j;
  if (job.state != JobState::kRunning && job.state != JobState::kCheckpointing) {
    return Fail("job " + std::to_string(id), "job ended: job is " + std::string(JobStateName(job.state)));
  }
  if (auto s = Advance(now); !s) return s;
  StopJob(job, now);
  job.state = success ? JobState::kCompleted : JobState::kFailed;
  job.end = now;
  return {};
}

Status Scheduler::CheckpointDone(JobId id, Time now, uint64_t epoch, std::string path) {
  auto j = FindOr(id, "checkpoint done");
  if (!j) return std::unexpected(j.error());
  JobRecord& job = **j;
  if (job.state != JobState::kRunning && job.state != JobState::kCheckpointing) {
    return Fail("job " + std::to_string(id), "checkpoint done: job is " + std::string(JobStateName(job.state)));
  }
  if (epoch <= job.checkpoint_epoch && job.checkpoint_epoch != 0) {
    return Fail("job " + std::to_string(id), "checkpoint epoch " + std::to_string(epoch) + " is not newer than " + std::to_string(job.checkpoint_epoch));
  }
  if (auto s = Advance(now); !s) return s;
  job.progress += now - job.last_checkpoint;
  job.last_checkpoint = now;
  job.checkpoint_epoch = epoch;
  job.checkpoint_path = std::move(path);
  if (job.state == JobState::kCheckpointing) {
    if (job.after_checkpoint == JobRecord::After::kPreempt) {
      Requeue(job, now, "preempted for job " + std::to_string(job.preempted_for) + " after checkpoint", outbox_);
    } else if (job.after_checkpoint == JobRecord::After::kShrink) {
      FinishShrink(job, now, outbox_);
    }
  }
  return {};
}

Status Scheduler::SetNodeState(std::string_view node, NodeState state, Time now) {
  const NodeId n = topo_->find_node(node);
  if (!n.valid()) return Fail("node " + std::string(node), "unknown node");
  if (auto s = Advance(now); !s) return s;
  if (state == NodeState::kDown) {
    // Jobs with GPUs on the node lose them: shrink (elastic, legal size left) or requeue.
    std::vector<JobId> hit;
    for (JobId id : active_) {
      for (GpuId g : jobs_.at(id).gpus) {
        if (topo_->node_of(g) == n) {
          hit.push_back(id);
          break;
        }
      }
    }
    for (JobId id : hit) {
      JobRecord& job = jobs_.at(id);
      std::vector<GpuId> keep;
      for (GpuId g : job.gpus) {
        if (topo_->node_of(g) != n) keep.push_back(g);
      }
      uint32_t legal = 0;
      if (config_.elastic && job.spec.elastic() && job.state == JobState::kRunning) {
        for (uint32_t size : LegalSizes(job)) {
          if (size <= keep.size()) {
            legal = size;
            break;
          }
        }
      }
      if (legal > 0) {
        keep.resize(legal);
        // Restarting from the last checkpoint loses the work since then.
        job.gpu_seconds_lost += static_cast<double>(job.gpus.size()) * static_cast<double>(now - job.last_checkpoint);
        job.shrink_to = keep;
        FinishShrink(job, now, outbox_);
        outbox_.back().reason = "node " + std::string(node) + " down";
      } else {
        Requeue(job, now, "node " + std::string(node) + " down", outbox_);
      }
    }
  }
  if (auto s = topo_->SetNodeState(n, state); !s) return s;
  if (state == NodeState::kUp) last_freed_ = now;
  return {};
}

// ---- state changes -----------------------------------------------------------------------

void Scheduler::SetAllocation(JobRecord& job, std::vector<GpuId> gpus) {
  if (!job.gpus.empty()) (void)topo_->Release(job.spec.id);
  std::sort(gpus.begin(), gpus.end());
  job.gpus = std::move(gpus);
  if (!job.gpus.empty()) {
    const double ring = placer_->model().Predict(job.gpus).busbw_gbs;
    (void)topo_->Restore(job.spec.id, job.gpus, ring);
  }
}

void Scheduler::StopJob(JobRecord& job, Time now) {
  if (!job.gpus.empty()) {
    const double secs = static_cast<double>(now - charged_until_[job.spec.id]) * static_cast<double>(job.gpus.size());
    if (secs > 0) (void)fairshare_.Charge(job.spec.user, job.spec.account, secs, now);
    (void)limits_.RemoveRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(job.gpus.size()));
    (void)topo_->Release(job.spec.id);
    job.gpus.clear();
    last_freed_ = now;
  }
  charged_until_.erase(job.spec.id);
  active_.erase(job.spec.id);
  // A preemptor that goes away frees its victims' claim; a victim that ends unblocks its preemptor.
  for (JobId v : job.victims) {
    if (JobRecord* victim = Find(v); victim && victim->preempted_for == job.spec.id) victim->preempted_for = kNoJob;
  }
  job.victims.clear();
  if (job.preempted_for != kNoJob) {
    if (JobRecord* p = Find(job.preempted_for)) std::erase(p->victims, job.spec.id);
    job.preempted_for = kNoJob;
  }
  job.after_checkpoint = JobRecord::After::kNothing;
  job.shrink_to.clear();
}

void Scheduler::Requeue(JobRecord& job, Time now, std::string reason, std::vector<Decision>& out) {
  const JobId preemptor = job.preempted_for;
  const std::vector<GpuId> freed = job.gpus;
  job.gpu_seconds_lost += static_cast<double>(job.gpus.size()) * static_cast<double>(now - job.last_checkpoint);
  StopJob(job, now);
  if (preemptor != kNoJob) {
    if (JobRecord* p = Find(preemptor); p && p->state == JobState::kPending) {
      p->claim.insert(p->claim.end(), freed.begin(), freed.end());
    }
  }
  job.state = JobState::kPending;
  job.preemptions++;
  pending_.Insert(job.spec.id, &job);
  limits_.AddPending(job.spec.user, job.spec.account);
  Decision d;
  d.kind = DecisionKind::kPreempt;
  d.job = job.spec.id;
  d.at = now;
  d.requeue = true;
  d.reason = std::move(reason);
  out.push_back(std::move(d));
}

void Scheduler::FinishShrink(JobRecord& job, Time now, std::vector<Decision>& out) {
  const std::vector<GpuId> before = job.gpus;
  std::vector<GpuId> keep = job.shrink_to;
  std::sort(keep.begin(), keep.end());
  Decision d;
  d.kind = DecisionKind::kResize;
  d.job = job.spec.id;
  d.at = now;
  std::set_difference(before.begin(), before.end(), keep.begin(), keep.end(), std::back_inserter(d.removed));
  // Charge usage up to now at the old size, then run on the smaller set.
  const double secs = static_cast<double>(now - charged_until_[job.spec.id]) * static_cast<double>(before.size());
  if (secs > 0) (void)fairshare_.Charge(job.spec.user, job.spec.account, secs, now);
  charged_until_[job.spec.id] = now;
  (void)limits_.RemoveRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(before.size() - keep.size()));
  const JobId preemptor = job.preempted_for;
  if (preemptor != kNoJob) {
    if (JobRecord* p = Find(preemptor)) {
      std::erase(p->victims, job.spec.id);
      if (p->state == JobState::kPending) p->claim.insert(p->claim.end(), d.removed.begin(), d.removed.end());
    }
  }
  job.preempted_for = kNoJob;
  last_freed_ = now;
  SetAllocation(job, keep);
  // The job restarts on the smaller set from its last checkpoint: a new run.
  job.start = now;
  job.last_checkpoint = now;
  job.last_checkpoint_request = now;
  job.run_walltime = RemainingWalltime(job);
  ends_dirty_ = true;
  job.state = JobState::kRunning;
  job.after_checkpoint = JobRecord::After::kNothing;
  job.shrink_to.clear();
  NoteTimer(NextTimer(job));
  job.resizes++;
  d.gpus = job.gpus;
  d.reason = preemptor != kNoJob ? "shrunk for job " + std::to_string(preemptor) : "shrunk";
  out.push_back(std::move(d));
}

std::string Scheduler::CheckInvariants() const {
  std::ostringstream out;
  out << topo_->CheckInvariants();
  size_t held = 0;
  for (const auto& [id, job] : jobs_) {
    const bool active = job.state == JobState::kRunning || job.state == JobState::kCheckpointing;
    if (active != active_.contains(id)) out << "job " << id << ": active set disagrees with state\n";
    if ((job.state == JobState::kPending) != pending_.Contains(id)) out << "job " << id << ": pending set disagrees\n";
    if (const JobRecord* p = pending_.Find(id); p != nullptr && p != &job) out << "job " << id << ": pending set points elsewhere\n";
    if (active == job.gpus.empty()) out << "job " << id << ": " << JobStateName(job.state) << " with " << job.gpus.size() << " GPUs\n";
    const auto owned = topo_->job_gpus(id);
    if (!std::equal(owned.begin(), owned.end(), job.gpus.begin(), job.gpus.end())) out << "job " << id << ": GPUs differ from the topology's\n";
    for (GpuId g : job.gpus) {
      if (topo_->owner(g) != id) out << "job " << id << ": GPU " << g.value << " owned by " << topo_->owner(g) << "\n";
    }
    held += job.gpus.size();
    if (active && !job.spec.shape.exclusive && job.gpus.size() > job.spec.shape.gpus) out << "job " << id << ": more GPUs than asked\n";
    // Links refer to known jobs (jobs are never forgotten); FinishRestore drops the others.
    if (!restoring_) {
      for (JobId dep : job.spec.after_ok) {
        if (!jobs_.contains(dep)) out << "job " << id << ": dependency on unknown job " << dep << "\n";
      }
      for (JobId v : job.victims) {
        if (!jobs_.contains(v)) out << "job " << id << ": unknown victim " << v << "\n";
      }
      if (job.preempted_for != kNoJob && !jobs_.contains(job.preempted_for)) {
        out << "job " << id << ": preempted for unknown job " << job.preempted_for << "\n";
      }
    }
  }
  size_t owned = 0;
  for (uint32_t g = 0; g < topo_->gpu_count(); ++g) owned += topo_->owner(GpuId(g)) != kNoJob;
  if (owned != held) out << owned << " GPUs owned in the topology, " << held << " held by jobs\n";
  return out.str();
}

}  // namespace phalanx
