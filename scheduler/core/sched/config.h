// SchedulerConfig: every knob of the scheduling core, with defaults, and the named policy
// presets used by the simulator's baselines ("fifo-firstfit", "slurm-like", "phalanx").
// Thread-safety: plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/common/time.h"
#include "core/placement/bandwidth_model.h"
#include "core/queue/fairshare.h"
#include "core/queue/limits.h"
#include "core/queue/priority.h"
#include "core/sched/partition.h"

namespace phalanx {

enum class BackfillMode : uint8_t {
  kNone,          // strict order: nothing passes a blocked job
  kEasy,          // reserve for the first blocked job only
  kConservative,  // reserve for the first `reserve_depth` blocked jobs
};

// How backfill plans a job's run (RuntimeEstimator); the walltime is always the kill limit.
enum class RuntimeMode : uint8_t {
  kWalltime,   // the walltime asked
  kPredicted,  // from the history of the same user, name and size (runtime_history.h)
};

enum class QueueOrder : uint8_t {
  kPriority,  // multifactor priority (class, age, fairshare, size)
  kFifo,      // submit time only
  // Least attained service first (Tiresias' discretised 2D-LAS): class, then the service queue
  // (SchedulerConfig::service_queues), then multifactor age, fairshare and size within a queue;
  // with preemption on, a waiting job may preempt jobs of its class in a lower service queue
  // that hold no more GPUs than it needs.
  kAttained,
};

// How placement treats the topology.
enum class PlacementMode : uint8_t {
  kTopology,     // the Placer: bandwidth-optimal block, best fit, rails
  kNodeBestFit,  // Slurm cons_tres + topology/tree: fewest leaves, whole nodes first, no bandwidth model
  kFirstFit,     // the first free GPUs in id order, no topology
};

struct SchedulerConfig {
  std::string name = "phalanx";
  QueueOrder order = QueueOrder::kPriority;
  PlacementMode placement = PlacementMode::kTopology;
  bool best_fit = true;  // placer tie-breaking (false: worst fit, for measurements)
  double node_fit_tolerance =
      0.95;  // one-node jobs: fullest node first if within this of the best busbw (1: bandwidth first)
  BackfillMode backfill = BackfillMode::kConservative;
  RuntimeMode runtime = RuntimeMode::kWalltime;
  uint32_t reserve_depth = 100;  // conservative: reserve for this many jobs; 0 = all
  // Starvation guard, mostly for EASY: jobs of at least this many GPUs, or that waited this long,
  // also get a reservation (up to reserve_depth reservations in all). 0: off.
  uint32_t reserve_large_gpus = 0;
  Duration reserve_after_wait = 0;
  bool whole_node_reservations = false;  // slurm-like: a reservation is whole nodes, not a block
  // EASY: a blocked job with more GPUs than every job given a reservation before it in the pass
  // gets one too (beyond the one EASY makes), so that jobs behind it that fit the gaps cannot
  // keep a larger job waiting; at most one per larger size. Off: EASY as Slurm has it (every
  // preset; measured in docs/results/notes.md, policy round 18).
  bool reserve_larger = false;
  // Slurm's limits on how much a pass looks at (slurm.conf SchedulerParameters; 0: no limit).
  // With backfill_interval > 0 a pass is a backfill cycle only when backfill_interval has passed
  // since the last one (bf_interval); the passes between are the main scheduler's: strict order
  // (nothing passes a blocked job), at most main_queue_depth jobs tested (default_queue_depth);
  // under BackfillMode::kNone every pass is the main scheduler's. A backfill cycle tests at
  // most backfill_max_jobs pending jobs (bf_max_job_test) and makes no reservation that starts
  // later than backfill_window after now (bf_window).
  //
  // A pass stops reading the queue once it has looked at its limit of jobs, counted as Slurm
  // counts its depth: every job that could run by itself (not held, its dependencies met, its
  // begin time reached, within its limits), tested or waiting behind a blocked one. The jobs
  // beyond keep the reason a pass last gave them, as in Slurm (a job no pass has reached has
  // none).
  Duration backfill_interval = 0;
  uint32_t backfill_max_jobs = 0;
  uint32_t main_queue_depth = 0;
  Duration backfill_window = 0;
  Duration default_walltime = 3600;
  Duration max_walltime = 7 * 24 * 3600;
  // Named node sets with their own limits (partition.h); empty: one "default" of every node.
  // default_walltime and max_walltime above are the defaults of a partition that sets none.
  std::vector<PartitionConfig> partitions;
  // Slurm's MaxArraySize: an array task's index must be below it (1001: indices 0..1000).
  uint32_t max_array_size = 1001;

  // Class tiers are strict by default: one class step (30000 / 3 with four classes) outweighs
  // age + fairshare + size together (7000), so fairshare orders jobs within a class.
  PriorityWeights weights = {.priority_class = 30000, .age = 1000, .fairshare = 5000, .job_size = 1000};
  PriorityClassConfig classes = DefaultPriorityClasses();
  FairshareConfig fairshare;
  Duration charge_period = 300;  // running jobs' fairshare usage is charged this often (ends: exactly)
  LimitsConfig limits;

  bool preemption = true;
  // order=attained (policy/queue_attained.cc): the thresholds of the service queues in
  // GPU-seconds attained, ascending: queue 0 holds jobs below the first, queue k those with at
  // least threshold k-1 and below threshold k. Decades of GPU-hours (1, 10, 100), stated, not
  // fitted to a trace. A job is not preempted for service before it has run service_min_run in
  // its current run (the class table's own minimum still bounds class preemption).
  std::vector<double> service_queues = {3600.0, 36000.0, 360000.0};
  Duration service_min_run = 3600;
  Duration checkpoint_grace = 300;   // deadline after the checkpoint signal
  Duration periodic_checkpoint = 0;  // default checkpoint interval for jobs (0: none)
  bool elastic = true;               // start elastic jobs at the largest legal size, shrink, grow
  // Placement under pressure (internal/patience.h): the share of a multi-GPU job's step spent
  // in all-reduce at its best placement, for the predicted slowdown of a worse block. A job
  // that could start now only on a block slower than node_fit_tolerance x the best waits for a
  // good block when the planner says one frees up before the slowdown would cost. 0: off.
  double placement_comm_share = 0;
  // How many of the jobs waiting for a good block in a pass have that block planned and reserved,
  // in queue order (0: all). The others wait for one without a reservation, to the same bound:
  // as EASY backfill reserves for the first blocked job only, so that a pass under a long queue
  // does not plan a block for each of thousands of deferred jobs (each a walk over the release
  // times: the whole cost of long-queue replays, docs/performance.md, twelfth round).
  uint32_t patience_depth = 0;
  // How long a deferred job's planned good block is kept, without a walk, while it stays free
  // for the job (nothing started on it that runs past its start, nothing reserved on it since).
  // 0: planned anew in every pass.
  Duration patience_replan = 0;
  // ... except a block planned reserve_horizon or more out (both > 0), kept for this many seconds
  // per hour it was planned out, when that is longer: its start rests on the walltime requests
  // of the jobs that hold it, days ahead. 0: every block for patience_replan.
  Duration patience_far_keep = 0;
  // How long a reservation the policy made after the first of a pass (the starvation guard's,
  // conservative backfill's beyond its first; EASY's one is planned in every pass) is kept,
  // without a walk, while its block stays free for the job (nothing started on it that runs past
  // its start, nothing reserved on it since, its nodes up), as a deferred job's good block is for
  // patience_replan. Kept, it may start later than a walk would find now: the job still starts
  // at once whenever it fits now. 0: planned anew in every pass.
  Duration reserve_replan = 0;
  // A kept reservation (reserve_replan) that is no longer free for its job -- a reservation made
  // before it in the pass took part of its block, a job on it now ends later, a node went down --
  // is planned anew at once only when it started less than reserve_horizon out. One further out
  // waits without a reservation until its plan is reserve_replan old, then is planned anew. Under
  // a long queue the guard's reservations lie days out, and a walk that moves one of them earlier
  // takes part of the next one's block, whose walk then takes the next's: most of a pass's walks,
  // each over days of release times, for starts that rest on walltime requests. 0: always at once.
  Duration reserve_horizon = 0;
  Duration grow_after_idle = 300;  // GPUs idle this long may grow elastic jobs
  // Elastic jobs of the same or a lower class give GPUs up (a shrink, through a checkpoint) to a
  // job that cannot start now, as a higher class's preemption would, once they have run their
  // class's minimum runtime since their last start or resize; they grow back when GPUs idle.
  bool shrink_for_waiting = false;
  // A shrink keeps the node of the job's first GPU (its rank 0) whenever a block elsewhere does
  // as well, even at a higher preemption cost: phalanxd's Slurm mode sets it, as Slurm 22.05 can
  // shrink a running job in place only when it keeps its batch host (the first node of its
  // allocation); else the job is requeued.
  bool shrink_keeps_first_node = false;

  // Not a policy: whether Schedule returns a Wait decision for every pending job (the simulator
  // and scenario scripts log them). Off, the reasons are only in the records (JobRecord::wait):
  // phalanxd reads them there, and a pass over tens of thousands of waiting jobs then builds no
  // list of them.
  bool wait_decisions = true;
  // Not a policy: whether every pass writes each pending job's priority to its record
  // (JobRecord::priority, which phalanxd shows). Off, a pass that orders the queue from its kept
  // keys (kept_queue_keys) writes it only to the records it reads: the simulator shows no
  // priority, and a write to each of thousands of records was a fifth of such a pass.
  bool record_priorities = true;
  // Not a policy: whether the domain plan Reserve asks (GPU counts over time per domain) is kept
  // from pass to pass and brought up to date by the allocations that changed (on), or built anew
  // in every pass that asks it (off). The answers are the same; off is for tests.
  bool keep_domain_plan = true;
  // Not a policy: whether a pass with Slurm's depth (main_queue_depth, backfill_max_jobs) in
  // FIFO order reads the queue from the order kept across passes (SchedulerState::fifo) when
  // it can (on), or orders every pending job anew (off). The same decisions; off is for tests.
  bool kept_fifo_order = true;
  // Not a policy: whether the queue's keys are kept across passes (SchedulerState::kept_keys),
  // with what a pass reads of a job that cannot start, where the policy allows (a keyed queue
  // order, no preemption, walltime runtimes): a pass then orders a mostly ordered queue and reads
  // no record of a job that was left waiting on Priority and still cannot start (on), or reads
  // every pending job's record (off). The same decisions; off is for tests.
  bool kept_queue_keys = true;
  // Not a policy: whether a pass keeps the Placer's start-now answers (those that depend on
  // nothing of the job's own) for the next job asking the same of the same Topology state
  // (PassState::NowAnswer; on, under placement under pressure only), or searches again for each
  // (off). The answers are the same; off is for tests.
  bool keep_start_answers = true;
  // Not a policy: whether a backfill cycle (backfill_interval) that would repeat an idle one --
  // the last cycle decided nothing, no event since, a policy nothing of which changes with time
  // alone (FIFO order, no wait-based guard, no placement patience, preemption or elastic
  // resizing, walltime runtimes, no begin time ahead, nothing suspended) -- is skipped (on) or
  // run in full (off). The decisions are the same; off is for tests.
  bool skip_idle_backfill = true;
  // Not a policy: whether Reserve's walks (placement topology) skip the searches the Placer's
  // completeness makes needless -- with the blocks promised to others held before a search
  // without them finds a block, and at times before where an earlier walk of the pass for the
  // same request ended (PassState::WalkFloor) -- (on), or search at every step (off). The answers
  // are the same; off is for tests.
  bool reserve_shortcuts = true;

  ModelParams model;
};

// "phalanx" (EASY backfill with block reservations + a two-day starvation guard, bandwidth-scored
// placement with node best fit, preemption, elastic; the struct's defaults are conservative
// backfill), "slurm-like" (EASY backfill, whole-node reservations, node-level
// best fit, no preemption/elastic), "fifo-firstfit" (FIFO, first free GPUs, no backfill).
Result<SchedulerConfig> PolicyPreset(std::string_view name);
std::vector<std::string_view> PolicyPresetNames();

// Sets one knob by name (backfill=easy|conservative|none, reserve_depth=N, placement=topology|
// node-best-fit|first-fit, order=priority|fifo, preemption|elastic|best_fit|
// whole_node_reservations|shrink_for_waiting|reserve_larger=on|off, node_fit_tolerance=X, checkpoint_grace,
// periodic_checkpoint, grow_after_idle, default_walltime, max_walltime, service_min_run = seconds;
// service_queues=T1/T2/... GPU-seconds, ascending; the multifactor priority's weight_age,
// weight_fairshare, weight_job_size = X, max_age, fairshare_half_life = seconds). Fails naming the
// key and value.
Status SetConfigOption(SchedulerConfig& config, std::string_view key, std::string_view value);
// "PRESET" or "PRESET:KEY=VALUE,KEY=VALUE" (e.g. "phalanx:backfill=easy"); the name is the spec.
Result<SchedulerConfig> PolicyFromSpec(std::string_view spec);

}  // namespace phalanx
