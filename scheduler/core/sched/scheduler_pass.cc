// Scheduler::Schedule: one scheduling pass. Decisions made by events since the last pass, timers,
// then the queue: claims become reservations and priorities are computed (QueuePolicy), the
// queue is sorted, and each pending job in order is started, backfilled, given victims or a
// reservation (ScheduleJob), as the BackfillPolicy allows; then elastic growth. The parts are
// in internal/ (timers, start_now, reserve, preemption, elastic_growth), the policies in policy/.
#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/queue/priority.h"
#include "core/sched/internal/dependencies.h"
#include "core/sched/internal/elastic_growth.h"
#include "core/sched/internal/kept_plan.h"
#include "core/sched/internal/node_filter.h"
#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/patience.h"
#include "core/sched/internal/preemption.h"
#include "core/sched/internal/reserve.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/spec_checks.h"
#include "core/sched/internal/start_now.h"
#include "core/sched/internal/timers.h"
#include "core/sched/scheduler.h"

namespace phalanx {

namespace {

// A pass reads a few fields of every pending job's record, twice (priorities, then the queue in
// order); with thousands of pending jobs the records are not in cache, and most of a pass was
// waiting for them one after the other. Asking for the record a few jobs ahead overlaps those
// misses (hints only: nothing is read or changed).
constexpr size_t kPrefetchAhead = 8;

void PrefetchForPriority(const JobRecord* j) {
  __builtin_prefetch(&j->spec.submit);
  __builtin_prefetch(&j->spec.user);
  __builtin_prefetch(&j->priority);
  __builtin_prefetch(&j->claim);
}

void PrefetchForSchedule(const JobRecord* j) {
  __builtin_prefetch(&j->spec.held);
  __builtin_prefetch(&j->spec.begin);
  __builtin_prefetch(&j->state);
  __builtin_prefetch(&j->wait);
  __builtin_prefetch(&j->forbidden_nodes);
}

// Later, once the record is likely in cache: what its vectors and strings point to.
void PrefetchHeap(const JobRecord* j) {
  __builtin_prefetch(j->partition_ids.data());
  __builtin_prefetch(j->wait.detail.data());
}

// Queue order: priority, then submit time, then id (a total order, so any sort of the same keys
// gives the same queue).
template <class Key>  // QueueKey, KeptKey
bool Before(const Key& a, const Key& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.submit != b.submit) return a.submit < b.submit;
  return a.id < b.id;
}

// Sorts the pass's queue keys into queue order and sets the pass's records in that order.
void OrderQueue(PassState& pass) {
  std::vector<QueueKey>& keys = pass.buffers.keys;
  // Sorts keys, not ids: comparing ids looked both jobs up in the job map (every job ever known),
  // O(n log n) lookups, most of a pass with tens of thousands of pending jobs. Keys already in
  // order -- submit order, as FIFO queues mostly are -- stay as they are.
  const auto before = Before<QueueKey>;
  if (!std::is_sorted(keys.begin(), keys.end(), before)) std::sort(keys.begin(), keys.end(), before);
  // scontrol top (Scheduler::Top): a user's topped jobs go first among that user's jobs, the
  // last topped first, in the places the user's jobs hold; nothing to do when none is topped.
  std::set<std::string_view> topped;
  for (const QueueKey& k : keys) {
    if (k.topped) topped.insert(k.job->spec.user);
  }
  for (std::string_view user : topped) {
    std::vector<size_t> at;
    std::vector<QueueKey> mine;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i].job->spec.user != user) continue;
      at.push_back(i);
      mine.push_back(keys[i]);
    }
    std::stable_sort(mine.begin(), mine.end(),
                     [](const QueueKey& a, const QueueKey& b) { return a.job->spec.top > b.job->spec.top; });
    for (size_t i = 0; i < at.size(); ++i) keys[at[i]] = mine[i];
  }
  for (const QueueKey& k : keys) pass.buffers.jobs.push_back(k.job);
}

// Whether `job` would fit now if no GPU were reserved, for the ReservedFor wait reason: a whole
// Placer search, asked for every job that reserves, so the answer is kept for the rest of the
// pass while the Topology stays as it is (same version, no what-if in force) and for every job
// that asks the same: the same request in the same partitions, no -w/-x/-C, no per-user limit.
bool FitsIgnoringReservations(SchedulerState& s, PassState& pass, const JobRecord& job, uint32_t n) {
  const PlacementRequest request = SchedulerState::ShapeFor(job, n);
  const Topology& topo = *s.topo;
  if (!job.forbidden_nodes.empty() || pass.user_gpu_limits || !topo.no_what_if())
    return s.PlaceNow(job, request).has_value();
  if (pass.fits_version != topo.version()) {
    pass.fits.clear();
    pass.fits_version = topo.version();
  }
  const uint64_t partitions = PartitionMask(job.partition_ids);
  for (const PassState::FitsAnswer& a : pass.fits) {
    if (a.partitions == partitions && a.request == request) return a.fits;
  }
  const bool fits = s.PlaceNow(job, request).has_value();
  pass.fits.push_back({request, partitions, fits});
  return fits;
}

// Whether `id` reserves a claim of its own in this pass (a preemptor's: ReserveClaim). Such a
// job is exempt from the strict order and from Slurm's depth.
bool Own(const PassState& pass, JobId id) {
  return pass.reserved_filter.MayContain(id) && pass.reservations_of.contains(id);
}

// Decides about one pending job, in queue order: start it now, or say why it waits (with the
// reservation or the victims that will let it start).
void ScheduleJob(SchedulerState& s, PassState& pass, JobRecord& job, std::vector<Decision>& out) {
  const Time now = pass.now;
  const JobId id = job.spec.id;
  // The reason is rewritten in place: most jobs wait for the same reason pass after pass, and
  // a fresh string for each of tens of thousands of jobs per pass was a tenth of the pass.
  auto wait = [&](WaitKind kind, std::string_view detail = {}, Time start = kForever) {
    job.wait.kind = kind;
    job.wait.detail.assign(detail);
    job.wait.predicted_start = start;
  };
  wait(WaitKind::kNone);
  if (job.spec.held) return wait(WaitKind::kHeld);
  // A dependency that can never be met leaves the job pending (as Slurm without
  // kill_invalid_depend): the user cancels it, or it waits for nothing forever.
  if (DependCheck dep = CheckDependencies(s, pass, job); dep.state != DependState::kMet) {
    return wait(dep.state == DependState::kNever ? WaitKind::kDependencyNever : WaitKind::kDependency,
                std::move(dep.detail));
  }
  if (job.spec.array_max_running > 0) {
    auto it = pass.array_active.find(job.spec.array_id);
    if (it != pass.array_active.end() && it->second >= job.spec.array_max_running)
      return wait(WaitKind::kArrayTaskLimit, std::to_string(it->second) + " of array " +
                                                 std::to_string(job.spec.array_id) + " running (%" +
                                                 std::to_string(job.spec.array_max_running) + ")");
  }
  if (job.spec.begin > now) {
    pass.begin_ahead = true;
    return wait(WaitKind::kBeginTime, {}, job.spec.begin);
  }
  const uint32_t n = s.MinLegalSize(job);
  if (job.partition_ids.empty()) {
    const std::string names = job.spec.partitions.empty() ? "" : job.spec.partitions.front();
    return wait(WaitKind::kUnsatisfiable, "partition '" + names + "' is no longer configured");
  }
  if (!pass.all_partitions_open && !s.PartitionOpen(job)) {
    return wait(WaitKind::kPartitionDown,
                "partition " + s.partitions.at(job.partition_ids.front()).name + " is " +
                    std::string(PartitionStateName(s.partitions.at(job.partition_ids.front()).state)));
  }
  if (std::string why = s.placer->Unsatisfiable(SchedulerState::ShapeFor(job, n)); !why.empty())
    return wait(WaitKind::kUnsatisfiable, why);
  if (std::string why = PartitionsUnsatisfiable(s, job.spec, job.partition_ids, n); !why.empty())
    return wait(WaitKind::kUnsatisfiable, why);
  const bool filtered = !job.forbidden_nodes.empty();  // -w/-x/-C
  if (filtered) {
    if (const uint32_t allowed = AllowedGpus(*s.topo, job.forbidden_nodes); allowed < n) {
      return wait(WaitKind::kUnsatisfiable, "the nodes it may use (nodelist/exclude/constraint) have " +
                                                std::to_string(allowed) + " GPUs, it needs " + std::to_string(n));
    }
  }
  if (pass.user_gpu_limits) {
    if (std::string why = s.UserLimitHit(job, n); !why.empty()) return wait(WaitKind::kUserLimit, why);
  }
  if (auto hit = s.limits.CheckStart(job.spec.user, job.spec.account, n)) {
    return wait(hit->scope == LimitScope::kAccount ? WaitKind::kAccountLimit : WaitKind::kUserLimit,
                std::move(hit->reason));
  }
  // A preemptor's own claim is a reservation of its own: it is not blocked by it, so neither the
  // strict order nor another job's failure says anything about it.
  const bool own = Own(pass, id);
  // Slurm's depth counts this job (the pass reads no further than test_limit such jobs, so every
  // job it tests is within the limit).
  if (!own) ++pass.looked_at;
  if ((!s.policies.backfill->Backfills() || !pass.backfill_cycle) && pass.blocked && !own) {
    return wait(WaitKind::kPriority, pass.behind);
  }

  // Placement under pressure: a held job waits for a good block and starts on one as soon as it
  // is free; the slower block free now is looked at again every patience_replan and at the bound
  // (WaitStillHeld), not at every pass.
  auto wait_for_block = [&](Patience& patience, uint32_t gpus) {
    std::optional<Reservation>& r = patience.block;
    if (r && r->start <= now) {
      Placement good{r->gpus, {}, s.placer->model().Predict(r->gpus)};
      StartJob(s, pass, job, good, out);
      NoteStarted(pass, job);
      return;
    }
    const Time start = r ? r->start : patience.until;
    std::string detail = std::string(LevelName(s.Best(gpus).level)) + "; a slower block is free now";
    if (r) AddReservation(s, pass, std::move(*r));
    wait(WaitKind::kTopologyBlock, std::move(detail), start);
  };
  if (!own && !filtered) {
    if (std::optional<StillHeld> held = WaitStillHeld(s, pass, job, n)) {
      if (held->good) {
        StartJob(s, pass, job, *held->good, out);
        NoteStarted(pass, job);
        return;
      }
      if (held->patience.wait) return wait_for_block(held->patience, n);
      // No good block is planned for it any more: decided below, as a job not held.
    }
  }

  // Start now, unless a job of the same shape class that was no bigger and no longer failed.
  const ShapeKey key = ShapeKey::Of(job.spec.shape, PartitionMask(job.partition_ids));
  const Duration w = s.policies.runtime->Run(job);
  PassState::FailedShape* failed = nullptr;
  for (PassState::FailedShape& f : pass.failed_shapes) {
    if (f.key == key) failed = &f;
  }
  const bool dominated = !own && !filtered && failed && failed->failures.Covers(n, w);
  if (!dominated) {
    std::optional<Placement> p = TryStartNow(s, pass, job);
    if (p) {
      // Placement under pressure: a good block soon rather than a slow one now.
      if (Patience patience = WaitForBetterBlock(s, pass, job, *p); patience.wait)
        return wait_for_block(patience, static_cast<uint32_t>(p->gpus.size()));
      StartJob(s, pass, job, *p, out);
      NoteStarted(pass, job);
      return;
    }
    if (!own && !filtered) {
      if (!failed) failed = &pass.failed_shapes.emplace_back(PassState::FailedShape{key, {}});
      failed->failures.Add(n, w);
    }
  }
  if (!pass.blocked) {
    pass.first_blocked = id;
    pass.behind = "behind job " + std::to_string(id);
  }
  pass.blocked = true;

  if (!job.victims.empty())
    return wait(WaitKind::kPreempting, std::to_string(job.victims.size()) + " jobs checkpointing");
  if (TryPreempt(s, pass, job, out))
    return wait(WaitKind::kPreempting, std::to_string(job.victims.size()) + " jobs checkpointing");

  // The blocks jobs wait for under placement pressure are beyond the policy's depth.
  const size_t made = pass.policy_reservations;
  // reserve_larger: EASY's one reservation, and one for each blocked job larger than all before.
  const bool larger = s.config.reserve_larger && s.config.backfill == BackfillMode::kEasy && n > pass.reserved_max_gpus;
  const bool reserves = s.policies.backfill->Reserves(WaitingSince(job), n, made, now) || larger;
  // Beyond the reservations the policy makes: higher-priority jobs hold them (most pending jobs
  // of a long queue end here, so nothing below is computed for them).
  if (!reserves && made > 0) return wait(WaitKind::kPriority);
  // Resources when not enough GPUs are free where it may run (its partitions' nodes, as Slurm
  // counts them), TopologyBlock when they are but no block of its shape is.
  const uint32_t free = s.FreeGpusFor(job, pass.start_blocks);
  WaitKind kind = free < n ? WaitKind::kResources : WaitKind::kTopologyBlock;
  std::string detail;
  if (kind == WaitKind::kTopologyBlock) {
    detail = job.spec.shape.fit == FitMode::kRequire ? std::string(LevelName(job.spec.shape.level))
                                                     : "no block of " + std::to_string(n) + " free GPUs fits";
  }
  if (!reserves) return wait(kind, detail);
  pass.start_blocks.Clear();
  if (kind == WaitKind::kTopologyBlock && !s.reservations.empty() && FitsIgnoringReservations(s, pass, job, n)) {
    // It would fit, but only on GPUs promised to others.
    for (const Reservation& r : s.reservations) {
      if (r.job != id && r.start < now + w) {
        kind = WaitKind::kReservedFor;
        detail = "job " + std::to_string(r.job);
        break;
      }
    }
  }
  // The first reservation of the pass (EASY's) is planned anew in every pass: it says when the
  // head of the queue starts and what may pass it. Those after it (the starvation guard's) start
  // further out, and a kept one is replanned every reserve_replan.
  if (auto r = ReserveOrKeep(s, pass, job, /*may_keep=*/made > 0)) {
    const Time start = r->start;
    // Slurm's bf_window: no reservation further out (the job is planned again next cycle).
    if (s.config.backfill_window > 0 && start > now + s.config.backfill_window) {
      // Once the window reaches it, it reserves, and a job after it may no longer: time alone
      // changes the pass then (IdleCyclesRepeat).
      pass.window_reaches = std::min(pass.window_reaches, start - s.config.backfill_window);
      return wait(kind, detail, start);
    }
    pass.reserved_max_gpus = std::max(pass.reserved_max_gpus, n);
    AddReservation(s, pass, std::move(*r));
    return wait(kind, detail, start);
  }
  // A far plan no longer free (reserve_horizon) is still the job's prediction until planned anew.
  if (job.reserve_plan.planned_at >= 0 && job.reserve_plan.start > now)
    return wait(kind, detail, job.reserve_plan.start);
  return wait(kind, detail);
}

// Whether nothing the policy decides with changes by time alone, so that a backfill cycle after
// an idle one, with no event between, decides nothing either: the order is FIFO (priorities
// constant; a topped job is an event), no guard starts reserving by waiting time, no job waits
// for a better block until a bound, neither preemption (minimum run times) nor elastic resizing
// (idle times), runtimes are walltimes (a running job never outlives its expected end: it is
// killed then, a timer), nothing is suspended (its walltime clock stops). Time still moves the
// reservations' blocking interval, but only to block more, and the backfill window, which
// changes who reserves once it reaches a job's start (PassState::window_reaches: the skipping
// stops there).
bool IdleCyclesRepeat(const SchedulerState& s, const PassState& pass) {
  const SchedulerConfig& c = s.config;
  return c.skip_idle_backfill && c.backfill_interval > 0 && c.order == QueueOrder::kFifo && c.reserve_after_wait == 0 &&
         (c.placement_comm_share <= 0 || c.placement != PlacementMode::kTopology) && !c.preemption && !c.elastic &&
         c.runtime == RuntimeMode::kWalltime && !pass.begin_ahead && s.topo->none_suspended();
}

// Whether this pass reads the queue from the kept FIFO order (SchedulerState::fifo) rather than
// ordering every pending job: with Slurm's depth the pass looks at a few hundred jobs, and under
// a queue of thousands the ordering was the pass (every record read to compute a priority that
// FIFO holds at 0). Only where the two give the same queue and the same decisions: FIFO order,
// no topped job (Top reorders a user's jobs), and no claim to reserve before the queue is read
// (preemption off, none restored).
bool KeptOrder(const SchedulerState& s, const PassState& pass) {
  return s.KeepsFifo() && pass.test_limit > 0 && s.topped_pending == 0 && !s.policies.preemption && !s.pending_claims;
}

// A pending job's Wait decision at `at`: the reason its record keeps.
Decision WaitOf(const JobRecord& job, Time at) {
  Decision d;
  d.kind = DecisionKind::kWait;
  d.job = job.spec.id;
  d.at = at;
  d.wait = job.wait;
  return d;
}

// The queue in the kept FIFO order, up to Slurm's depth. A job that starts leaves the order (its
// entry only: with preemption off nothing else enters or leaves it during the pass, so the next
// entry stays valid); the Waits, as the other path gives them, for every pending job.
void ScheduleKeptOrder(SchedulerState& s, PassState& pass, std::vector<Decision>& out) {
  s.queue_stale = true;
  ++s.kept_order_passes;
  for (auto it = s.fifo.begin(); it != s.fifo.end() && !pass.DepthReached();) {
    JobRecord& job = *it->job;
    ++it;                                           // first: a start erases the job's entry
    if (job.state != JobState::kPending) continue;  // the order holds pending jobs only
    ScheduleJob(s, pass, job, out);
    pass.MarkPlanned(job.spec.id);
  }
  if (!s.config.wait_decisions) return;
  for (const SchedulerState::FifoEntry& e : s.fifo) {
    if (e.job->state == JobState::kPending) pass.buffers.waits.push_back(WaitOf(*e.job, pass.now));
  }
}

// Whether this pass reads the queue from the kept keys (SchedulerState::kept_keys): where the
// config keeps them, no job is topped (Top reorders a user's jobs) and no restored claim must be
// reserved before the queue is read.
bool FromKeys(const SchedulerState& s) { return s.KeepsKeys() && s.topped_pending == 0 && !s.pending_claims; }

// The kept key of a pending job, from its record (KeptKey).
KeptKey MakeKey(SchedulerState& s, JobRecord& job) {
  const JobSpec& spec = job.spec;
  KeptKey k;
  k.submit = spec.submit;
  k.id = spec.id;
  k.job = &job;
  k.simple = !spec.held && spec.after_ok.empty() && spec.depends.empty() && spec.array_max_running == 0 &&
             spec.begin <= spec.submit && job.forbidden_nodes.empty() && !job.partition_ids.empty() &&
             job.claim.empty() && job.victims.empty();
  const uint32_t n = s.MinLegalSize(job);
  k.n = static_cast<uint16_t>(std::min<uint32_t>(n, UINT16_MAX));
  k.w = s.policies.runtime->Run(job);
  k.shape = KeptKey::kNoShape;
  if (n <= UINT16_MAX) {
    const ShapeKey shape = ShapeKey::Of(spec.shape, PartitionMask(job.partition_ids));
    const auto known = std::find(s.key_shapes.begin(), s.key_shapes.end(), shape);
    if (known != s.key_shapes.end()) {
      k.shape = static_cast<uint8_t>(known - s.key_shapes.begin());
    } else if (s.key_shapes.size() < KeptKey::kNoShape) {
      k.shape = static_cast<uint8_t>(s.key_shapes.size());
      s.key_shapes.push_back(shape);
    }
  }
  const PriorityKey prio = s.policies.queue->KeyOf(job);
  k.owner = prio.owner;
  k.fixed_a = prio.fixed_a;
  k.fixed_b = prio.fixed_b;
  return k;
}

// Brings the kept keys up to the pending set: those of jobs that entered the queue since (or
// changed) are made anew from their records and put at the end; those of jobs that left (or
// changed) are listed in `gone` (sorted, and in `maybe`) for KeyPriorities to drop. Returns how
// many keys come before the new ones; those were in queue order at the last pass.
size_t SyncKeys(SchedulerState& s, std::vector<JobId>& gone, IdFilter& maybe) {
  std::vector<KeptKey>& keys = s.kept_keys;
  gone.clear();
  if (!s.keys_valid) {
    keys.clear();
    keys.reserve(s.pending.size());
    s.key_shapes.clear();
    // Every record is read, from the pending set's order: asked for ahead, as the other path does.
    const std::vector<JobSet::Entry>& pending = s.pending.Walk();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (i + kPrefetchAhead < pending.size()) {
        PrefetchForPriority(pending[i + kPrefetchAhead].second);
        PrefetchForSchedule(pending[i + kPrefetchAhead].second);
      }
      if (i + kPrefetchAhead / 2 < pending.size()) PrefetchHeap(pending[i + kPrefetchAhead / 2].second);
      keys.push_back(MakeKey(s, *pending[i].second));
    }
    s.keys_valid = true;
    s.keys_left.clear();
    s.keys_entered.clear();
    return 0;
  }
  std::swap(gone, s.keys_left);
  std::vector<JobRecord*>& entered = s.keys_entered;
  for (const JobRecord* j : entered) gone.push_back(j->spec.id);  // its old key is replaced
  std::sort(gone.begin(), gone.end());
  for (JobId id : gone) maybe.Add(id);
  const size_t old = keys.size();
  std::sort(entered.begin(), entered.end(),
            [](const JobRecord* a, const JobRecord* b) { return a->spec.id < b->spec.id; });
  entered.erase(std::unique(entered.begin(), entered.end()), entered.end());
  for (JobRecord* j : entered) {
    if (j->state == JobState::kPending) keys.push_back(MakeKey(s, *j));
  }
  entered.clear();
  return old;
}

// In one walk over the keys: drops the first `old` keys listed in `gone` (SyncKeys), computes
// each key's priority (QueueOrder's terms, inline), and notes which of the old keys, in queue
// order at the last pass, the new priorities put out of place: those not after every old key
// before them (Before). Priorities move a little between passes, so they are few. Returns how
// many old keys are left (they come first).
size_t KeyPriorities(SchedulerState& s, Time now, size_t old, const std::vector<JobId>& gone, const IdFilter& maybe,
                     std::vector<uint32_t>& out_of_place) {
  std::vector<KeptKey>& keys = s.kept_keys;
  QueuePolicy& order = *s.policies.queue;
  const KeyedTerms terms = order.Terms(now);
  const bool record = s.config.record_priorities;
  const bool drops = !gone.empty();
  out_of_place.clear();
  size_t kept = 0;  // keys[0, kept): the old keys left, moved down over those dropped
  size_t last = 0;  // among them, the latest in queue order
  size_t j = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i < old && drops && maybe.MayContain(keys[i].id) && std::binary_search(gone.begin(), gone.end(), keys[i].id))
      continue;
    if (j != i) keys[j] = keys[i];
    KeptKey& k = keys[j];
    const double owner_term = terms.known[k.owner] ? terms.owner_terms[k.owner] : order.OwnerTerm(k.owner, now);
    const double weighted_age = terms.age_weight * priority_internal::AgeFactor(k.submit, now, terms.max_age);
    k.priority = k.fixed_a + weighted_age + owner_term + k.fixed_b - 0.0;
    if (record) k.job->priority = k.priority;  // as after the other path
    if (i < old) {
      if (kept > 0 && Before(k, keys[last])) {
        out_of_place.push_back(static_cast<uint32_t>(j));
      } else {
        last = j;
      }
      kept = j + 1;
    }
    ++j;
  }
  keys.resize(j);
  return kept;
}

// Sorts the keys: each of the first `kept` that KeyPriorities found out of place is moved into
// place among those before it (up to a budget of moves, then a full sort); the rest, the new
// ones, are sorted and merged in. The same order as a sort.
void OrderKept(std::vector<KeptKey>& keys, size_t kept, const std::vector<uint32_t>& out_of_place) {
  const auto first = keys.begin();
  const auto before = Before<KeptKey>;
  size_t budget = 8 * kept + 4096;
  for (const uint32_t i : out_of_place) {
    // Every key before i is in order by now, and i is before the last of them.
    const auto here = first + static_cast<ptrdiff_t>(i);
    const auto at = std::upper_bound(first, here, *here, before);
    const size_t moves = i - static_cast<size_t>(at - first);
    if (moves > budget) {
      std::sort(first, keys.end(), before);
      return;
    }
    budget -= moves;
    KeptKey k = *here;
    std::move_backward(at, here, here + 1);
    *at = k;
  }
  std::sort(first + static_cast<ptrdiff_t>(kept), keys.end(), before);
  std::inplace_merge(first, first + static_cast<ptrdiff_t>(kept), keys.end(), before);
}

// Whether a pass left the job waiting on Priority with no detail and no predicted start, and
// not waiting for a better block (KeptKey::memo).
bool PlainPriorityWait(const JobRecord& job) {
  return job.state == JobState::kPending && job.wait.kind == WaitKind::kPriority && job.wait.detail.empty() &&
         job.wait.predicted_start == kForever && (job.deferred_since < 0 || job.patience_slower < 0);
}

// The queue from the kept keys: priorities from the keys, a mostly ordered sort, then each job
// in order as the other path does it, except a job whose record needs no reading: one the last
// pass left waiting on Priority (KeptKey::memo) that nothing changed since, in a pass where
// ScheduleJob would decide the same without looking at it again -- a backfill cycle with no
// partition down and no user limits, after the policy's reservations are made, a job of a shape
// that already failed at no larger size and no longer run (PassState::failed_shapes), and that
// does not reserve. ScheduleJob's checks before that point all pass for it (KeptKey::simple: no
// begin time among them; partitions and nodes unchanged, or the keys are made anew), the record
// keeps its reason, and only Slurm's depth counts it.
void ScheduleFromKeys(SchedulerState& s, PassState& pass, std::vector<Decision>& out) {
  std::vector<JobId>& gone = s.buffers.gone;
  IdFilter maybe;
  const size_t old = SyncKeys(s, gone, maybe);
  std::vector<uint32_t>& out_of_place = s.buffers.out_of_place;
  const size_t kept = KeyPriorities(s, pass.now, old, gone, maybe, out_of_place);
  std::vector<KeptKey>& keys = s.kept_keys;
  OrderKept(keys, kept, out_of_place);
  const BackfillPolicy& backfill = *s.policies.backfill;
  const bool skips = pass.backfill_cycle && backfill.Backfills() && !pass.user_gpu_limits && pass.all_partitions_open &&
                     !s.limits.gpu_limits();
  const bool larger_rule = s.config.reserve_larger && s.config.backfill == BackfillMode::kEasy;
  s.queue.clear();
  s.queue_stale = false;
  // Where each key shape's failures are in PassState::failed_shapes (kNone: none yet), noted
  // when a shape first fails (the list only grows: new shapes at its end).
  constexpr uint32_t kNone = ~uint32_t{0};
  std::vector<uint32_t>& failures_of = s.buffers.failures_of;
  failures_of.assign(s.key_shapes.size(), kNone);
  size_t failed_seen = 0;
  for (KeptKey& k : keys) {
    JobRecord& job = *k.job;
    bool read = false;  // whether ScheduleJob read (and may have started) the job
    if (!pass.DepthReached()) {
      bool skip =
          skips && k.memo && k.simple && pass.blocked && pass.policy_reservations > 0 && k.shape != KeptKey::kNoShape;
      if (skip) {
        if (failed_seen != pass.failed_shapes.size()) {
          for (; failed_seen < pass.failed_shapes.size(); ++failed_seen) {
            const PassState::FailedShape& f = pass.failed_shapes[failed_seen];
            const auto known = std::find(s.key_shapes.begin(), s.key_shapes.end(), f.key);
            if (known != s.key_shapes.end())
              failures_of[static_cast<size_t>(known - s.key_shapes.begin())] = static_cast<uint32_t>(failed_seen);
          }
        }
        const uint32_t failed = failures_of[k.shape];
        skip = failed != kNone && pass.failed_shapes[failed].failures.Covers(k.n, k.w) &&
               !backfill.Reserves(k.submit, k.n, pass.policy_reservations, pass.now) &&
               !(larger_rule && k.n > pass.reserved_max_gpus);
      }
      if (skip) {
        ++pass.looked_at;
        ++s.keyed_skips;
      } else {
        job.priority = k.priority;
        ScheduleJob(s, pass, job, out);
        read = true;
        k.memo = k.simple && PlainPriorityWait(job);
      }
    }
    pass.MarkPlanned(k.id);
    if (read && job.state != JobState::kPending) continue;  // started (no other job leaves in a pass)
    s.queue.push_back(k.id);
    if (s.config.wait_decisions) pass.buffers.waits.push_back(WaitOf(job, pass.now));
  }
}

}  // namespace

std::vector<Decision> Scheduler::Schedule(Time now) {
  SchedulerState& s = *s_;
  now = std::max(now, s.now);
  s.now = now;
  // A backfill cycle that would repeat an idle one (SchedulerState::backfill_idle): the cycle
  // is taken (its clock moves) and decides nothing; the waits are those the records keep.
  if (s.backfill_idle && s.outbox.empty() && s.next_timer > now && now < s.backfill_idle_until &&
      now >= s.last_backfill + s.config.backfill_interval) {
    ChargeUsage(s, now);
    s.last_backfill = now;
    ++s.idle_cycles_skipped;
    std::vector<Decision> waits;
    if (!s.config.wait_decisions) return waits;
    for (JobId id : s.Queue()) {
      if (const JobRecord& job = s.jobs.at(id); job.state == JobState::kPending) waits.push_back(WaitOf(job, now));
    }
    return waits;
  }
  // Decisions made by events since the last pass, unless a later event made them moot (a job
  // resized by a node failure that then ended; a requeued job that was then cancelled).
  std::vector<Decision> out;
  for (Decision& d : s.outbox) {
    const JobRecord* j = job(d.job);
    if (!j) continue;
    if (d.kind == DecisionKind::kResize && j->state != JobState::kRunning && j->state != JobState::kCheckpointing)
      continue;
    if (d.kind == DecisionKind::kPreempt && IsFinal(j->state)) continue;
    out.push_back(std::move(d));
  }
  s.outbox.clear();
  ChargeUsage(s, now);
  FireTimers(s, now, out);

  PassState pass(*s.topo, s.buffers, now);
  if (s.config.backfill_interval > 0) {
    pass.backfill_cycle = now >= s.last_backfill + s.config.backfill_interval;
    if (pass.backfill_cycle) s.last_backfill = now;
  }
  // A policy that never backfills runs only the main scheduler's passes (Slurm's sched/builtin).
  pass.test_limit =
      pass.backfill_cycle && s.policies.backfill->Backfills() ? s.config.backfill_max_jobs : s.config.main_queue_depth;
  const std::vector<Partition>& parts = s.partitions.all();
  pass.all_partitions_open =
      std::all_of(parts.begin(), parts.end(), [](const Partition& p) { return StartsJobs(p.state); });
  pass.user_gpu_limits =
      std::any_of(parts.begin(), parts.end(), [](const Partition& p) { return p.max_gpus_per_user > 0; });
  // The last pass's reservations are this pass's promises; preemption claims are made anew.
  for (Reservation& r : s.reservations) {
    if (r.for_preemption) continue;
    pass.promised.push_back({r.job, std::move(r.gpus)});
    pass.promised_filter.Add(r.job);
  }
  // By job, the last of a job's reservations kept.
  std::stable_sort(pass.promised.begin(), pass.promised.end(),
                   [](const PassState::Promise& a, const PassState::Promise& b) { return a.job < b.job; });
  auto last = std::unique(pass.promised.rbegin(), pass.promised.rend(),
                          [](const PassState::Promise& a, const PassState::Promise& b) { return a.job == b.job; });
  pass.promised.erase(pass.promised.begin(), last.base());
  s.reservations.clear();
  s.patience_due = kForever;
  NoteActiveJobs(s, pass);
  s.policies.queue->BeginPass(now);
  if (KeptOrder(s, pass)) {
    ScheduleKeptOrder(s, pass, out);
  } else if (FromKeys(s)) {
    ScheduleFromKeys(s, pass, out);
  } else {
    s.keys_valid = false;  // not kept through this pass
    s.keys_left.clear();
    s.keys_entered.clear();
    // One walk over the pending jobs, in id order, touching each record once (tens of thousands
    // of records do not stay in cache from one walk to the next): claims become reservations
    // and priorities are computed; then the queue is sorted on the keys.
    const std::vector<JobSet::Entry>& pending = s.pending.Walk();
    size_t claims = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (i + kPrefetchAhead < pending.size()) PrefetchForPriority(pending[i + kPrefetchAhead].second);
      const auto& [id, jp] = pending[i];
      JobRecord& j = *jp;
      if (!j.claim.empty() || !j.victims.empty()) {
        ReserveClaim(s, pass, j);
        ++claims;
      }
      j.priority = s.policies.queue->Priority(j, now);
      pass.buffers.keys.push_back({j.priority, j.spec.submit, id, &j, j.spec.top > 0});
    }
    // Without preemption no claim is made, so the restored ones are gone for good once no
    // pending job holds one (SchedulerState::pending_claims): the kept orders apply again.
    if (claims == 0 && !s.policies.preemption) s.pending_claims = false;
    OrderQueue(pass);
    // A job's Wait is final once it was scheduled (later jobs change only themselves and running
    // jobs); the Waits go after every other decision, in queue order. Past Slurm's depth only a
    // job with a claim of its own is still scheduled; the others keep their reasons.
    const std::vector<JobRecord*>& queue = pass.buffers.jobs;
    s.queue.clear();
    s.queue_stale = false;
    for (size_t i = 0; i < queue.size(); ++i) {
      if (i + kPrefetchAhead < queue.size()) PrefetchForSchedule(queue[i + kPrefetchAhead]);
      if (i + kPrefetchAhead / 2 < queue.size()) PrefetchHeap(queue[i + kPrefetchAhead / 2]);
      JobRecord& job = *queue[i];
      if (job.state == JobState::kPending && (!pass.DepthReached() || Own(pass, job.spec.id)))
        ScheduleJob(s, pass, job, out);
      // Reserve asks only about jobs promised a block in the last pass.
      pass.MarkPlanned(job.spec.id);
      if (job.state != JobState::kPending) continue;
      s.queue.push_back(job.spec.id);
      if (s.config.wait_decisions) pass.buffers.waits.push_back(WaitOf(job, now));
    }
  }
  pass.start_blocks.Clear();
  GrowElastic(s, pass, out);
  const bool decided = !out.empty();  // the waits are not in `out` yet
  if (pass.backfill_cycle && s.config.backfill_interval > 0) {
    s.backfill_idle = !decided && IdleCyclesRepeat(s, pass);
    s.backfill_idle_until = pass.window_reaches;
  } else if (decided) {
    s.backfill_idle = false;
  }
  std::vector<Decision>& waits = pass.buffers.waits;
  out.reserve(out.size() + waits.size());
  std::move(waits.begin(), waits.end(), std::back_inserter(out));
  waits.clear();
  return out;
}

}  // namespace phalanx
