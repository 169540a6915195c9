// Scheduler: construction, queries, events and invariants. The pass is in scheduler_pass.cc,
// restart recovery in scheduler_restore.cc; the state both share is internal/scheduler_state.h.
#include "core/sched/scheduler.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>

#include "core/sched/internal/dependencies.h"
#include "core/sched/internal/node_filter.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/spec_checks.h"
#include "util/job_fields.h"

namespace phalanx {

namespace {

Result<JobRecord*> FindJob(SchedulerState& s, JobId id, std::string_view event) {
  JobRecord* j = s.Find(id);
  if (!j) return Fail(ErrorCode::kNotFound, JobWhere(id), std::string(event) + ": unknown job");
  return j;
}

// An event at `now`: no restore in progress, time does not go back.
Status Advance(SchedulerState& s, Time now) {
  if (s.restoring)
    return Fail(ErrorCode::kFailedPrecondition, "restore", "restore in progress: call FinishRestore first");
  if (now < s.now)
    return Fail("time",
                "events must not go back in time (" + std::to_string(now) + " < " + std::to_string(s.now) + ")");
  s.now = now;
  s.backfill_idle = false;  // something happens: the next backfill cycle may decide
  return {};
}

}  // namespace

Result<std::unique_ptr<Scheduler>> Scheduler::Create(Topology topology, SchedulerConfig config) {
  PHX_RETURN_IF_ERROR(ValidatePriorityWeights(config.weights));
  auto classes = PriorityClassTable::Build(config.classes);
  PHX_RETURN_IF_ERROR(classes);
  auto fairshare = FairshareTracker::Create(config.fairshare);
  PHX_RETURN_IF_ERROR(fairshare);
  if (config.default_walltime <= 0 || config.max_walltime < config.default_walltime) {
    return Fail("config", "walltimes: need 0 < default_walltime <= max_walltime");
  }
  if (config.checkpoint_grace < 0 || config.periodic_checkpoint < 0 || config.grow_after_idle < 0 ||
      config.charge_period < 0) {
    return Fail("config", "durations must not be negative");
  }
  auto partitions = PartitionTable::Build(config.partitions, topology, config.default_walltime, config.max_walltime);
  PHX_RETURN_IF_ERROR(partitions);
  auto state = std::make_unique<SchedulerState>(std::move(topology), std::move(config), std::move(*classes),
                                                std::move(*fairshare));
  state->partitions = std::move(*partitions);
  if (!state->policies.queue || !state->policies.backfill)
    return Fail("config", "no policy for this queue order or backfill mode");
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(state)));
}

Scheduler::Scheduler(std::unique_ptr<SchedulerState> state) : s_(std::move(state)) {}

Scheduler::~Scheduler() = default;

// ---- queries -----------------------------------------------------------------------------

const Topology& Scheduler::topology() const { return *s_->topo; }
const Placer& Scheduler::placer() const { return *s_->placer; }
const SchedulerConfig& Scheduler::config() const { return s_->config; }
const std::map<JobId, JobRecord>& Scheduler::jobs() const { return s_->jobs; }
const PartitionTable& Scheduler::partitions() const { return s_->partitions; }
const std::vector<Reservation>& Scheduler::reservations() const { return s_->reservations; }
Time Scheduler::next_backfill() const {
  return s_->config.backfill_interval > 0 ? s_->last_backfill + s_->config.backfill_interval : kForever;
}
uint64_t Scheduler::idle_cycles_skipped() const { return s_->idle_cycles_skipped; }
size_t Scheduler::pending_count() const { return s_->pending.size(); }
uint64_t Scheduler::kept_order_passes() const { return s_->kept_order_passes; }
uint64_t Scheduler::keyed_skips() const { return s_->keyed_skips; }
uint64_t Scheduler::floored_walks() const { return s_->floored_walks; }
uint64_t Scheduler::floor_jumps() const { return s_->floor_jumps; }
uint64_t Scheduler::floor_releases_kept() const { return s_->floor_releases_kept; }
uint64_t Scheduler::floor_tops_kept() const { return s_->floor_tops_kept; }
uint64_t Scheduler::walk_print_mismatches() const { return s_->walk_print_mismatches; }
uint64_t Scheduler::walk_known_tops() const { return s_->walk_known_tops; }
Time Scheduler::next_patience_deadline() const { return s_->patience_due; }

const std::vector<JobId>* Scheduler::array_tasks(JobId array) const {
  auto it = s_->arrays.find(array);
  return it == s_->arrays.end() ? nullptr : &it->second;
}

JobId Scheduler::array_task_job(JobId array, uint32_t task) const { return ArrayTaskJob(*s_, array, task); }
const std::vector<JobId>& Scheduler::queue() const { return s_->Queue(); }

const JobRecord* Scheduler::FindQueued(const std::function<bool(const JobRecord&)>& want) const {
  const SchedulerState& s = *s_;
  if (s.queue_stale) {
    for (const SchedulerState::FifoEntry& e : s.fifo) {
      if (e.job->state == JobState::kPending && want(*e.job)) return e.job;
    }
    return nullptr;
  }
  for (JobId id : s.queue) {
    const JobRecord& j = s.jobs.at(id);
    if (j.state == JobState::kPending && want(j)) return &j;
  }
  return nullptr;
}
Time Scheduler::now() const { return s_->now; }

const JobRecord* Scheduler::job(JobId id) const {
  auto it = s_->jobs.find(id);
  return it == s_->jobs.end() ? nullptr : &it->second;
}

// ---- validation --------------------------------------------------------------------------

Status Scheduler::ValidateSpec(const JobSpec& spec) const {
  const SchedulerState& s = *s_;
  PHX_RETURN_IF_ERROR(CheckSubmit(s, spec));
  auto forbidden = ForbiddenNodes(*s.topo, spec);
  PHX_RETURN_IF_ERROR(forbidden);
  // Can never fit: the smallest size the job may run at, on the empty cluster.
  JobRecord probe;
  probe.spec.shape = NormalisedShape(spec.shape);
  probe.spec.min_gpus = spec.min_gpus;
  probe.spec.step_kind = spec.step_kind;
  probe.spec.step = spec.step;
  const bool elastic = s.config.elastic && probe.spec.elastic();
  const uint32_t n = s.MinLegalSize(probe);
  if (elastic && n > s.topo->gpu_count()) {
    return Fail(JobWhere(spec.id),
                "shape: can never fit this cluster: no size between min_gpus=" + std::to_string(spec.min_gpus) +
                    " and gpus=" + std::to_string(probe.spec.shape.gpus) +
                    " that it may run at is within the cluster's " + std::to_string(s.topo->gpu_count()) + " GPUs");
  }
  if (std::string why = s.placer->Unsatisfiable(SchedulerState::ShapeFor(probe, n)); !why.empty()) {
    const std::string size = elastic ? " (at its smallest legal size, " + std::to_string(n) + " GPUs)" : "";
    return Fail(JobWhere(spec.id), "shape: can never fit this cluster" + size + ": " + why);
  }
  auto ids = s.partitions.Resolve(spec.partitions);  // CheckSubmit resolved them already
  if (std::string why = ids ? PartitionsUnsatisfiable(s, probe.spec, *ids, n) : std::string(); !why.empty())
    return Fail(JobWhere(spec.id), "partition: can never fit: " + why);
  return {};
}

// ---- events ------------------------------------------------------------------------------

Status Scheduler::Submit(JobSpec spec, Time now) {
  SchedulerState& s = *s_;
  auto cls = CheckSubmit(s, spec);
  PHX_RETURN_IF_ERROR(cls);
  if (now < s.now) return Fail("time", "events must not go back in time");
  s.now = now;
  s.backfill_idle = false;
  spec.shape = NormalisedShape(spec.shape);
  auto forbidden = ForbiddenNodes(*s.topo, spec);
  PHX_RETURN_IF_ERROR(forbidden);
  JobRecord rec;
  rec.partition_ids = *s.partitions.Resolve(spec.partitions);  // CheckSubmit resolved them
  rec.forbidden_nodes = std::move(*forbidden);
  rec.class_rank = static_cast<int>(cls->value);
  rec.preemptible = spec.preemptible.value_or(s.classes.preemptible_by_default(*cls));
  rec.walltime = spec.walltime > 0 ? spec.walltime : DefaultWalltime(s, rec.partition_ids);
  if (spec.submit == 0) spec.submit = now;
  rec.spec = std::move(spec);
  const JobId id = rec.spec.id;
  s.limits.AddPending(rec.spec.user, rec.spec.account);
  JobRecord& job = s.jobs.emplace(id, std::move(rec)).first->second;
  s.EnterPending(job);
  IndexArrayTask(s, job);
  return {};
}

Status Scheduler::Cancel(JobId id, Time now) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "cancel");
  PHX_RETURN_IF_ERROR(j);
  JobRecord& job = **j;
  if (IsFinal(job.state))
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "cancel: already " + std::string(JobStateName(job.state)));
  PHX_RETURN_IF_ERROR(Advance(s, now));
  if (job.state == JobState::kPending) {
    (void)s.limits.RemovePending(job.spec.user, job.spec.account);
    s.LeavePending(job);
    // Its victims keep running: a checkpoint they are taking is then just a checkpoint.
    for (JobId v : job.victims) {
      if (JobRecord* victim = s.Find(v); victim && victim->preempted_for == id) {
        victim->preempted_for = kNoJob;
        victim->after_checkpoint = JobRecord::After::kNothing;
        victim->shrink_to.clear();
      }
    }
    job.victims.clear();
    job.claim.clear();
  } else {
    s.StopJob(job, now);
  }
  job.state = JobState::kCancelled;
  job.end = now;
  return {};
}

Status Scheduler::Requeue(JobId id, Time now, std::string reason) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "requeue");
  PHX_RETURN_IF_ERROR(j);
  if ((*j)->state != JobState::kRunning && (*j)->state != JobState::kCheckpointing)
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "requeue: only running jobs can be requeued (it is " + std::string(JobStateName((*j)->state)) + ")");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  s.Requeue(**j, now, std::move(reason), s.outbox);
  return {};
}

Status Scheduler::JobLost(JobId id, Time now, std::string reason) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "job lost");
  PHX_RETURN_IF_ERROR(j);
  JobRecord& job = **j;
  if (!HoldsGpus(&job))
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "job lost: only running jobs can be lost (it is " + std::string(JobStateName(job.state)) + ")");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  if (job.spec.no_requeue) {
    s.StopJob(job, now);
    s.Kill(job, now, reason + " (no-requeue)", s.outbox);
  } else {
    s.Requeue(job, now, std::move(reason), s.outbox);
  }
  return {};
}

Status Scheduler::Suspend(JobId id, Time now) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "suspend");
  PHX_RETURN_IF_ERROR(j);
  JobRecord& job = **j;
  if (job.state != JobState::kRunning)
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "suspend: only running jobs can be suspended (it is " + std::string(JobStateName(job.state)) + ")");
  if (job.spec.suspended) return Fail(ErrorCode::kFailedPrecondition, JobWhere(id), "suspend: already suspended");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  job.spec.suspended = true;
  job.spec.suspended_at = now;
  return {};
}

Status Scheduler::Resume(JobId id, Time now) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "resume");
  PHX_RETURN_IF_ERROR(j);
  JobRecord& job = **j;
  if (!job.spec.suspended || job.state != JobState::kRunning)
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "resume: only suspended jobs can be resumed (it is " + std::string(JobStateName(job.state)) + ")");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  job.run_walltime += std::max<Duration>(0, now - job.spec.suspended_at);
  job.spec.suspended = false;
  job.spec.suspended_at = 0;
  s.NoteTimers(job);
  return {};
}

Status Scheduler::Hold(JobId id, Time now) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "hold");
  PHX_RETURN_IF_ERROR(j);
  if ((*j)->state != JobState::kPending)
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id), "hold: only pending jobs can be held");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  (*j)->spec.held = true;
  // As Slurm's scontrol hold: the reason now, not at the next pass that reaches the job (a pass
  // with Slurm's depth may not).
  (*j)->wait = {};
  (*j)->wait.kind = WaitKind::kHeld;
  s.KeyChanged(**j);
  return {};
}

Status Scheduler::Top(JobId id, Time now) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "top");
  PHX_RETURN_IF_ERROR(j);
  if ((*j)->state != JobState::kPending)
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "top: only pending jobs can be put first (it is " + std::string(JobStateName((*j)->state)) + ")");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  uint64_t last = 0;
  for (const auto& [other, job] : s.pending.Walk()) {
    if (job->spec.user == (*j)->spec.user) last = std::max(last, job->spec.top);
  }
  if ((*j)->spec.top == 0) ++s.topped_pending;
  (*j)->spec.top = last + 1;
  s.KeyChanged(**j);
  return {};
}

Status Scheduler::Release(JobId id, Time now) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "release");
  PHX_RETURN_IF_ERROR(j);
  if ((*j)->state != JobState::kPending || !(*j)->spec.held)
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id), "release: job is not held");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  (*j)->spec.held = false;
  (*j)->wait = {};  // no reason until a pass looks at it (Slurm: WAIT_NO_REASON)
  s.KeyChanged(**j);
  return {};
}

Status Scheduler::Update(JobId id, const JobUpdate& u, Time now) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "update");
  PHX_RETURN_IF_ERROR(j);
  JobRecord& job = **j;
  const std::string where = JobWhere(id);
  if (IsFinal(job.state))
    return Fail(ErrorCode::kFailedPrecondition, where, "update: already " + std::string(JobStateName(job.state)));
  std::optional<std::vector<uint32_t>> partition_ids;
  if (u.partitions) {
    if (job.state != JobState::kPending)
      return Fail(ErrorCode::kFailedPrecondition, where,
                  "update: partitions: only a pending job moves (it is " + std::string(JobStateName(job.state)) + ")");
    JobSpec moved = job.spec;
    moved.partitions = *u.partitions;
    if (u.walltime) moved.walltime = *u.walltime;
    auto ids = CheckPartitions(s, moved);
    PHX_RETURN_IF_ERROR(ids);
    partition_ids = std::move(*ids);
  }
  if (const Duration max = MaxWalltime(s, partition_ids ? *partition_ids : job.partition_ids);
      u.walltime && (*u.walltime <= 0 || *u.walltime > max)) {
    return Fail(where, "walltime: " + std::to_string(*u.walltime) + "s is outside 1.." + std::to_string(max) +
                           "s (the MaxTime of its partitions)");
  }
  std::optional<PriorityClassId> cls;
  if (u.priority_class) {
    auto c = s.classes.Find(*u.priority_class);
    if (!c) return Fail(where, "priority_class: " + c.error().message);
    cls = *c;
  }
  if (u.name) {
    if (auto st = CheckLabel("name", *u.name); !st) return Fail(where, st.error().ToString());
  }
  PHX_RETURN_IF_ERROR(Advance(s, now));
  job.reserve_plan.planned_at = -1;  // planned for the job as it was (its walltime, shape, nodes)
  if (partition_ids) {
    job.spec.partitions = *u.partitions;
    job.partition_ids = std::move(*partition_ids);
    job.patience_plan.planned_at = -1;  // its kept good block may lie outside them
    if (job.spec.walltime <= 0 && !u.walltime) job.walltime = DefaultWalltime(s, job.partition_ids);
  }
  if (u.name) job.spec.name = *u.name;
  if (cls) {
    job.spec.priority_class = *u.priority_class;
    job.class_rank = static_cast<int>(cls->value);
    job.preemptible = job.spec.preemptible.value_or(s.classes.preemptible_by_default(*cls));
  }
  if (u.walltime) {
    const Duration delta = *u.walltime - job.walltime;
    job.spec.walltime = *u.walltime;
    job.walltime = *u.walltime;
    if (job.state != JobState::kPending) {
      job.run_walltime = std::max<Duration>(1, job.run_walltime + delta);
      s.NoteTimers(job);
    }
  }
  if (job.state == JobState::kPending) s.KeyChanged(job);
  return {};
}

Status Scheduler::JobEnded(JobId id, Time now, bool success) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "job ended");
  PHX_RETURN_IF_ERROR(j);
  JobRecord& job = **j;
  if (job.state != JobState::kRunning && job.state != JobState::kCheckpointing) {
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "job ended: job is " + std::string(JobStateName(job.state)));
  }
  PHX_RETURN_IF_ERROR(Advance(s, now));
  s.history.Record(job.spec.user, job.spec.name, job.spec.shape.gpus, job.progress + (now - job.start));
  s.StopJob(job, now);
  job.state = success ? JobState::kCompleted : JobState::kFailed;
  job.end = now;
  return {};
}

Status Scheduler::CheckpointDone(JobId id, Time now, uint64_t epoch, std::string path) {
  SchedulerState& s = *s_;
  auto j = FindJob(s, id, "checkpoint done");
  PHX_RETURN_IF_ERROR(j);
  JobRecord& job = **j;
  if (job.state != JobState::kRunning && job.state != JobState::kCheckpointing) {
    return Fail(ErrorCode::kFailedPrecondition, JobWhere(id),
                "checkpoint done: job is " + std::string(JobStateName(job.state)));
  }
  if (epoch <= job.checkpoint_epoch && job.checkpoint_epoch != 0) {
    return Fail(
        ErrorCode::kFailedPrecondition, JobWhere(id),
        "checkpoint epoch " + std::to_string(epoch) + " is not newer than " + std::to_string(job.checkpoint_epoch));
  }
  PHX_RETURN_IF_ERROR(Advance(s, now));
  job.progress += now - job.last_checkpoint;
  job.last_checkpoint = now;
  job.checkpoint_epoch = epoch;
  job.checkpoint_path = std::move(path);
  if (job.state == JobState::kCheckpointing) {
    if (job.after_checkpoint == JobRecord::After::kPreempt) {
      s.Requeue(job, now, "preempted for job " + std::to_string(job.preempted_for) + " after checkpoint", s.outbox);
    } else if (job.after_checkpoint == JobRecord::After::kShrink) {
      s.FinishShrink(job, now, s.outbox);
    }
  }
  return {};
}

Status Scheduler::SetNodeState(std::string_view node, NodeState state, Time now) {
  SchedulerState& s = *s_;
  const NodeId n = s.topo->find_node(node);
  if (!n.valid()) return Fail(ErrorCode::kNotFound, "node " + std::string(node), "unknown node");
  PHX_RETURN_IF_ERROR(Advance(s, now));
  if (state == NodeState::kDown) {
    // Jobs with GPUs on the node lose them: shrink (elastic, legal size left) or requeue.
    std::vector<JobId> hit;
    for (const auto& [id, j] : s.active.Walk()) {
      for (GpuId g : j->gpus) {
        if (s.topo->node_of(g) == n) {
          hit.push_back(id);
          break;
        }
      }
    }
    for (JobId id : hit) {
      JobRecord& job = s.jobs.at(id);
      std::vector<GpuId> keep;
      for (GpuId g : job.gpus) {
        if (s.topo->node_of(g) != n) keep.push_back(g);
      }
      const bool can_shrink = s.config.elastic && job.spec.elastic() && job.state == JobState::kRunning;
      const uint32_t legal = can_shrink ? s.LegalSizeAtMost(job, keep.size()) : 0;
      if (legal > 0) {
        keep.resize(legal);
        // Restarting from the last checkpoint loses the work since then.
        job.gpu_seconds_lost += static_cast<double>(job.gpus.size()) * static_cast<double>(now - job.last_checkpoint);
        job.shrink_to = keep;
        s.FinishShrink(job, now, s.outbox);
        s.outbox.back().reason = "node " + std::string(node) + " down";
      } else if (job.spec.no_requeue) {
        s.StopJob(job, now);
        s.Kill(job, now, "node " + std::string(node) + " down (no-requeue)", s.outbox);
      } else {
        s.Requeue(job, now, "node " + std::string(node) + " down", s.outbox);
      }
    }
  }
  PHX_RETURN_IF_ERROR(s.topo->SetNodeState(n, state));
  if (state == NodeState::kUp) s.last_freed = now;
  s.keys_valid = false;  // what the Placer says a job can never have may change
  return {};
}

Status Scheduler::SetPartitions(std::vector<PartitionConfig> partitions, Time now) {
  SchedulerState& s = *s_;
  auto table = PartitionTable::Build(partitions, *s.topo, s.config.default_walltime, s.config.max_walltime);
  PHX_RETURN_IF_ERROR(table);
  PHX_RETURN_IF_ERROR(Advance(s, now));
  s.partitions = std::move(*table);
  s.config.partitions = std::move(partitions);
  for (auto& [id, job] : s.jobs) {
    auto ids = s.partitions.Resolve(job.spec.partitions);
    job.partition_ids = ids ? *ids : std::vector<uint32_t>{};  // gone: Unsatisfiable (as a restore)
    job.patience_plan.planned_at = -1;                         // its kept good block may lie outside them
    job.reserve_plan.planned_at = -1;
  }
  s.keys_valid = false;  // partitions and their checks changed for every job
  return {};
}

Result<uint32_t> Scheduler::SetExternalLoad(std::string_view node, uint32_t gpus, Time until, Time now) {
  std::vector<ExternalPiece> pieces;
  if (gpus > 0) pieces.push_back({gpus, until});
  return SetExternalLoad(node, std::move(pieces), now);
}

Result<uint32_t> Scheduler::SetExternalLoad(std::string_view node, std::vector<ExternalPiece> pieces, Time now) {
  SchedulerState& s = *s_;
  Topology& topo = *s.topo;
  const NodeId n = topo.find_node(node);
  const std::string where = "node " + std::string(node);
  if (!n.valid()) return Fail(ErrorCode::kNotFound, where, "external load: unknown node");
  uint64_t gpus = 0;
  for (const ExternalPiece& p : pieces) gpus += p.gpus;
  if (gpus > topo.node_gpu_count(n))
    return Fail(where, "external load: " + std::to_string(gpus) + " GPUs, the node has " +
                           std::to_string(topo.node_gpu_count(n)));
  PHX_RETURN_IF_ERROR(Advance(s, now));
  // Latest end first (ties: more GPUs first, then the order given): cut from the earliest ends.
  std::erase_if(pieces, [](const ExternalPiece& p) { return p.gpus == 0; });
  std::stable_sort(pieces.begin(), pieces.end(), [](const ExternalPiece& a, const ExternalPiece& b) {
    return a.until != b.until ? a.until > b.until : a.gpus > b.gpus;
  });
  uint32_t before = 0;
  if (auto it = s.external.find(n.value); it != s.external.end()) {
    before = it->second.gpus;
    for (uint32_t k = 0; k < it->second.pieces.size(); ++k)
      (void)topo.Release(Topology::ExternalOwner(n, k));  // cannot fail: each holds GPUs
    s.external.erase(it);
  }
  std::vector<GpuId> free;
  for (uint32_t i = 0; i < topo.node_gpu_count(n); ++i) {
    const GpuId g = topo.node_gpu(n, i);
    if (topo.owner(g) == kNoJob) free.push_back(g);
  }
  // The pieces as taken: cut to the free GPUs; past kExternalPieces merged into the last (whose
  // end is the latest of them: they come by end, latest first).
  SchedulerState::External load;
  size_t left = free.size();
  for (const ExternalPiece& p : pieces) {
    if (left == 0) break;
    const uint32_t take = static_cast<uint32_t>(std::min<size_t>(p.gpus, left));
    left -= take;
    if (load.pieces.size() == Topology::kExternalPieces) load.pieces.back().gpus += take;
    else load.pieces.push_back({take, p.until});
    load.gpus += take;
  }
  size_t next = 0;
  for (uint32_t k = 0; k < load.pieces.size(); ++k) {
    const auto first = free.begin() + static_cast<ptrdiff_t>(next);
    next += load.pieces[k].gpus;
    // Cannot fail: unowned GPUs, any node state.
    (void)topo.Restore(Topology::ExternalOwner(n, k),
                       std::vector<GpuId>(first, free.begin() + static_cast<ptrdiff_t>(next)), 0);
  }
  const uint32_t taken = load.gpus;
  if (taken > 0) s.external[n.value] = std::move(load);
  if (taken < before && topo.node_state(n) == NodeState::kUp) s.last_freed = now;
  return taken;
}

Scheduler::ExternalLoad Scheduler::external_load(std::string_view node) const {
  const NodeId n = s_->topo->find_node(node);
  auto it = n.valid() ? s_->external.find(n.value) : s_->external.end();
  if (it == s_->external.end()) return {};
  ExternalLoad out;
  out.gpus = it->second.gpus;
  for (const auto& p : it->second.pieces) {
    out.until = std::max(out.until, p.until);
    out.pieces.push_back({p.gpus, p.until});
  }
  return out;
}

// ---- invariants --------------------------------------------------------------------------

std::string Scheduler::CheckInvariants() const {
  const SchedulerState& s = *s_;
  const Topology& topo = *s.topo;
  std::ostringstream out;
  out << topo.CheckInvariants();
  size_t held = 0;
  for (const auto& [id, job] : s.jobs) {
    const bool active = HoldsGpus(job);
    if (active != s.active.Contains(id)) out << "job " << id << ": active set disagrees with state\n";
    if ((job.state == JobState::kPending) != s.pending.Contains(id)) out << "job " << id << ": pending set disagrees\n";
    if (const JobRecord* p = s.pending.Find(id); p != nullptr && p != &job)
      out << "job " << id << ": pending set points elsewhere\n";
    if (active == job.gpus.empty())
      out << "job " << id << ": " << JobStateName(job.state) << " with " << job.gpus.size() << " GPUs\n";
    const auto owned = topo.job_gpus(id);
    if (!std::equal(owned.begin(), owned.end(), job.gpus.begin(), job.gpus.end()))
      out << "job " << id << ": GPUs differ from the topology's\n";
    for (GpuId g : job.gpus) {
      if (topo.owner(g) != id) out << "job " << id << ": GPU " << g.value << " owned by " << topo.owner(g) << "\n";
    }
    held += job.gpus.size();
    if (active && !job.spec.shape.exclusive && job.gpus.size() > job.spec.shape.gpus)
      out << "job " << id << ": more GPUs than asked\n";
    // Links refer to known jobs (jobs are never forgotten); FinishRestore drops the others.
    if (!s.restoring) {
      for (JobId dep : job.spec.after_ok) {
        if (!s.jobs.contains(dep) && !s.arrays.contains(dep))
          out << "job " << id << ": dependency on unknown job " << dep << "\n";
      }
      for (const DependItem& d : job.spec.depends.items) {
        if (d.kind == DependKind::kSingleton) continue;
        const bool known =
            d.task ? ArrayTaskJob(s, d.job, *d.task) != kNoJob : s.jobs.contains(d.job) || s.arrays.contains(d.job);
        if (!known) out << "job " << id << ": dependency on unknown " << FormatDependItem(d) << "\n";
      }
      if (job.spec.array_id != kNoJob && ArrayTaskJob(s, job.spec.array_id, job.spec.array_task) != id)
        out << "job " << id << ": not indexed as task " << job.spec.array_task << " of array " << job.spec.array_id
            << "\n";
      for (JobId v : job.victims) {
        if (!s.jobs.contains(v)) out << "job " << id << ": unknown victim " << v << "\n";
      }
      if (job.preempted_for != kNoJob && !s.jobs.contains(job.preempted_for)) {
        out << "job " << id << ": preempted for unknown job " << job.preempted_for << "\n";
      }
    }
  }
  size_t owned = 0;
  size_t external = 0;
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    const JobId o = topo.owner(GpuId(g));
    if (Topology::IsExternal(o)) ++external;
    else owned += o != kNoJob;
  }
  if (owned != held) out << owned << " GPUs owned in the topology, " << held << " held by jobs\n";
  size_t loaded = 0;
  for (const auto& [node, load] : s.external) {
    loaded += load.gpus;
    uint32_t sum = 0;
    for (uint32_t k = 0; k < load.pieces.size(); ++k) {
      sum += load.pieces[k].gpus;
      if (load.pieces[k].gpus == 0 ||
          topo.job_gpus(Topology::ExternalOwner(NodeId(node), k)).size() != load.pieces[k].gpus)
        out << "node " << node << ": external load piece " << k << " differs from the topology's\n";
    }
    if (sum != load.gpus || load.pieces.size() > Topology::kExternalPieces)
      out << "node " << node << ": external load pieces do not add up\n";
  }
  if (external != loaded) out << external << " GPUs externally owned, " << loaded << " in external loads\n";
  return out.str();
}

}  // namespace phalanx
