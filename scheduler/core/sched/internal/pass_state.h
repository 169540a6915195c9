// PassState: what one scheduling pass knows while it runs. Schedule() makes one at the start of
// the pass and drops it at the end, so nothing of a pass leaks into the next by accident; what
// must carry over (the reservations, the queue order) is in SchedulerState.
//
// A pass changes the Topology only through the WhatIfs it holds here and in the parts it calls,
// all undone before it returns, and through the decisions it makes.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/placement/placer.h"
#include "core/planner/domain_planner.h"
#include "core/sched/decision.h"
#include "core/sched/internal/bit_counts.h"
#include "core/sched/internal/failure_frontier.h"
#include "core/sched/internal/live_tops.h"
#include "core/sched/internal/start_blocks.h"
#include "core/sched/internal/walk_counts.h"
#include "core/sched/internal/walk_prints.h"
#include "core/sched/internal/what_if.h"
#include "core/sched/job.h"
#include "core/sched/policy/queue_policy.h"
#include "core/topology/level.h"
#include "core/topology/topology.h"

namespace phalanx {

// The parts of a shape that decide where it fits, apart from its size.
struct ShapeKey {
  Level level;
  FitMode fit;
  bool exclusive, rail_aligned;
  uint32_t gpus_per_node;
  uint64_t partitions;  // the job's partitions (PartitionMask): where it may go
  bool operator==(const ShapeKey&) const = default;

  static ShapeKey Of(const PlacementRequest& r, uint64_t partitions) {
    return {r.level, r.fit, r.exclusive, r.rail_aligned, r.gpus_per_node, partitions};
  }
};

// A pending job's place in the queue: priority (higher first), submit time, id.
struct QueueKey {
  double priority = 0;
  Time submit = 0;
  JobId id = kNoJob;
  JobRecord* job = nullptr;
  bool topped = false;  // spec.top > 0 (scontrol top), read once with the rest of the key
};

// Memory a pass reuses from the last one (a fresh megabyte per 10,000 pending jobs each pass
// was page faults); the contents are the pass's own. Kept in SchedulerState.
struct PassBuffers {
  std::vector<QueueKey> keys;
  std::vector<JobRecord*> jobs;         // the pending jobs in queue order
  std::vector<Decision> waits;          // one Wait per pending job, emitted after the other decisions
  std::vector<uint64_t> gpu_bits;       // by 64-GPU word, all clear between uses (kept_plan.cc, PlannedBlockFree)
  std::vector<uint32_t> out_of_place;   // the kept keys a pass's priorities put out of place
  std::vector<JobId> gone;              // the kept keys a pass drops (SyncKeys)
  std::vector<uint32_t> failures_of;    // by kept key shape: its failed_shapes entry (ScheduleFromKeys)
  std::vector<uint32_t> domain_counts;  // by domain, all 0 between uses (preemption.cc, PreemptFor)
};

// A pending job's queue key kept across passes (SchedulerState::kept_keys) with what a pass
// reads of a job that cannot start, so that such a job's record is not read at all; made from
// the record when the job enters the queue and at every change the Scheduler makes to it
// (SchedulerState::KeyChanged). Apart from QueueKey, and packed: a pass walks every key three
// times and is bound by the bytes it reads (64 bytes a key here; 104 cost a fifth more time).
struct KeptKey {
  double priority = 0;  // as QueueKey's (Before)
  Time submit = 0;
  JobId id = kNoJob;
  JobRecord* job = nullptr;
  double fixed_a = 0, fixed_b = 0;  // the policy's PriorityKey, less its submit time
  Duration w = 0;                   // policies.runtime->Run
  uint32_t owner = 0;               // PriorityKey::owner
  uint16_t n = 0;                   // MinLegalSize (when shape != kNoShape)
  // SchedulerState::key_shapes[shape]; kNoShape: too many shapes, or too large a job for `n`:
  // never skipped.
  uint8_t shape = 0;
  // Not held; no dependencies, array limit, begin time or -w/-x/-C; in a configured partition;
  // no claim.
  bool simple : 1 = false;
  // The last pass left the job waiting on Priority with no detail and no predicted start (the
  // other jobs hold the reservations), at the end of every check before; nothing changed it
  // since (ScheduleFromKeys).
  bool memo : 1 = false;

  static constexpr uint8_t kNoShape = 0xff;
};
static_assert(sizeof(KeptKey) == 64, "a kept key is one cache line");

// A set of job ids that answers most "is it in there?" with two instructions: a job whose bit
// (its id modulo 4096) is clear was never added. Ids are added, never removed: a set bit means
// "maybe", to be asked of the set it filters. A pass asks it of every pending job, for the few
// (a reservation depth's worth) that hold a promise or a reservation.
class IdFilter {
 public:
  void Add(JobId id) { bits_[(id >> 6) & 63] |= uint64_t{1} << (id & 63); }
  bool MayContain(JobId id) const { return (bits_[(id >> 6) & 63] >> (id & 63)) & 1; }

 private:
  std::array<uint64_t, 64> bits_{};
};

struct PassState {
  PassState(Topology& topology, PassBuffers& buffers, Time now);

  const Time now;
  PassBuffers& buffers;  // cleared here

  // ---- the queue (scheduler_pass.cc) ----
  // A job could not start in this pass (strict order stops here), and the first such job.
  bool blocked = false;
  JobId first_blocked = kNoJob;
  std::string behind;              // "behind job <first_blocked>"
  uint32_t reserved_max_gpus = 0;  // the most GPUs of a job given a reservation in this pass (reserve_larger)
  // Slurm's limits (SchedulerConfig::backfill_interval...): whether this pass is a backfill
  // cycle, and how many pending jobs it may look at (0: all).
  bool backfill_cycle = true;
  bool begin_ahead = false;  // a job waits for its begin time (time alone will change this pass)
  // The earliest time the backfill window reaches the start of a job that did not reserve
  // because its start was beyond it (from then on it reserves: time alone changes the pass).
  Time window_reaches = kForever;
  uint32_t test_limit = 0;
  // The jobs this pass has looked at as Slurm counts its depth (config.h): tested, or waiting
  // behind a blocked one. At test_limit the pass reads no further (DepthReached).
  uint32_t looked_at = 0;
  bool DepthReached() const { return test_limit > 0 && looked_at >= test_limit; }
  // Job `id` has been scheduled in this pass: if it was promised a block, Reserve no longer
  // keeps that block for it (`planned`).
  void MarkPlanned(JobId id) {
    Promise* p = FindPromise(id);
    if (!p || p->planned) return;
    p->planned = true;
    if (!reserve.promised_counted) return;
    for (GpuId g : p->gpus) --reserve.promised_count[g.value];
  }
  // The partitions as the pass starts (their states and limits do not change during a pass):
  // whether every one is open and whether any has a MaxGPUsPerUser, so that the checks asked
  // for every pending job need not read the job's partitions when the answer is the same for all.
  bool all_partitions_open = false;
  bool user_gpu_limits = true;
  // Shapes that failed to start: a job of the same shape that is no bigger and no longer fails
  // too (resources only shrink during a pass). One entry per shape (a pass meets a few).
  struct FailedShape {
    ShapeKey key;
    FailureFrontier failures;
  };
  std::vector<FailedShape> failed_shapes;
  // The Placer's start-now answers (start_now.cc, TryStartNow; config.keep_start_answers) for the
  // searches that depend on nothing of the job's own, by request and partitions, for the state
  // they were searched in: Topology::version() and the fingerprint of the whole Topology (its
  // free GPUs, what-if holds included, and its loads: all a search reads; Topology::fingerprint).
  // Under placement under pressure and a long queue, most jobs of a pass ask the same of the same
  // state: a job that waits for a better block, or reserves GPUs that are busy now, leaves the
  // state as it was. (Kept under that policy only: start_now.cc, PlaceNowKept.)
  struct NowAnswer {
    PlacementRequest request;
    uint64_t partitions;
    uint64_t version;
    Topology::Fingerprint state;
    std::optional<Placement> placement;  // none: nothing fits now
  };
  std::vector<NowAnswer> now_answers;  // the latest last, at most kKeptNowAnswers
  static constexpr size_t kKeptNowAnswers = 64;
  // The empty-cluster bandwidth of the last slower block a wait for a better one asked about
  // (patience.cc, SchedulerState::ShapeBusbw): the jobs that wait on one kept answer ask it of
  // the same GPUs.
  std::vector<GpuId> shape_gpus;
  double shape_busbw = 0;
  // Whether a request fits the Topology as it is, reservations aside (scheduler_pass.cc,
  // FitsIgnoringReservations): the answers for one Topology::version(), by request and partitions.
  struct FitsAnswer {
    PlacementRequest request;
    uint64_t partitions;
    bool fits;
  };
  uint64_t fits_version = 0;
  std::vector<FitsAnswer> fits;

  // ---- backfill (start_now.cc, reserve.cc) ----
  // The blocks reserved in the last pass, by job (sorted by job, one each: the last reservation
  // a job had): kept where still free, so promises hold from one pass to the next; `planned`
  // once this pass has scheduled the job.
  struct Promise {
    JobId job = kNoJob;
    std::vector<GpuId> gpus;
    bool planned = false;
  };
  std::vector<Promise> promised;
  IdFilter promised_filter;  // every job in `promised`
  // Job `id`'s promise, if it has one.
  Promise* FindPromise(JobId id) {
    if (!promised_filter.MayContain(id)) return nullptr;
    const auto it =
        std::lower_bound(promised.begin(), promised.end(), id, [](const Promise& p, JobId j) { return p.job < j; });
    return it != promised.end() && it->job == id ? &*it : nullptr;
  }
  // This pass's reservations (SchedulerState::reservations) counted as they are made and
  // removed, so that no pending job scans them: how many each job holds, and how many the
  // backfill policy made (neither a preemption claim nor a patience hold; never removed in a pass).
  std::unordered_map<JobId, uint32_t> reservations_of;
  IdFilter reserved_filter;  // every job ever in `reservations_of` in this pass (AddReservation, ReserveClaim)
  size_t policy_reservations = 0;
  // Good blocks planned for jobs waiting under placement pressure in this pass (patience.h:
  // at most SchedulerConfig::patience_depth).
  uint32_t patience_walks = 0;
  StartBlocks start_blocks;
  // Release times of the active jobs, sorted (SchedulerState::ReleaseTime); built on first use,
  // rebuilt after `ends_dirty`.
  std::vector<std::pair<Time, JobId>> ends;
  bool ends_dirty = true;
  // GPU counts over time per domain (running jobs until their release, unavailable nodes,
  // reservations); made on first use (reserve.cc, Plan), null after `plan_built` if
  // inconsistent. It is SchedulerState::kept_plan's planner brought up to date, or `own_plan`
  // built anew (SchedulerConfig::keep_domain_plan off).
  DomainPlanner* plan = nullptr;
  std::optional<DomainPlanner> own_plan;
  bool plan_built = false;
  // Reservations made after the plan was built, not added to it yet: added, in the order made,
  // when the plan is next asked (most passes ask it no more after their last large job).
  struct PlanPending {
    std::vector<GpuId> gpus;
    Time start, end;
  };
  std::vector<PlanPending> plan_pending;
  // GPUs on nodes that are up (node states do not change during a pass); computed on first use.
  std::optional<uint32_t> up_gpus;
  // The releases a walk had made when it ended or went live, kept with the floor it leaves
  // (WalkFloor, below): the GPUs free at t, the first `next` entries of `ends` released, and the
  // jobs with GPUs among them, and (a walk that keeps fingerprints) their load changes. A later
  // walk that starts at the floor (Reserve) starts from them. Valid while `release_gen` is the
  // pass's: StartJob and a rebuild of `ends` change it.
  struct ReleaseSnapshot {
    uint64_t gen = 0;  // 0: none
    size_t next = 0;
    std::vector<uint64_t> free_bits;
    std::vector<JobId> released;
    bool prints = false;  // `loads` kept
    WalkPrints::Loads loads;
  };
  // Where Reserve's walks ended, by request and partitions (jobs with no node filter, no
  // per-user limit): no block of the request existed at any earlier time for a job of walltime
  // `w`, the blocks promised to others aside (a walk takes one of them when no other exists).
  // A pass only takes capacity away (jobs start, reservations are made), so a later walk for
  // the same request, no shorter, finds no block before it either and searches from there.
  // Cleared when capacity may come back: a reservation removed (a preemptor starts on its
  // claim) or the release times rebuilt (victims checkpoint). `t` is kForever when the walk
  // found nothing.
  struct WalkFloor {
    PlacementRequest request;
    uint64_t partitions;
    Duration w;
    Time t;
    ReleaseSnapshot releases;
  };
  std::vector<WalkFloor> walk_floors;
  uint64_t release_gen = 1;  // changed by every change of `ends` or of the GPUs free now
  // Reserve's working memory, reused by every call of the pass (one allocation per pass, not
  // per call: the allocator was a tenth of a pass under long queues). Contents are per call;
  // `wanted` is all zero between calls.
  struct ReleaseWords;
  struct ReserveScratch {
    std::vector<uint32_t> wanted;
    // Before Reserve goes live, by 64-GPU word: wanted by some reservation, free at t; and how
    // many reservations (and the job's own filter) want each GPU.
    std::vector<uint64_t> held_bits, free_bits, hold_bits;
    BitCounts want_counts;
    std::vector<uint8_t> in_window;
    // The reservations' indexes by start and by end, and the (start, end) of each indexed
    // reservation when they were sorted: the orders hold as long as those are unchanged, and
    // reservations made since are inserted into them.
    std::vector<uint32_t> by_start, by_end;
    std::vector<std::pair<Time, Time>> sorted_bounds;
    std::vector<Time> bounds;
    std::vector<JobId> released;
    std::vector<GpuId> gpus;
    // By reservation index: its GPUs as (64-GPU word, bits) in the order Reserve's word walk
    // visits them, built on first use. Cleared when a reservation is removed (StartJob) or the
    // orders above are rebuilt; reservations are only appended otherwise, and never change.
    // `most`: how often the reservation lists one GPU at most (1 unless a GPU repeats).
    struct Words {
      std::vector<std::pair<uint32_t, uint64_t>> list;
      uint32_t most = 1;
    };
    std::vector<Words> res_words;
    // By 64-GPU word: the reservations whose lists name it, as (index, bits), in index order
    // (kept with `res_words`: ReservationWords, ClearReservationWords).
    std::vector<std::vector<std::pair<uint32_t, uint64_t>>> res_by_word;
    std::vector<uint32_t> seen;
    ReleaseSnapshot walk_releases;  // this walk's, for its floor
    std::vector<GpuId> others;      // GPUs promised to other jobs not re-planned yet
    // The GPUs promised to the jobs not planned yet, each with the number of those blocks that
    // list it (by GPU; zero elsewhere): made on the first walk that asks, then kept by
    // MarkPlanned. `promised_gpus` lists every GPU counted since (some at 0 now), in the order
    // the blocks list them.
    std::vector<GpuId> promised_gpus;
    std::vector<uint32_t> promised_count;
    bool promised_counted = false;
    std::vector<DomainId> tops;  // the largest domains a job that must fit in one may use
    // Before Reserve goes live: the GPUs free at t and not held, by node and by domain of `tops`.
    WalkCounts counts;
    // A walk with a bandwidth floor, for each of its two searches: the domains of `tops` that
    // gained GPUs since the last search that found nothing, and a mark per domain of `tops`.
    std::array<std::vector<uint32_t>, 2> gained;  // indexes in `tops`
    std::array<std::vector<uint8_t>, 2> gained_mark;
    // Such a walk brings only the domains of `tops` it searches to the state at t: which are,
    // and the jobs it released that the Topology has not (live_tops.h); the domains of each
    // search, the regions passed to the Placer, and the promised GPUs held.
    LiveTops<const ReleaseWords*> live;
    std::array<std::vector<uint32_t>, 2> within;
    std::vector<DomainId> regions;
    std::vector<GpuId> others_live, to_hold;
    std::vector<JobId> to_release;  // (LiveTops: the jobs a domain brought to t releases)
    // And the fingerprint each domain of `tops` would have at t.
    WalkPrints prints;
    WhatIf::Buffers what_if;  // each walk's WhatIf's lists
  } reserve;
  // By 64-GPU word: the GPUs free now (Topology::is_free) and those on nodes that are up, for
  // Reserve, built on its first call. Between Reserve calls the Topology's lasting changes are
  // StartJob's allocations, which clear their GPUs here; node states do not change in a pass.
  std::vector<uint64_t> free_now_bits, up_bits;
  bool gpu_bits_built = false;
  // Reserve's releases before it goes live, by job: whether the Topology lists GPUs for it and
  // those on nodes that are up as (word, bits) in release_word_list[begin, end). Built on a
  // job's first release in the pass.
  struct ReleaseWords {
    bool has_gpus = false;
    uint32_t begin = 0, end = 0;
    Topology::RingLoad ring;  // its ring's crossings (Topology::job_ring)
  };
  std::unordered_map<JobId, ReleaseWords> release_words;
  // By index of `ends`: the job's entry of release_words, null until first asked (kept in step
  // with `ends`: cleared when it is rebuilt, a null inserted where StartJob inserts).
  std::vector<const ReleaseWords*> ends_words;
  std::vector<std::pair<uint32_t, uint64_t>> release_word_list;

  // ---- preemption (preemption.cc) ----
  // The running jobs a job of one class and service queue may take GPUs from, priced
  // (preemption.cc, VictimsFor): listed once per class and service queue (by class rank and
  // service queue, 0 unless order=attained) and pass, until a preemption succeeds.
  struct Victims {
    struct Victim {
      JobId id;
      bool shrink;
      uint32_t removable;      // GPUs it can give up
      double cost;             // the policy's price for them
      uint32_t min_preemptor;  // taken only for a preemptor of at least so many GPUs
      const JobRecord* record;
    };
    std::vector<Victim> victims;          // in job id order
    uint32_t min_preemptor = UINT32_MAX;  // the least of the victims'
  };
  std::map<std::pair<int, uint32_t>, Victims> victims_by_class;
  // Preemptions that failed: the same class, service queue and shape, no bigger, is not tried
  // again in the pass. Not always a sure failure: for service a larger preemptor may take larger
  // victims (Victims::Victim::min_preemptor). Trying it where it may (2026-12-07): Philly's window
  // 1.0M-3.0M s at 6x 4.80 -> 4.75 h avg JCT, ITP x1.5 5.71 -> 5.73 h, with the model off within
  // 1%: mixed, so kept as is.
  struct FailedPreempt {
    std::pair<int, uint32_t> rank;
    ShapeKey key;
    uint32_t gpus;
  };
  std::vector<FailedPreempt> failed_preempts;
  // Active tasks per array (for %N) and the active jobs' (user, name) (for singleton), from
  // the active set at the start of the pass plus the jobs the pass starts.
  std::map<JobId, uint32_t> array_active;
  std::set<std::pair<std::string, std::string>> named_active;
  // The jobs whose (user, name) named_active is made of, until a singleton dependency first asks
  // (most passes have none: hundreds of string pairs a pass for nothing); then built, and
  // NoteStarted adds to it directly.
  std::vector<const JobRecord*> named_jobs;
  bool named_built = false;
};

inline PassState::PassState(Topology& topology, PassBuffers& b, Time t) : now(t), buffers(b), start_blocks(topology) {
  buffers.keys.clear();
  buffers.jobs.clear();
  buffers.waits.clear();
}

}  // namespace phalanx
