// Scheduler: the pure, deterministic scheduling core. It owns the cluster's Topology and the
// jobs, takes events with the time passed in, and each pass returns decisions as data.
//
// Contract (HiveD-style):
//  1. Never called concurrently; one thread owns it.
//  2. Same events at the same times -> the same decisions, always (no clock, no randomness,
//     ordered containers only).
//  3. An event that fails returns an Error and leaves the state unchanged. Its code says why:
//     kNotFound (an unknown job or node, also as a dependency), kFailedPrecondition (the job's
//     state, or a restore in progress, forbids the event), kAlreadyExists (a job id already
//     known), kResourceExhausted (a pending-job limit), kInvalidArgument (anything else: a bad
//     spec or value, time going back). Callers branch on the code; the message is for people.
//  4. Decisions are already applied to the core's state when returned: a Start means the GPUs
//     are the job's; the glue carries it out and reports what really happened as events
//     (JobEnded with failure when a launch fails).
//
// Scheduling rules (queue order, backfill with block-shaped reservations, checkpoint-based
// preemption, elastic shrink/grow, failures) are described in docs/scheduling.md; the pass and
// its policies (queue order, backfill, preemption, runtime estimate) live in core/sched/internal/
// and core/sched/policy/, out of this header.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/common/time.h"
#include "core/placement/placer.h"
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
  bool for_patience = false;    // a good block a job waits for (placement under pressure, patience.h)
};

struct SchedulerState;  // core/sched/internal/scheduler_state.h

class Scheduler {
 public:
  // Fails on an invalid configuration (priority classes, fairshare shares, weights, walltimes,
  // negative durations, a queue order or backfill mode no policy is registered for).
  static Result<std::unique_ptr<Scheduler>> Create(Topology topology, SchedulerConfig config);
  ~Scheduler();

  // ---- events ----------------------------------------------------------------------------
  // A new job. Fails on a duplicate id, an unknown priority class, a bad shape (0 GPUs, nodes
  // without gpus_per_node, elastic min > max, ...), a pending-job limit, `now` going back, or
  // a restore in progress (the checks of ValidateSpec but "can never fit": such a job waits
  // Unsatisfiable).
  Status Submit(JobSpec spec, Time now);
  // Pending or held: gone. Running or checkpointing: the glue must stop it; GPUs are freed.
  Status Cancel(JobId job, Time now);
  Status Hold(JobId job, Time now);
  // scontrol top: the pending job goes first among its user's pending jobs (before those topped
  // earlier); the places the user's jobs hold in the queue stay theirs, so other users' jobs
  // keep theirs. Fails: kNotFound, kFailedPrecondition unless pending.
  Status Top(JobId job, Time now);
  Status Release(JobId job, Time now);
  // A running or checkpointing job back to the queue (an admin's requeue): its GPUs are freed
  // and the next pass returns Preempt{requeue} with `reason` for the glue to stop it; it
  // resumes from its last checkpoint. Fails: kNotFound, kFailedPrecondition (not active).
  Status Requeue(JobId job, Time now, std::string reason);
  // The job's processes are gone through no exit of theirs: a launch its node never got (the
  // glue stopped between deciding and delivering it) or a node that came back without them.
  // As for a node going down: the next pass returns Preempt{requeue} with `reason` (it resumes
  // from its last checkpoint), or Kill with "`reason` (no-requeue)" under --no-requeue.
  // Fails: kNotFound, kFailedPrecondition (not active).
  Status JobLost(JobId job, Time now, std::string reason);
  // scontrol suspend / resume: a running job is stopped (the glue sends SIGSTOP to its parts)
  // and keeps its GPUs; no timer of it fires while suspended (walltime, periodic checkpoint);
  // Resume extends its run's walltime by the time it was suspended (Slurm extends the end time
  // likewise). A suspended job is not chosen as a preemption victim. Fails: kNotFound,
  // kFailedPrecondition (Suspend: not running, or already suspended; Resume: not suspended).
  Status Suspend(JobId job, Time now);
  Status Resume(JobId job, Time now);
  // Changes a pending or active job's walltime, priority class or name (unset fields stay).
  // A running job's current run ends `walltime` after its start minus the work it resumed from;
  // lowering it below the time already run ends the job at the next pass (walltime kill). Fails
  // on a final job, an unknown class, a walltime outside (0, the smallest max_walltime of its
  // partitions], or a name with
  // control characters or invalid UTF-8 (util/job_fields.h CheckLabel); permissions are
  // the glue's. Reservations are recomputed by the next pass. `partitions` (a pending job
  // only, else kFailedPrecondition; phalanxd's Slurm mode: the job moved in Slurm, `scontrol
  // update Partition=`) replaces the job's partitions, checked as a submission's are (an unknown
  // name, a DRAIN or INACTIVE partition, a walltime over MaxTime, more GPUs than MaxGPUsPerJob
  // fail); empty: the default partition. A job without a walltime of its own gets the new
  // partitions' default.
  struct JobUpdate {
    std::optional<Duration> walltime = std::nullopt;
    std::optional<std::string> priority_class = std::nullopt;
    std::optional<std::string> name = std::nullopt;
    std::optional<std::vector<std::string>> partitions = std::nullopt;
  };
  Status Update(JobId job, const JobUpdate& update, Time now);
  // The job's processes ended (success = exit code 0). Fails unless running/checkpointing.
  Status JobEnded(JobId job, Time now, bool success);
  // The job saved a checkpoint (epoch increases). Completes a pending preemption or shrink.
  Status CheckpointDone(JobId job, Time now, uint64_t epoch, std::string path);
  // Node availability. Down: the node's jobs shrink (elastic, when legal) or are requeued from
  // their last checkpoint; the decisions come with the next Schedule(). Drain: no new work.
  Status SetNodeState(std::string_view node, NodeState state, Time now);
  // Replaces the partitions (phalanxd's Slurm mode: Slurm's own, whenever they change). Every
  // job's partitions are resolved anew by name (a job whose partitions are all gone waits
  // Unsatisfiable until one comes back; running jobs keep their GPUs). Fails as
  // PartitionTable::Build does, naming the partition (the table stays as it was), or on `now`
  // going back or a restore in progress.
  Status SetPartitions(std::vector<PartitionConfig> partitions, Time now);
  // External load (phalanxd's Slurm mode: jobs Slurm runs that Phalanx did not place): `gpus`
  // GPUs of `node` are busy until `until`, the rest stay placeable. Replaces the node's previous
  // load; 0 GPUs clears it. The GPUs are taken from those no job of the core holds (a node's
  // own jobs are never displaced: the load is capped at its unowned GPUs; the count taken is
  // returned), also on a drained or down node; on the Topology their owner is
  // Topology::ExternalOwner(node). Backfill plans them free at `until` (an `until` not after
  // `now`, a job past its expected end, counts as ending at now + 1). Never preempted, never
  // charged to fairshare, no record. Fails on an unknown node (kNotFound), more GPUs than the
  // node has (kInvalidArgument), `now` going back or a restore in progress.
  Result<uint32_t> SetExternalLoad(std::string_view node, uint32_t gpus, Time until, Time now);
  // The same in pieces, one per outside job: each piece's GPUs are planned free at its own end
  // (a node with a 1 h and a 10 h job frees the first job's GPUs at 1 h). When the node's
  // unowned GPUs cannot hold every piece, the pieces that end last are taken first (the plan
  // stays on the safe side) and the rest cut. More than Topology::kExternalPieces pieces: the
  // last ones merge (their GPUs, the latest end). An empty list clears the node's load.
  struct ExternalPiece {
    uint32_t gpus = 0;
    Time until = 0;
  };
  Result<uint32_t> SetExternalLoad(std::string_view node, std::vector<ExternalPiece> pieces, Time now);
  // The external load of `node` (0 GPUs: none): its GPUs, the latest end, and its pieces (by
  // end, latest first).
  struct ExternalLoad {
    uint32_t gpus = 0;
    Time until = 0;
    std::vector<ExternalPiece> pieces;
  };
  ExternalLoad external_load(std::string_view node) const;

  // One scheduling pass at `now`: deadlines and walltimes, then the queue in order. Returns
  // every decision, including a Wait for each pending job (unless config.wait_decisions is off;
  // the reasons are in the records either way). A pass changes the records only of
  // the jobs its decisions other than Wait name and the jobs linked to them (victims,
  // preempted_for), of running and checkpointing jobs, and of pending jobs with a claim or
  // victims; of every other job only `priority` and `wait` (so the glue need not compare every
  // pending job with what it saved; checked by scheduler_property_test).
  std::vector<Decision> Schedule(Time now);

  // ---- validation and restart recovery ---------------------------------------------------
  // Would Submit(spec) be accepted now, and can the job ever run here? Every check Submit makes
  // (id in 1..2^62-1 and new, priority class known, shape, elastic sizes, walltime within the
  // maximum, no negative durations, dependencies known, the pending-job limit) plus "can never
  // fit this cluster": the shape (elastic jobs: their smallest legal size) is unsatisfiable on
  // the empty cluster. Accepts what Submit accepts (node-shaped jobs may leave shape.gpus 0).
  // Changes nothing. Errors: where = "job N", the message names the field and the value.
  Status ValidateSpec(const JobSpec& spec) const;

  // Restart recovery: the daemon rebuilds the core from its store (RecoveredState) in 3 steps,
  //   1. SetNodeState(node, state, now) for every stored node that is not up;
  //   2. Restore(record, now) for every job, in any order (a victim before its preemptor, a job
  //      before its dependencies);
  //   3. FinishRestore(now), once, before any other event and before Schedule.
  // Between the first Restore and FinishRestore every other event and ValidateSpec fail
  // ("restore in progress"); Schedule must not be called.
  //
  // Restore puts back one job as the store saved it: its spec, state, GPUs, run (start, end,
  // walltime, run_walltime), checkpoint fields and protocol (after_checkpoint, shrink_to,
  // checkpoint_deadline, last_checkpoint_request), preemption links (preempted_for, victims,
  // claim), counters and idle_since are kept; priority, class_rank, preemptible, wait and
  // busbw_gbs are recomputed. Pending and held jobs rejoin the queue (pending-job counters);
  // running and checkpointing jobs get their GPUs back on the Topology as their owner (also on
  // drained nodes) and their running-GPU counters, and fairshare charges them from `now`;
  // final jobs are kept as records (dependencies refer to them). A claim is the record's own
  // field: every pass turns it (and the GPUs the victims still hold) into a reservation, so
  // nothing is held on the Topology for it. Links (victims, preempted_for, after_ok) are kept
  // as saved and resolved by FinishRestore. The shape is checked as Submit checks it; the
  // walltime maximum, the limits and "can never fit" are not (the job was accepted once).
  // Fails, changing nothing, on: an id out of range or already known; an unknown priority
  // class; a bad shape or elastic sizes; `now` going back; an unknown state; a pending or
  // final job with GPUs, a running or checkpointing job without; a GPU that is unknown, listed
  // twice, already owned or on a down node; shrink_to GPUs the job does not hold; a claim GPU
  // that is unknown; after_checkpoint set on a job that is not checkpointing; a suspended job
  // that is not running. Errors name the job, the field and the value (the GPU by index and
  // node).
  Status Restore(JobRecord record, Time now);
  // Ends a restore. Links to jobs that were never restored are dropped, as if those jobs had
  // gone away: a dependency on an unknown job is lifted (the job may then start); a victim
  // whose preemptor is unknown keeps running (its checkpoint is just a checkpoint, as after a
  // Cancel of the preemptor); an unknown victim leaves its preemptor's list; a dependency on
  // the job itself is dropped. Links between restored jobs are kept exactly as saved. Then the
  // traffic of the restored running jobs is recomputed by placing them back in the order they
  // started (start time, then id), each predicted on the fabric as loaded by those before it,
  // so the result does not depend on the order of the Restore calls; and the elastic idle
  // clock restarts at `now` (no job grows before grow_after_idle has passed since the
  // restart). Returns one note per dropped link ("job 7: dependency on unknown job 3
  // lifted"), for the daemon to log and re-save those jobs. Fails, changing nothing, when
  // `now` goes back or no restore is in progress.
  Result<std::vector<std::string>> FinishRestore(Time now);

  // ---- what if (scheduler_what_if.cc) ------------------------------------------------------
  // "A job of this shape submitted now would start at T": the pass's own answer (TryStartNow,
  // then Reserve: the same code, on the same state) for a job of `spec` placed behind every
  // pending job in the queue, so that every reservation the last pass made is kept, as a real
  // submission at the back of the queue would see them in the next pass at the same time.
  // The spec needs only its shape (and may name a priority class and a walltime; 0: the
  // configured default); id, user, account, dependencies and holds are ignored, and so are
  // the user's and account's limits. Not modelled: preemption (a job of a class that may
  // preempt could start sooner), strict order (backfill none: nothing passes a blocked job)
  // and Slurm's pass limits (backfill_max_jobs, main_queue_depth).
  //
  // Changes nothing: the Topology is changed only through WhatIfs undone before it returns,
  // as in every pass, and nothing else is written (checked by scheduler_what_if_test).
  // Cost: one reservation walk per shape (the running jobs' release times and the
  // reservations' bounds, a Placer call at each time where enough GPUs are free);
  // docs/dashboard.md has the figures on 4,096 nodes (bench/what_if_bench.cc).
  // Fails (kInvalidArgument) on a bad shape or an unknown class, naming the field, or a
  // restore in progress (kFailedPrecondition).
  struct WhatIfAnswer {
    // now (could start now), a later time, or kForever (never: see reason).
    Time start = kForever;
    // Would the backfill policy promise it (a reservation: conservative backfill's depth,
    // EASY's first blocked job, the starvation guard)? Always true when it starts now. A
    // start that is not promised is what the reservations made so far allow (the pass itself
    // predicts nothing for such a job); jobs submitted later may still take its place.
    bool promised = false;
    // Why it would not start now, as the pass would say (Resources, TopologyBlock,
    // ReservedFor, Priority past the policy's reservations), or Unsatisfiable.
    WaitKind wait = WaitKind::kNone;
    // For kForever: why never (the Placer's reason, or no GPUs up); for ReservedFor: the job.
    std::string reason;
    // The GPUs it would start on (now, or at `start`: its reservation's); empty for kForever.
    std::vector<GpuId> gpus;
  };
  Result<WhatIfAnswer> WhatIfStart(const JobSpec& spec, Time now) const;
  // The same for many shapes at once (one walk each; the release times are sorted once).
  std::vector<Result<WhatIfAnswer>> WhatIfStarts(const std::vector<JobSpec>& specs, Time now) const;

  // ---- queries ---------------------------------------------------------------------------
  const Topology& topology() const;
  const Placer& placer() const;
  const SchedulerConfig& config() const;
  // The partitions, resolved (partition.h); always at least one (the default).
  const PartitionTable& partitions() const;
  const JobRecord* job(JobId id) const;
  const std::map<JobId, JobRecord>& jobs() const;
  // An array's tasks' job ids by task index (JobSpec::array_id); null for an id that is no array.
  const std::vector<JobId>* array_tasks(JobId array) const;
  // The job id of task `task` of `array`; kNoJob if there is none.
  JobId array_task_job(JobId array, uint32_t task) const;
  const std::vector<Reservation>& reservations() const;
  // With config().backfill_interval > 0: when the next pass may be a backfill cycle (Slurm's
  // bf_interval after the last one); kForever otherwise.
  Time next_backfill() const;
  // Backfill cycles taken without a pass because they would repeat an idle one
  // (config().skip_idle_backfill).
  uint64_t idle_cycles_skipped() const;
  // Passes that read the queue from the kept FIFO order (config().kept_fifo_order).
  uint64_t kept_order_passes() const;
  // Pending jobs a pass decided about from their kept queue keys alone, without reading their
  // records (config().kept_queue_keys), summed over the passes.
  uint64_t keyed_skips() const;
  // Reserve walks that began after now, where an earlier walk of the same pass for the same
  // request ended (config().reserve_shortcuts).
  uint64_t floored_walks() const;
  // Of them: those that skipped the steps before the earlier walk's end, and those that started
  // there from the releases that walk had made.
  uint64_t floor_jumps() const;
  uint64_t floor_releases_kept() const;
  // Of the last, walks that bring domains to their time one by one (for a good block).
  uint64_t floor_tops_kept() const;
  // Reserve walks' domain fingerprints kept apart from the Topology that did not match it once
  // the domain was brought to the walk's time: zero unless there is a fault.
  uint64_t walk_print_mismatches() const;
  // Domains Reserve walks left out by their fingerprint at the walk's time alone (a remembered
  // miss), without bringing them to that time.
  uint64_t walk_known_tops() const;
  // Placement under pressure: the earliest time a job the last pass held back for a good block
  // reaches its bound and starts on whatever block is free (a pass is due then); kForever if none.
  Time next_patience_deadline() const;
  // How many jobs are pending now (held ones and those waiting on dependencies included).
  size_t pending_count() const;
  // The jobs still pending after the last pass, in its order (O(pending) after a pass in the
  // kept FIFO order, which does not build it: scheduler_pass.cc).
  const std::vector<JobId>& queue() const;
  // The first job of queue() still pending for which `want` is true, nullptr if none; reads no
  // further than that job.
  const JobRecord* FindQueued(const std::function<bool(const JobRecord&)>& want) const;
  Time now() const;
  // Empty when every internal invariant holds (GPU ownership vs job records, counters,
  // reservations disjoint in time-overlap, links to known jobs). For tests; O(jobs + GPUs).
  std::string CheckInvariants() const;

 private:
  explicit Scheduler(std::unique_ptr<SchedulerState> state);

  std::unique_ptr<SchedulerState> s_;
};

}  // namespace phalanx
