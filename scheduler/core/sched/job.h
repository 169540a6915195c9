// Jobs as the scheduling core sees them: what was asked (JobSpec) and where the job stands.
// Thread-safety: plain values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/placement/placer.h"
#include "util/dependency.h"

namespace phalanx {

// Legal sizes of an elastic (min:max) job.
enum class ElasticStep : uint8_t {
  kAny,         // any size in [min, max]
  kMultiple,    // multiples of `step` (e.g. 8 = whole DGX nodes)
  kPowerOfTwo,  // 1, 2, 4, 8, ...
};

struct JobSpec {
  JobId id = kNoJob;
  std::string name;
  std::string user;
  std::string account;
  std::string priority_class;           // empty: the configured default
  std::vector<std::string> partitions;  // in order of preference; empty: the default partition
  // scontrol top (Scheduler::Top): among its user's pending jobs, a topped job goes first, the
  // one topped last before the others; 0: not topped.
  uint64_t top = 0;
  PlacementRequest shape;  // gpus (the maximum for elastic jobs), nodes x gpn, level...
  uint32_t min_gpus = 0;   // elastic when 0 < min_gpus < shape.gpus
  ElasticStep step_kind = ElasticStep::kAny;
  uint32_t step = 0;                 // for kMultiple
  Duration walltime = 0;             // 0: the configured default
  std::optional<bool> preemptible;   // unset: the class default
  Duration checkpoint_interval = 0;  // ask for a checkpoint this often (0: the configured default)
  Duration checkpoint_grace = 0;     // deadline after the checkpoint signal (0: the configured
                                     // checkpoint_grace); gsub --checkpoint-signal SIG@SECS
  Duration restart_cost = 120;       // seconds of GPU time lost by any restart
  bool held = false;
  std::vector<JobId> after_ok;  // start only after these completed successfully
  // Slurm's --dependency (util/dependency.h): after, afterany, afterok, afternotok, singleton,
  // joined by ',' (all) or '?' (any); after_ok's ids count as afterok items of it. A target is a
  // job, an array (every task) or one task of an array (DependItem::task).
  Dependencies depends;
  // An array task: the array's id (an id of its own, never also a job's: the tasks take the
  // ids after it), the task's index, and the array's %N (0: no limit on tasks running at once).
  JobId array_id = kNoJob;
  uint32_t array_task = 0;
  uint32_t array_max_running = 0;
  Time submit = 0;
  // Slurm's --begin, -w, -x and -C (Submit checks the names and the constraint against the
  // topology): the job starts no earlier than `begin`, and only on nodes that are in `nodelist`
  // (when not empty), not in `exclude`, and whose features (util/constraint.h ModelFeatures of
  // the node's model) satisfy `constraint`.
  Time begin = 0;
  std::vector<std::string> nodelist;
  std::vector<std::string> exclude;
  std::string constraint;
  bool no_requeue = false;  // --no-requeue: a node failure ends the job (Killed) instead of requeueing it
  // scontrol suspend (Scheduler::Suspend): a running job stopped (SIGSTOP) since suspended_at;
  // it keeps its GPUs, and its run's walltime is extended by the time it spends suspended (at
  // Resume). Run state kept in the spec, as `held` is, so the store keeps it with the spec.
  bool suspended = false;
  Time suspended_at = 0;

  bool restricts_nodes() const { return !nodelist.empty() || !exclude.empty() || !constraint.empty(); }

  bool elastic() const { return min_gpus > 0 && min_gpus < shape.gpus && shape.nodes == 0; }
};

enum class JobState : uint8_t {
  kPending,  // waiting (again, when preempted: resumable from its checkpoint)
  kRunning,
  kCheckpointing,  // told to checkpoint before a preemption or a shrink; still holds its GPUs
  kCompleted,
  kFailed,
  kCancelled,
  kKilled,  // walltime exceeded
};
std::string_view JobStateName(JobState state);
inline bool IsFinal(JobState s) { return s >= JobState::kCompleted; }
// Running or checkpointing: the job holds its GPUs.
inline bool HoldsGpus(JobState s) { return s == JobState::kRunning || s == JobState::kCheckpointing; }

// Why a pending job is not running, as Slurm users know it.
enum class WaitKind : uint8_t {
  kNone,
  kPriority,       // higher-priority jobs come first
  kResources,      // not enough free GPUs now
  kTopologyBlock,  // enough GPUs, but no block of the required shape
  kReservedFor,    // the GPUs it could use are reserved for another job
  kUserLimit,
  kAccountLimit,
  kHeld,
  kDependency,
  kUnsatisfiable,    // can never run on this cluster
  kPreempting,       // waiting for the jobs it preempts to checkpoint
  kDependencyNever,  // a dependency can never be met (Slurm's DependencyNeverSatisfied); stays pending
  kArrayTaskLimit,   // its array already runs %N tasks (Slurm's JobArrayTaskLimit)
  kBeginTime,        // its --begin time has not come
  kPartitionDown,    // every partition it may run in is DOWN or INACTIVE
};
inline constexpr WaitKind kLastWaitKind = WaitKind::kPartitionDown;  // for loops over the kinds
std::string_view WaitKindName(WaitKind kind);

struct WaitReason {
  WaitKind kind = WaitKind::kNone;
  std::string detail;  // e.g. the level for TopologyBlock, the job for ReservedFor
  Time predicted_start = kForever;

  std::string ToString() const;
};

// A block a walk planned for a job (its start and GPUs) and when (-1: none): kept for a few
// minutes while it stays free for the job, instead of a walk in every pass (kept_plan.h).
struct PlannedBlock {
  Time planned_at = -1;
  Time start = 0;
  std::vector<GpuId> gpus;
};

// A job's record inside the core.
struct JobRecord {
  JobSpec spec;
  // spec.partitions resolved (core/sched/partition.h), in order; empty when a restored job names
  // a partition that is no longer configured (it then waits Unsatisfiable).
  std::vector<uint32_t> partition_ids;
  JobState state = JobState::kPending;
  std::vector<GpuId> gpus;  // held while running / checkpointing
  Time start = 0;           // of the current run
  Time end = 0;             // when final
  Duration walltime = 0;    // effective (after defaults and the maximum)
  double priority = 0;
  int class_rank = 0;
  bool preemptible = false;
  // Checkpoints: the last one the job reported, and the protocol in progress.
  uint64_t checkpoint_epoch = 0;
  std::string checkpoint_path;
  Time last_checkpoint = 0;  // time of the last reported checkpoint (or the start)
  Duration progress = 0;     // work saved by checkpoints (seconds of run time)
  Time last_checkpoint_request = 0;
  Time checkpoint_deadline = 0;  // while checkpointing
  enum class After : uint8_t { kNothing, kPreempt, kShrink } after_checkpoint = After::kNothing;
  std::vector<GpuId> shrink_to;  // the GPUs kept when the checkpoint is for a shrink
  JobId preempted_for = kNoJob;  // victims: who they make room for
  std::vector<JobId> victims;    // preemptors: whom they wait for
  std::vector<GpuId> claim;      // preemptors: GPUs their victims freed, kept for them
  uint32_t preemptions = 0;
  uint32_t resizes = 0;
  double gpu_seconds_lost = 0;  // work lost by preemptions/failures (GPU-seconds)
  // Attained service (Tiresias' least-attained-service order, policy/queue_attained.cc): the
  // GPU-seconds the job has held GPUs in all its runs up to `service_until`; while it holds GPUs
  // AttainedService() adds those since. Kept across preemptions and requeues (a resumed job
  // goes on from its count), accrued whenever its GPUs change (SchedulerState::AccrueService).
  double service_gpu_s = 0;
  Time service_until = 0;
  WaitReason wait;
  Time idle_since = 0;  // elastic growth bookkeeping

  Time deferred_since = -1;  // placement under pressure: waiting for a good block since (-1: not)
  // What starting it on the slower block free at `patience_counted_at` costs, before the queue's
  // share (patience.cc; -1: not counted).
  double patience_slower = -1;
  Time patience_counted_at = -1;
  // Placement under pressure: the good block the job's last walk planned, kept while it stays
  // free for SchedulerConfig::patience_replan (patience_far_keep for one planned far out;
  // patience.cc).
  PlannedBlock patience_plan;
  // The policy's reservation (EASY's, the starvation guard's) the job's last walk planned, kept
  // while it stays free for SchedulerConfig::reserve_replan when it is not the first of a pass.
  PlannedBlock reserve_plan;
  Duration run_walltime = 0;  // limit of the current run: walltime - progress at start
  // Reserve's list of release times (reserve.cc, Ends): the build of it that last listed this
  // job (0: none), its place and release time there, so the next build starts from that order.
  uint64_t ends_build = 0;
  uint32_t ends_rank = 0;
  Time ends_release = 0;
  double busbw_gbs = 0;  // predicted ring bandwidth of the current placement
  // By node id: 1 where spec's nodelist/exclude/constraint forbid the node; empty when they
  // allow every node. Derived from the spec by Submit and Restore (not stored).
  std::vector<uint8_t> forbidden_nodes;

  Time expected_end() const { return start + run_walltime; }
  // The same for planning at `now`: a suspended run's end moves on with the time it has been
  // suspended (as if resumed now).
  Time expected_end(Time now) const {
    return expected_end() + (spec.suspended && now > spec.suspended_at ? now - spec.suspended_at : 0);
  }
};
inline bool HoldsGpus(const JobRecord& r) { return HoldsGpus(r.state); }
inline bool HoldsGpus(const JobRecord* r) { return r != nullptr && HoldsGpus(r->state); }

// Since when a pending job has waited: its submission, or the end of its last run if it was
// requeued (preempted, its node failed; StopJob counts its service to then). The starvation
// guard counts a wait from here, as Slurm's age restarts when a job is requeued: a job that ran
// for days and was preempted has not waited days.
inline Time WaitingSince(const JobRecord& job) { return std::max(job.spec.submit, job.service_until); }

// GPU-seconds the job has attained by `now` (its runs so far and the current one).
inline double AttainedService(const JobRecord& job, Time now) {
  const Time since = std::min(job.service_until, now);
  return job.service_gpu_s + static_cast<double>(job.gpus.size()) * static_cast<double>(now - since);
}

// The limit of a run that starts now: the walltime less the work its checkpoints saved, at
// least 1 s.
inline Duration RemainingWalltime(const JobRecord& job) { return std::max<Duration>(1, job.walltime - job.progress); }

}  // namespace phalanx
