// Scheduler: the pure, deterministic scheduling core. It owns the cluster's Topology and the
// jobs, takes events with the time passed in, and each pass returns decisions as data.
//
// Contract (HiveD-style):
//  1. Never called concurrently; one thread owns it.
//  2. Same events at the same times -> the same decisions, always (no clock, no randomness,
//     ordered containers only).
//  3. An event that fails (unknown job, wrong state, invalid spec) returns an Error and leaves
//     the state unchanged.
//  4. Decisions are already applied to the core's state when returned: a Start means the GPUs
//     are the job's; the glue carries it out and reports what really happened as events
//     (JobEnded with failure when a launch fails).
//
// Scheduling rules (queue order, backfill with block-shaped reservations, checkpoint-based
// preemption, elastic shrink/grow, failures) are described in docs/scheduling.md.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/common/time.h"
#include "core/placement/placer.h"
#include "core/planner/domain_planner.h"
#include "core/queue/fairshare.h"
#include "core/queue/limits.h"
#include "core/queue/priority.h"
#include "core/sched/config.h"
#include "core/sched/decision.h"
#include "core/sched/job.h"
#include "core/topology/topology.h"

namespace phalanx {

// A promise made by backfill: `job` will get `gpus` (a block) at `start`.
struct Reservation {
  JobId job = kNoJob;
  Time start = 0, end = 0;
  std::vector<GpuId> gpus;
  bool for_preemption = false;  // the GPUs a preemptor's victims free (or will free) for it
};

class Scheduler {
 public:
  // Fails on an invalid configuration (priority classes, fairshare shares, weights).
  static Result<std::unique_ptr<Scheduler>> Create(Topology topology, SchedulerConfig config);
  ~Scheduler();

  // ---- events ----------------------------------------------------------------------------
  // A new job. Fails on a duplicate id, an unknown priority class, a bad shape (0 GPUs, nodes
  // without gpus_per_node, elastic min > max, ...), a pending-job limit, or `now` going back.
  Status Submit(JobSpec spec, Time now);
  // Pending or held: gone. Running or checkpointing: the glue must stop it; GPUs are freed.
  Status Cancel(JobId job, Time now);
  Status Hold(JobId job, Time now);
  Status Release(JobId job, Time now);
  // The job's processes ended (success = exit code 0). Fails unless running/checkpointing.
  Status JobEnded(JobId job, Time now, bool success);
  // The job saved a checkpoint (epoch increases). Completes a pending preemption or shrink.
  Status CheckpointDone(JobId job, Time now, uint64_t epoch, std::string path);
  // Node availability. Down: the node's jobs shrink (elastic, when legal) or are requeued from
  // their last checkpoint; the decisions come with the next Schedule(). Drain: no new work.
  Status SetNodeState(std::string_view node, NodeState state, Time now);

  // One scheduling pass at `now`: deadlines and walltimes, then the queue in order. Returns
  // every decision, including a Wait for each pending job.
  std::vector<Decision> Schedule(Time now);

  // ---- queries ---------------------------------------------------------------------------
  const Topology& topology() const { return *topo_; }
  const Placer& placer() const { return *placer_; }
  const SchedulerConfig& config() const { return config_; }
  const JobRecord* job(JobId id) const;
  const std::map<JobId, JobRecord>& jobs() const { return jobs_; }
  const std::vector<Reservation>& reservations() const { return reservations_; }
  // Pending jobs in the order of the last pass.
  const std::vector<JobId>& queue() const { return queue_; }
  Time now() const { return now_; }
  // Empty when every internal invariant holds (GPU ownership vs job records, counters,
  // reservations disjoint in time-overlap). For tests; O(jobs + GPUs).
  std::string CheckInvariants() const;

 private:
  Scheduler(std::unique_ptr<Topology> topology, SchedulerConfig config, PriorityClassTable classes, FairshareTracker fairshare);
  class WhatIf;

  Status Advance(Time now);
  JobRecord* Find(JobId id);
  Result<JobRecord*> FindOr(JobId id, std::string_view event);

  // pass steps
  void Timers(Time now, std::vector<Decision>& out);
  void ChargeUsage(Time now);
  void OrderQueue(Time now);
  void ScheduleJob(JobRecord& job, Time now, std::vector<Decision>& out);
  void GrowElastic(Time now, std::vector<Decision>& out);

  // placement
  std::vector<uint32_t> LegalSizes(const JobRecord& job) const;  // largest first
  PlacementRequest ShapeFor(const JobRecord& job, uint32_t gpus) const;
  std::optional<Placement> PlaceNow(const PlacementRequest& request) const;
  std::optional<Placement> TryStartNow(const JobRecord& job, Time now);
  std::optional<Reservation> Reserve(const JobRecord& job, Time now);
  std::vector<GpuId> TrimClaim(const JobRecord& job, std::vector<GpuId> claim);
  // The pass's plan of GPU counts over time per domain (running jobs until their release,
  // unavailable nodes, reservations); built on first use in a pass. nullptr if inconsistent.
  DomainPlanner* Plan(Time now);
  Duration RemainingWalltime(const JobRecord& job) const;
  Time ReleaseTime(const JobRecord& running) const;

  // state changes
  void StartJob(JobRecord& job, const Placement& placement, Time now, std::vector<Decision>& out);
  void StopJob(JobRecord& job, Time now);  // releases GPUs and limit counters
  void Requeue(JobRecord& job, Time now, std::string reason, std::vector<Decision>& out);
  void FinishShrink(JobRecord& job, Time now, std::vector<Decision>& out);
  void SetAllocation(JobRecord& job, std::vector<GpuId> gpus);

  // preemption and shrinking
  bool TryPreempt(JobRecord& job, Time now, std::vector<Decision>& out);
  bool PreemptFor(JobRecord& job, uint32_t n, const PlacementRequest& request, const std::vector<JobId>& candidates, Time now,
                  std::vector<Decision>& out);

  // Per pass: shapes that failed to start; a job no bigger, no longer, same shape class also fails
  // (resources only shrink during a pass).
  struct ShapeKey {
    Level level;
    FitMode fit;
    bool exclusive, rail_aligned;
    uint32_t gpus_per_node;
    bool operator==(const ShapeKey&) const = default;
  };
  struct FailedShape {
    ShapeKey key;
    uint32_t gpus;
    Duration walltime;
  };

  std::unique_ptr<Topology> topo_;
  std::unique_ptr<Placer> placer_;
  SchedulerConfig config_;
  PriorityClassTable classes_;
  FairshareTracker fairshare_;
  LimitTracker limits_;

  std::map<JobId, JobRecord> jobs_;
  std::set<JobId> pending_;   // pending jobs (incl. held)
  std::set<JobId> active_;    // running or checkpointing
  std::vector<JobId> queue_;
  std::vector<Reservation> reservations_;
  std::map<JobId, std::vector<GpuId>> promised_;  // blocks reserved in the previous pass
  std::set<JobId> planned_;                        // jobs already handled in this pass
  std::vector<Decision> outbox_;  // decisions made by events, emitted by the next pass
  std::map<JobId, Time> charged_until_;
  Time now_ = 0;
  std::vector<FailedShape> failed_shapes_;
  std::optional<DomainPlanner> plan_;
  bool plan_built_ = false;
  // Blocks for "start now" checks: the reservations that begin before a job would end are a
  // prefix of the reservations in start order, kept applied as a stack between jobs.
  std::unique_ptr<WhatIf> start_blocks_;
  std::vector<size_t> res_order_;
  size_t blocks_applied_ = 0;
  bool res_order_dirty_ = true;
  void SetStartBlocks(Time end, JobId except);
  void ClearStartBlocks();
  // Release times of active jobs, sorted (rebuilt when dirty).
  std::vector<std::pair<Time, JobId>> ends_;
  bool ends_dirty_ = true;
  const std::vector<std::pair<Time, JobId>>& Ends();
  // Preemption candidates per preemptor class, for this pass.
  std::map<int, std::vector<JobId>> victim_cache_;
  struct FailedPreempt {
    int class_rank;
    ShapeKey key;
    uint32_t gpus;
  };
  std::vector<FailedPreempt> failed_preempts_;
  bool blocked_ = false;          // this pass: some job could not start
  JobId first_blocked_ = kNoJob;
  Time blocked_since_ = 0;        // last pass in which a job waited for GPUs
  Time idle_since_ = 0;           // since when GPUs have been free with nobody waiting
  Time last_freed_ = 0;           // last time GPUs were given back (ends, shrinks, node up)
};

}  // namespace phalanx
