// SchedulerState: everything the Scheduler keeps from one event or pass to the next, and the
// changes to a job's state that events and passes share (scheduler_state.cc). The Scheduler owns
// one (scheduler.h shows only a pointer to it); the parts of a pass take it by reference.
// Nothing in it is per pass: that is PassState.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/placement/placer.h"
#include "core/planner/domain_planner.h"
#include "core/queue/fairshare.h"
#include "core/queue/limits.h"
#include "core/queue/priority.h"
#include "core/sched/config.h"
#include "core/sched/decision.h"
#include "core/sched/elastic_sizes.h"
#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/walk_twin.h"
#include "core/sched/job.h"
#include "core/sched/job_set.h"
#include "core/sched/partition.h"
#include "core/sched/policy/policies.h"
#include "core/sched/scheduler.h"
#include "core/topology/topology.h"

namespace phalanx {

struct SchedulerState {
  SchedulerState(Topology topology, SchedulerConfig config, PriorityClassTable classes, FairshareTracker fairshare);
  SchedulerState(const SchedulerState&) = delete;
  SchedulerState& operator=(const SchedulerState&) = delete;

  JobRecord* Find(JobId id) {
    auto it = jobs.find(id);
    return it == jobs.end() ? nullptr : &it->second;
  }

  // ---- sizes and placement ----------------------------------------------------------------
  // The job's sizes (elastic_sizes.h) on this cluster under this config.
  std::vector<uint32_t> LegalSizes(const JobRecord& job) const {
    return phalanx::LegalSizes(job.spec, config.elastic, topo->gpu_count());
  }
  uint32_t MinLegalSize(const JobRecord& job) const {
    return phalanx::MinLegalSize(job.spec, config.elastic, topo->gpu_count());
  }
  uint32_t LegalSizeAtMost(const JobRecord& job, size_t gpus) const {
    return phalanx::LegalSizeAtMost(job.spec, config.elastic, topo->gpu_count(), gpus);
  }
  // The job's shape at `gpus` GPUs (a node-shaped job keeps its own).
  static PlacementRequest ShapeFor(const JobRecord& job, uint32_t gpus) {
    PlacementRequest r = job.spec.shape;
    if (r.nodes == 0) r.gpus = gpus;
    return r;
  }
  // The configured placement (config.placement) on the Topology as it is now, what-ifs
  // included; nullopt unless placed. `within` (topology placement only; empty: everywhere):
  // Placer::PlaceWithin's regions.
  std::optional<Placement> PlaceNow(const PlacementRequest& request, std::span<const DomainId> within = {}) const;
  // The same for `job`, on the nodes its -w/-x/-C allow (node_filter.h) and inside its
  // partitions: in each of them in order that is UP or DRAIN, with the free GPUs outside it held
  // for the call; the first placement found.
  std::optional<Placement> PlaceNow(const JobRecord& job, const PlacementRequest& request,
                                    std::span<const DomainId> within = {}) const;
  // The same two on another Topology, with a Placer over it (Reserve's walks in the WalkTwin).
  std::optional<Placement> PlaceOn(Topology& t, Placer& p, const PlacementRequest& request,
                                   std::span<const DomainId> within = {}) const;
  std::optional<Placement> PlaceOn(Topology& t, Placer& p, const JobRecord& job, const PlacementRequest& request,
                                   std::span<const DomainId> within = {}) const;
  // The WalkTwin of Reserve's walks, made on first use.
  WalkTwin& Twin() {
    if (!walk_twin) walk_twin = std::make_unique<WalkTwin>(*topo, *placer, config.model);
    return *walk_twin;
  }
  // Whether any of the job's partitions lets jobs start (UP or DRAIN).
  bool PartitionOpen(const JobRecord& job) const;
  // The GPUs `user`'s active jobs other than `except` hold in partition `part` (each job
  // counted in the partition it runs in: PartitionTable::Holding).
  uint32_t UserGpusIn(const std::string& user, uint32_t part, JobId except) const;
  // Whether `job` may hold `gpus` GPUs in partition `part` under its max_gpus_per_user.
  bool UnderUserLimit(const JobRecord& job, uint32_t part, uint32_t gpus) const {
    const uint32_t max = partitions.at(part).max_gpus_per_user;
    return max == 0 || UserGpusIn(job.spec.user, part, job.spec.id) + gpus <= max;
  }
  // Why every open partition of `job` is at its user's GPU limit (max_gpus_per_user) for `n`
  // more GPUs ("partition P: MaxGPUsPerUser 8, alice holds 8"); empty when one of them is not.
  std::string UserLimitHit(const JobRecord& job, uint32_t n) const;
  // The GPUs free now where `job` may run, for Resources against TopologyBlock: on the nodes it
  // may use (-w/-x/-C) in the best of its open partitions (Slurm counts the partition's nodes);
  // cluster-wide when one of them is every node, the GPUs `blocks` holds counted as free. Clears
  // `blocks` when it counts by partition (blocked GPUs are not counted by node).
  uint32_t FreeGpusFor(const JobRecord& job, StartBlocks& blocks) const;
  // The same count as the Topology stands: GPUs held (start blocks, what-ifs) are not free.
  uint32_t FreeGpusNowFor(const JobRecord& job) const;
  // How long a job has between the checkpoint signal and its deadline: its own, else the config's.
  Duration CheckpointGrace(const JobRecord& job) const {
    return job.spec.checkpoint_grace > 0 ? job.spec.checkpoint_grace : config.checkpoint_grace;
  }
  // The best placement of `gpus` GPUs in the empty cluster (the Placer on a copy of the topology
  // as it was created): its predicted bus bandwidth and the level of the smallest domain that
  // holds it. Cached per size. Used by placement under pressure (patience.h).
  struct BestBlock {
    double busbw_gbs = 0;
    Level level = Level::kCore;
  };
  const BestBlock& Best(uint32_t gpus);
  // Whether every domain of at least `gpus` GPUs (one that could hold a block of that many)
  // lies at one depth of the tree for its level (found once a size: the tree never changes).
  bool DepthsByLevel(uint32_t gpus);
  std::map<uint32_t, bool> depths_by_level;
  // The predicted bus bandwidth of a ring over `gpus` in the empty cluster: its shape alone, no
  // other job's traffic. After Best (which makes the empty copy).
  double ShapeBusbw(std::span<const GpuId> gpus) const { return empty_placer->model().Predict(gpus).busbw_gbs; }
  // When an active job is planned to give its GPUs back: the end of its run as estimated
  // (policies.runtime), its checkpoint deadline if it is being preempted, not before `now`.
  Time ReleaseTime(const JobRecord& running) const;

  // ---- timers -----------------------------------------------------------------------------
  // Keeps next_timer a lower bound over the timers of every active job (timers.h).
  void NoteTimer(Time t) { next_timer = std::min(next_timer, t); }
  void NoteTimers(const JobRecord& job);

  // ---- job state changes (scheduler_state.cc) ---------------------------------------------
  // A job enters or leaves the queue: the pending set, the kept FIFO order, the count of topped
  // jobs (every change of pending membership goes through these two, once per change).
  void EnterPending(JobRecord& job);
  void LeavePending(JobRecord& job);
  // Releases the job's GPUs and running-GPU counters and charges its usage; it leaves the
  // active set, and its preemption links are cut (victims keep running, a preemptor forgets it).
  void StopJob(JobRecord& job, Time now);
  // Stops the job and puts it back in the queue (resumable from its last checkpoint): a
  // Preempt{requeue} decision. The GPUs it held join its preemptor's claim.
  void Requeue(JobRecord& job, Time now, std::string reason, std::vector<Decision>& out);
  // Ends a shrink: the job keeps shrink_to and restarts on it from its last checkpoint (a new
  // run); the GPUs it gives up join its preemptor's claim. A Resize decision.
  void FinishShrink(JobRecord& job, Time now, std::vector<Decision>& out);
  // Ends the job for good (the caller has taken it off its GPUs or out of the queue): it is
  // killed at `now`. A Kill decision with `reason`.
  void Kill(JobRecord& job, Time now, std::string reason, std::vector<Decision>& out);
  // Adds the GPU-seconds the job has held since service_until to its attained service, up to
  // `now` (job.h AttainedService); called before its GPUs change.
  static void AccrueService(JobRecord& job, Time now) {
    job.service_gpu_s = AttainedService(job, now);
    job.service_until = now;
  }
  // Moves the job to `gpus` on the Topology (none: off it), with their predicted traffic.
  void SetAllocation(JobRecord& job, std::vector<GpuId> gpus);

  // ---- the core's state -------------------------------------------------------------------
  std::unique_ptr<Topology> topo;
  std::unique_ptr<Placer> placer;       // over *topo
  std::unique_ptr<WalkTwin> walk_twin;  // Reserve's walks' Topology (walk_twin.h); made on first use
  // The topology as created, never allocated, and a Placer over it (Best); made on first use.
  std::unique_ptr<Topology> empty_topo;
  std::unique_ptr<Placer> empty_placer;
  std::map<uint32_t, BestBlock> best_blocks;
  SchedulerConfig config;
  PriorityClassTable classes;
  PartitionTable partitions;  // set by Scheduler::Create
  FairshareTracker fairshare;
  RuntimeHistory history;  // run times of ended jobs (RuntimeMode::kPredicted)
  LimitTracker limits;
  Policies policies;  // made from config, classes and fairshare (declared before it)

  std::map<JobId, JobRecord> jobs;  // every job ever known (never erased: records stay put)
  JobSet pending;                   // pending jobs (incl. held), with their records
  JobSet active;                    // running or checkpointing
  // The pending jobs in FIFO order (submit time, then id), kept as they enter and leave the
  // queue: a FIFO pass with Slurm's depth reads its first jobs here instead of ordering every
  // pending job (scheduler_pass.cc, KeptOrder). A std::set: jobs start from its front and
  // enter at its back, and a pass reads only its first few hundred entries.
  struct FifoEntry {
    Time submit = 0;
    JobId id = kNoJob;
    JobRecord* job = nullptr;
    bool operator<(const FifoEntry& o) const { return submit != o.submit ? submit < o.submit : id < o.id; }
  };
  std::set<FifoEntry> fifo;  // kept only where a pass may read it (KeepsFifo), else empty
  // Whether the config lets a pass read the kept order: FIFO order with Slurm's limits (the
  // config does not change for the Scheduler's life; under other policies `fifo` costs nothing).
  bool KeepsFifo() const {
    return config.kept_fifo_order && config.order == QueueOrder::kFifo &&
           (config.main_queue_depth > 0 || config.backfill_max_jobs > 0);
  }
  // The queue's keys in the last pass's order, where the config keeps them (KeepsKeys;
  // scheduler_pass.cc, ScheduleFromKeys): jobs that entered the queue since (or changed: Hold,
  // Release, Update, Top) wait in keys_entered, those that left (or changed) in keys_left, until
  // the next pass that reads the keys. keys_valid false: built anew from the pending set then
  // (after a pass that ordered the records, or a change to partitions or nodes).
  std::vector<KeptKey> kept_keys;
  // The placement shapes of the kept keys (KeptKey::shape), in order of first use; made anew
  // with the keys.
  std::vector<ShapeKey> key_shapes;
  std::vector<JobRecord*> keys_entered;
  std::vector<JobId> keys_left;
  bool keys_valid = false;
  bool KeepsKeys() const {
    return config.kept_queue_keys && !KeepsFifo() && !policies.preemption && policies.queue->Keyed() &&
           config.runtime == RuntimeMode::kWalltime;
  }
  // The Scheduler changed a pending job (its key may be stale): made again at the next pass.
  void KeyChanged(JobRecord& job) {
    if (!keys_valid) return;
    keys_left.push_back(job.spec.id);
    keys_entered.push_back(&job);
  }
  size_t topped_pending = 0;  // pending jobs put first by Scheduler::Top (spec.top > 0)
  // A restored pending job has a claim or victims (Restore); cleared by a pass that finds none
  // left under a policy without preemption (scheduler_pass.cc).
  bool pending_claims = false;
  // External load by node index (Scheduler::SetExternalLoad): piece k's GPUs held on the
  // Topology by Topology::ExternalOwner(node, k) until its `until` (pieces by end, latest
  // first; none empty); only nodes with a load are listed.
  struct External {
    struct Piece {
      uint32_t gpus = 0;
      Time until = 0;
    };
    std::vector<Piece> pieces;
    uint32_t gpus = 0;  // the pieces' sum
  };
  std::map<uint32_t, External> external;
  // Arrays: the array's id -> its tasks' job ids, by task index (dependencies on a whole array,
  // one task of it; the %N limit). Filled by Submit and Restore; tasks never leave.
  std::map<JobId, std::vector<JobId>> arrays;
  // The jobs still pending after the last pass, in its order. A pass in the kept FIFO order
  // leaves it stale (queue_stale) and Queue() builds it from `fifo` when asked.
  std::vector<JobId> queue;
  bool queue_stale = false;
  const std::vector<JobId>& Queue();
  std::vector<Reservation> reservations;  // made by the last pass; the next keeps their blocks
  std::vector<Decision> outbox;           // decisions made by events, emitted by the next pass
  std::map<JobId, Time> charged_until;    // active jobs: usage charged to fairshare up to then
  Time now = 0;
  Time next_timer = 0;             // no active job has a timer before this (FireTimers skips until then)
  Time last_charge = 0;            // last time running jobs' usage was charged (ChargeUsage)
  Time idle_since = 0;             // since when GPUs have been free with nobody waiting (GrowElastic)
  Time last_freed = 0;             // last time GPUs were given back (ends, shrinks, node up)
  Time last_backfill = -kForever;  // the last backfill cycle (config.backfill_interval > 0)
  // The last backfill cycle decided nothing, nothing happened since (every event clears it) and
  // nothing in the policy changes with time alone (IdleCyclesRepeat): the next cycles decide
  // nothing either until an event, so Schedule skips them (scheduler_pass.cc).
  bool backfill_idle = false;
  Time backfill_idle_until = kForever;  // ... and only before this (PassState::window_reaches)
  uint64_t idle_cycles_skipped = 0;
  uint64_t kept_order_passes = 0;
  uint64_t keyed_skips = 0;  // jobs decided from their kept keys alone (ScheduleFromKeys)
  // Reserve walks' domains whose fingerprint at t, kept apart from the Topology, was not the one
  // the Topology gave once brought to t (a fault: tests ask for none).
  uint64_t walk_print_mismatches = 0;
  uint64_t walk_known_tops = 0;  // domains a walk left out by their fingerprint at t alone
  uint64_t floored_walks = 0;    // Reserve walks that began at an earlier walk's end (PassState::WalkFloor)
  // Of them: those that skipped the steps before it, and those that started there from the
  // releases the floor's walk had made; of the last, the walks for a good block (the released
  // jobs listed by domain again, their load changes kept).
  uint64_t floor_jumps = 0, floor_releases_kept = 0, floor_tops_kept = 0;
  Time patience_due = kForever;  // the last pass: the earliest bound of a job waiting for a good block
  // Between the first Restore and FinishRestore: the jobs restored so far (scheduler_restore.cc).
  bool restoring = false;
  std::vector<JobId> restored;
  PassBuffers buffers;
  // The domain plan of the last pass that asked one (reserve.cc, Plan; config.keep_domain_plan):
  // the planner and what it holds, one entry per allocation (GPUs over [start, end), start as
  // the planner counts it: not before its origin). The next pass moves it to its `now`, removes
  // the allocations it no longer wants and adds the new ones, instead of adding every running
  // job again. Empty (no planner) until first asked and after an inconsistent plan.
  struct KeptPlan {
    struct Entry {
      Time start = 0, end = 0;
      std::vector<GpuId> gpus;
      AllocationId id;
    };
    std::optional<DomainPlanner> plan;
    std::vector<Entry> entries;
  } kept_plan;
  // The builds of Reserve's sorted release times (reserve.cc, Ends): how many were made, the
  // size of the last, and working memory. Each running job's record keeps its place in the last.
  struct EndsOrder {
    struct Entry {
      Time t;
      JobId id;
      JobRecord* job;  // null: outside load
    };
    uint64_t builds = 0;
    size_t last_size = 0;
    std::vector<Entry> kept, changed, merged;
  } ends_order;
};

}  // namespace phalanx
