#include "core/sched/internal/reserve.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "core/placement/placement_counts.h"
#include "core/planner/domain_planner.h"
#include "core/sched/internal/bit_counts.h"
#include "core/sched/internal/candidate_times.h"
#include "core/sched/internal/node_filter.h"
#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/reserve_inputs.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/what_if.h"

namespace phalanx {

namespace {

// When every GPU of `own` (a job's block from the last pass) is free for a walk: free now, or
// its job released (the time of its entry in `ends`). kForever if one never is (no release
// frees it: its node takes no work); nullopt when a GPU's owner is not a running job of the
// Scheduler (outside load, held), whose release the walk alone follows.
std::optional<Time> FreeFrom(SchedulerState& s, PassState& pass, std::span<const GpuId> own) {
  const Topology& topo = *s.topo;
  Time from = pass.now;
  for (GpuId g : own) {
    const uint64_t bit = uint64_t{1} << (g.value & 63);
    if (pass.free_now_bits[g.value >> 6] & bit) continue;
    const JobId owner = topo.owner(g);
    if (owner == kNoJob || owner == Topology::kHeld || Topology::IsExternal(owner)) return std::nullopt;
    const JobRecord* holder = s.active.Find(owner);
    if (!holder) return std::nullopt;
    const PassState::ReleaseWords& rw = JobReleaseWords(topo, pass, owner);
    bool frees = false;
    for (uint32_t x = rw.begin; x < rw.end && !frees; ++x) {
      frees = pass.release_word_list[x].first == g.value >> 6 && (pass.release_word_list[x].second & bit) != 0;
    }
    if (!frees) return kForever;
    from = std::max(from, s.ReleaseTime(*holder));
  }
  return from;
}

// One walk of Reserve for one job: the candidate times in order (CandidateTimes), at each the
// state at t (the jobs released by then, the GPUs of every reservation over [t, t + w) held while
// free), and a search for a block where the counts allow one. The first block found is the
// reservation.
//
// The state at t is kept incrementally as t advances: `wanted_` counts, per GPU, the overlapping
// reservations that list it (two may share GPUs at different times), and a GPU is held while its
// count is above zero and it is free (no running job owns it, or its job is released by t), so
// each step touches only the reservations that enter or leave the window and the GPUs of the
// jobs released. Block 0 of the what-if holds the blocks promised in the last pass to jobs not
// re-planned yet, made anew at each candidate time.
//
// The Topology is changed only from the first time whose free-GPU count is enough for the job
// (`live_`): before it, the walk keeps the count alone (`free_count_`, `free_bits_`), which is what
// the skipped times would have checked; most walks try the Placer once, at their last step, so
// the releases and holds of every earlier step cost array updates, not Topology counters. At that
// time the Topology is brought to the same state the step-by-step walk would have left (the same
// jobs released, the same GPUs held; the counters depend only on which), and from there on every
// step changes it as it goes. A walk that goes live as a whole (not domain by domain) does so in
// the WalkTwin, a second Topology left as the last walk left it, changing only what differs
// (WhatIf::Retarget); the Scheduler's Topology stays as it is now, and its Placer's answers come
// from the twin's Placer.
class Walk {
 public:
  Walk(SchedulerState& s, PassState& pass, const JobRecord& job, Duration w, uint32_t n,
       const std::vector<std::pair<Time, JobId>>& ends, OwnBlock own);
  Walk(const Walk&) = delete;
  Walk& operator=(const Walk&) = delete;
  // Every scratch buffer all clear again, and the Topology as it was (the what-if undone).
  ~Walk();

  // The earliest reservation, or none before the last candidate time.
  std::optional<Reservation> Run();

 private:
  static constexpr size_t kPromised = 0;  // the what-if's block of the GPUs promised to others

  // A walk with a bandwidth floor: one of its two searches (the GPUs promised to others held, 1:
  // not), and the domains of `tops` that gained GPUs since that search last found nothing.
  struct Tracked {
    bool failed = false;  // the last search found nothing; `gained` lists the domains since
    std::vector<uint8_t>& marked;
    std::vector<uint32_t>& gained;  // indexes in `tops`
  };

  // Where the floor says the walk starts (PassState::WalkFloor); false when no time is left.
  bool JumpToFloor();
  // With the planner: the first candidate time not before its earliest block from `t` on
  // (nullopt: none).
  std::optional<Time> PlannedFrom(Time t);
  // Brings the state to t: the jobs released by t, the reservations over [t, t + w) wanted.
  void Advance(Time t);
  // The block at t, if one is free for the job's whole window.
  std::optional<Placement> BlockAt(Time t);
  // The same with a bandwidth floor (`track_`): the searches look only where something changed.
  std::optional<Placement> SearchTracked();
  Reservation Made(Time t, const Placement& p);

  // Notes where this walk ended, with its releases; the floors it makes redundant (same request,
  // no shorter walltime, no later end) go.
  void Ended(Time t);
  // The GPUs of word w in `bits` became free and not held at t (`freed`), or no longer.
  void CountChange(uint32_t w, uint64_t bits, bool freed);
  uint32_t TopOf(uint32_t g) const { return counts_.DomainOf(topo_.node_of(GpuId(g)).value); }
  // Whether GPU g's domain of `tops` is brought to t (never, unless per_top_).
  bool LiveAt(uint32_t g) const { return per_top_ && live_tops_.live(TopOf(g)); }
  void Gained(uint32_t g);
  // After a search of tr's state (or one known to find what it would): a block, or none.
  void Searched(Tracked& tr, bool found);
  // The domains of `tops` tr's next search looks in: all, or those gained since its last search
  // found nothing; either way (per_top_) only those whose counts allow the request. With the
  // promised blocks given back (`unheld`), a domain the Placer remembers holding no fit in its
  // state at t is left out too (its search would look at nothing else: PlaceWithin).
  void Candidates(const Tracked& tr, std::vector<uint32_t>& out, bool unheld);
  std::optional<Placement> Place(Tracked& tr, const std::vector<uint32_t>& within);
  // Before `live_` (and in a per_top_ walk, which never goes live as a whole): free at t; held.
  bool FreeAt(GpuId g) const { return (free_bits_[g.value >> 6] >> (g.value & 63)) & 1; }
  bool IsHeld(GpuId g) const { return (held_[g.value >> 6] >> (g.value & 63)) & 1; }
  // Before `live_`: one more want of each GPU of m (word w); one want less.
  void WantBits(uint32_t w, uint64_t m);
  void UnwantBits(uint32_t w, uint64_t m);
  // Reservation i enters the window [t, t + w); leaves it.
  void Enter(uint32_t i);
  void Leave(uint32_t i);
  // The index in `tops` of the domain whose fingerprint a crossing load at d is part of, if any
  // (none: above every domain of `tops`).
  uint32_t PrintTop(DomainId d) const;
  // Releases job r of a walk that brings domains to t one by one (per_top_) in the Topology, its
  // GPUs that are wanted held in the domains brought to t: when a domain it is in is brought
  // there.
  void Apply(uint32_t r);
  // Brings domain `top` of `tops` to the state at t: its jobs released by t released, and its
  // wanted GPUs that are free at t held.
  void MakeLive(uint32_t top);
  // Releases the job of ends[k].
  void Release(size_t k);
  // Lists the released job r (per_top_) in each domain of `tops` its GPUs are in (LiveTops);
  // whether one of them is brought to t.
  bool ListReleased(const PassState::ReleaseWords& rw, uint32_t r);
  // The releases made so far, for the floor this walk leaves (PassState::ReleaseSnapshot): when
  // it goes live or ends, whichever comes first (live, the Topology releases the jobs, not
  // `free_bits_` and `released_`), with the load changes of the fingerprints (`prints_`). Only
  // by a walk of the kind that starts at a floor: a later walk for the same request is of the
  // same kind.
  void KeepReleases(size_t made);
  // The Topology at t as the step-by-step walk leaves it: the jobs released, every wanted GPU
  // that is free held.
  void GoLive();
  // Once live, before the first step that changes the wants: `wanted_` from the bits, as they
  // were when it went live (most walks end at that step: their counts were never read).
  void CountWants();
  // The blocks promised to the jobs not re-planned yet, other than this one (made on the first
  // step that asks).
  void BuildOthers();

  SchedulerState& s_;
  PassState& pass_;
  const JobRecord& job_;
  Topology& topo_;
  const Time now_;
  const std::vector<Reservation>& reservations_;
  const Duration w_;
  const uint32_t n_;
  const PlacementRequest request_;
  const std::vector<std::pair<Time, JobId>>& ends_;
  PassState::ReserveScratch& scratch_;
  // The Placer (topology mode) searches every set of free GPUs, so holding more GPUs can only
  // take fits away. The simple placers try one choice per domain and check a floor on it alone.
  const bool complete_;
  // Where an earlier walk of the pass for the same request ended (PassState::WalkFloor): no
  // time before it is searched, only the job's own block from the last pass is checked there.
  // Ends and ReservationBounds clear the floors first when they no longer hold.
  const bool floored_;
  const uint64_t partitions_;
  Time floor_;
  size_t floor_from_ = 0;  // the floor's index in walk_floors
  // The reservations by start and by end (ReservationBounds), and the times the walk tries.
  const std::vector<uint32_t>& by_start_;
  const std::vector<uint32_t>& by_end_;
  CandidateTimes times_;
  const Level max_level_;
  // Where a job that must fit inside one domain may fit, for CountsMayHold. A good block inside
  // one node (or group) is looked for leaf by leaf, as the Placer does (Placer::Place): the walk
  // tracks those domains as it tracks the domains of a level above the node (`track_`).
  const std::optional<MissMemory::Key> remembered_;  // a request with a floor
  const bool by_leaf_;
  WhatIf what_if_;
  // Where the walk's state at t is once live: the Topology and `what_if_`, or the WalkTwin and
  // its WhatIf (GoLive); the Placer over it.
  WhatIf* wi_ = &what_if_;
  Topology* live_topo_ = &topo_;
  Placer* live_placer_;
  std::vector<uint32_t>& wanted_;
  bool live_ = false;
  bool counted_ = false;  // live, and `wanted_` made (CountWants)
  // Before `live_`: the GPUs free at t less those held, as the Topology would count them.
  uint32_t free_count_ = 0;
  // Before `live_`, who wants a GPU is kept in bits, 64 GPUs a word, not in `wanted_`: `held_` =
  // wanted by at least one, and the count itself in `want_counts_` (BitCounts), room for every
  // reservation and the job's own filter. Once live, the first step after turns them back into
  // counts (CountWants). `free_bits_`: free at t (free now, or released by t on a node that is
  // up), from the pass's bits of the GPUs free now.
  const size_t words_;
  std::vector<uint64_t>& held_;
  const std::vector<PassState::ReserveScratch::Words>& res_words_;  // ReservationBounds
  // -w/-x/-C: the forbidden nodes' GPUs are wanted by the job's own filter for all time, so they
  // are held (counted out before `live_`) now and as their jobs release them.
  const std::vector<GpuId> forbidden_;
  BitCounts& want_counts_;
  std::vector<uint64_t>& free_bits_;
  // Before `live_`, for a request CountsMayHold can refuse: the GPUs free at t and not held, by
  // node and by domain of `tops` (the root alone when it does not need them; WalkCounts), so the
  // walk goes live only at a step whose counts allow the request (once live, every step changes
  // the Topology). Kept by the three places that change `free_bits_` or `held_`.
  const bool in_tops_;
  const bool count_nodes_;
  WalkCounts& counts_;
  bool counting_ = false;
  // A request with a bandwidth floor (placement under pressure: a good block) fails the Placer
  // at most steps of its walk, each a search of every domain of `tops` with enough free GPUs.
  // Once a search has found nothing, a domain of `tops` can hold a fit at a later step only if it
  // gained GPUs since (a release, a hold that ends; a hold that begins only takes), so the next
  // search looks only in those (Placer::PlaceWithin; exact, see there), and none is made while
  // there are none. The two searches of a step (the GPUs promised to others held, and not) are
  // tracked apart (`tracked_`). Gains are over-counted (a released GPU that stays held marks its
  // domain too). (The Placer also remembers, across walks and passes, the domains that held no
  // fit by their state, so even the first search of a walk looks only where something changed.)
  const bool track_;
  // The planner tells, from GPU counts alone, the earliest time some domain the job may live in
  // has n GPUs free for its whole walltime: a necessary condition, so every time it skips would
  // have failed. Each candidate is then checked with the Placer on the what-if state at t.
  // Only multi-node jobs that must fit inside a domain above the node ask it: for a job that
  // fits one node, counts almost never decide, and for a job that may go anywhere the count it
  // would check is the cluster's free GPUs, which the walk checks at every step anyway
  // (building the plan was a quarter of a pass under long queues, for no skipped step).
  // (Groups are not planned: a job that must fit in a group must fit in its node.)
  // Nor a tracked walk (with SchedulerConfig::reserve_shortcuts): its steps keep each domain's
  // counts in words and search only where they allow the job, so the steps the plan skipped cost
  // less than keeping the plan up to date and asking it (Philly's saturation window: 30.8 s with
  // the plan, 25.3 s without; docs/performance.md, twenty-third round).
  DomainPlanner* plan_ = nullptr;
  // A tracked walk brings to t only the domains of `tops` it searches (with
  // SchedulerConfig::reserve_shortcuts off the whole Topology goes live, as other walks do). It
  // also keeps the fingerprint each domain of `tops` has at t (`prints_`), so that a domain the
  // Placer remembers holding no fit in that state is not brought to t only to be found a miss
  // again (on the Philly trace at saturation, 97% of the domains searched were). Only where a
  // search is the Placer's alone: every partition of the job spans the cluster (no fence of GPUs
  // outside one) and no per-user limit is set.
  // And only where the answer of a search depends on nothing outside the domains it looks in
  // (docs/scheduling.md, "Block-shaped reservations"). The search also reads
  // - the cluster's counts (a refusal for too few GPUs, a node tier skipped), which count a
  //   domain brought to t as it is: the same answers;
  // - for a job that fits in one node, the fullest node that can hold it anywhere, found from the
  //   root down: taken at once if its placement reaches the best GPU link of the cluster
  //   (Placer::max_gpu_link_gbs), else only a first candidate, which decides between blocks of
  //   equal bandwidth unless node best fit picks again among them (best fit, tolerance < 1). So
  //   only where no placement can reach that link (the best in the empty cluster does not), and
  //   node best fit is on;
  // - between candidates in two domains, the free GPUs of the domains above them, level by
  //   level, up to the first they share: only the domains themselves when they share one parent
  //   and every domain that could hold the job lies at one depth for its level
  //   (SchedulerState::DepthsByLevel).
  //
  // Such a walk never goes live as a whole: a search looks only inside domains of `tops`, and
  // reads nothing outside the ones it looks in, so only those need the state at t. The walk
  // keeps the counts (and the fingerprints) at every step: they decide, domain by domain, where
  // a search may find something. A domain is brought to the state at t (live_tops.h: its jobs
  // released by t released, its wanted GPUs held) the first time a search looks in it; from then
  // on the steps change it as they go. Under a long queue most of the jobs a walk releases are in
  // domains no search looks in: going live released them all, and gave them all back at the end
  // (a fifth of the replay of the Philly trace at saturation).
  bool per_top_ = false;
  std::optional<MissMemory::Key> asked_;
  bool prints_ = false;
  WalkPrints& walk_prints_;
  bool printing_ = false;  // from when the counts are made
  std::array<Tracked, 2> tracked_;
  LiveTops<const PassState::ReleaseWords*>& live_tops_;
  // Reservations enter the window when t + w passes their start and leave it for good when t
  // reaches their end (t only grows): two cursors, over the reservations by start and by end.
  std::vector<uint8_t>& in_window_;
  size_t entered_ = 0, left_ = 0;
  std::vector<JobId>& released_;  // before `live_`: the jobs to release when it goes live
  std::vector<GpuId>& gpus_;
  size_t next_ = 0;  // the entries of `ends_` released so far
  std::vector<GpuId>& others_;
  bool others_built_ = false;
  // The job's own block from the last pass, and whether it is one the request may take.
  const PassState::Promise* const own_;
  const bool own_fits_;
};

Walk::Walk(SchedulerState& s, PassState& pass, const JobRecord& job, Duration w, uint32_t n,
           const std::vector<std::pair<Time, JobId>>& ends, OwnBlock own)
    : s_(s),
      pass_(pass),
      job_(job),
      topo_(*s.topo),
      now_(pass.now),
      reservations_(s.reservations),
      w_(w),
      n_(n),
      request_(SchedulerState::ShapeFor(job, n)),
      ends_(ends),
      scratch_(pass.reserve),
      complete_(s.config.placement == PlacementMode::kTopology && s.config.reserve_shortcuts),
      floored_(complete_ && job.forbidden_nodes.empty() && !pass.user_gpu_limits),
      partitions_(PartitionMask(job.partition_ids)),
      floor_(now_),
      by_start_(scratch_.by_start),
      by_end_(scratch_.by_end),
      times_(ends, scratch_.bounds),
      max_level_(request_.fit == FitMode::kRequire ? std::max(request_.level, Level::kNode) : Level::kCore),
      remembered_(Placer::MissKey(request_)),
      by_leaf_(!WithinDomainAboveNode(request_) && request_.fit == FitMode::kRequire &&
               s.config.placement == PlacementMode::kTopology && remembered_.has_value()),
      what_if_(topo_, scratch_.what_if),
      live_placer_(s.placer.get()),
      wanted_(scratch_.wanted),
      words_((topo_.gpu_count() + 63) / 64),
      held_(scratch_.held_bits),
      res_words_(scratch_.res_words),
      forbidden_(NodeFilter::Gpus(topo_, job.forbidden_nodes)),
      want_counts_(scratch_.want_counts),
      free_bits_(scratch_.free_bits),
      in_tops_(WithinDomainAboveNode(request_) || by_leaf_),
      count_nodes_(CountsCanRefuse(request_)),
      counts_(scratch_.counts),
      track_(in_tops_ && count_nodes_ && request_.min_busbw_gbs > 0 && s.config.placement == PlacementMode::kTopology),
      walk_prints_(scratch_.prints),
      tracked_{Tracked{false, scratch_.gained_mark[0], scratch_.gained[0]},
               Tracked{false, scratch_.gained_mark[1], scratch_.gained[1]}},
      live_tops_(scratch_.live),
      in_window_(scratch_.in_window),
      released_(scratch_.released),
      gpus_(scratch_.gpus),
      others_(scratch_.others),
      own_(own == OwnBlock::kHide ? nullptr : pass.FindPromise(job.spec.id)),
      own_fits_(own_ && !request_.exclusive && own_->gpus.size() == n) {
  if (floored_) {
    for (size_t i = 0; i < pass_.walk_floors.size(); ++i) {
      const PassState::WalkFloor& f = pass_.walk_floors[i];
      if (f.partitions == partitions_ && f.w <= w_ && f.request == request_ && f.t > floor_) {
        floor_ = f.t;
        floor_from_ = i;
      }
    }
    s_.floored_walks += floor_ > now_;
  }
  scratch_.walk_releases.gen = 0;
  if (WithinDomainAboveNode(request_)) {
    DomainsUpTo(topo_, request_.level, scratch_.tops);
  } else if (by_leaf_) {
    DomainsUpTo(topo_, Level::kLeaf, scratch_.tops);
  } else {
    scratch_.tops.clear();
  }
  wi_->Block({});  // kPromised
  wanted_.resize(topo_.gpu_count(), 0);
  free_count_ = topo_.free_gpus(topo_.root());
  GpuBits(topo_, pass_);
  // The most wants one GPU can have: every reservation as often as it lists a GPU, and the
  // filter (as often as it lists one).
  size_t most_wants = forbidden_.size();
  for (size_t i = 0; i < reservations_.size(); ++i) most_wants += res_words_[i].most;
  held_.assign(words_, 0);
  want_counts_.Reset(words_, most_wants);
  free_bits_.assign(pass_.free_now_bits.begin(), pass_.free_now_bits.end());
  plan_ = n_ > topo_.max_gpus_per_node() && request_.fit == FitMode::kRequire && request_.level > Level::kNode &&
                  !(track_ && s_.config.reserve_shortcuts)
              ? Plan(s_, pass_)
              : nullptr;
  per_top_ = [&] {
    if (!track_ || !s_.config.reserve_shortcuts) return false;
    const uint32_t total = request_.TotalGpus();
    if (total <= topo_.max_gpus_per_node() && (s_.Best(total).busbw_gbs >= s_.placer->max_gpu_link_gbs() ||
                                               !s_.placer->best_fit() || s_.placer->node_fit_tolerance() >= 1.0))
      return false;
    if (!s_.DepthsByLevel(total)) return false;
    return std::all_of(scratch_.tops.begin(), scratch_.tops.end(),
                       [&](DomainId d) { return topo_.domain(d).parent == topo_.domain(scratch_.tops[0]).parent; });
  }();
  asked_ = per_top_ ? remembered_ : std::nullopt;
  prints_ = asked_ && !pass_.user_gpu_limits &&
            std::all_of(job_.partition_ids.begin(), job_.partition_ids.end(),
                        [&](uint32_t i) { return s_.partitions.at(i).all_nodes; });
  live_tops_.Begin(per_top_ ? scratch_.tops.size() : 0);
  if (track_) {
    for (Tracked& tr : tracked_) {
      tr.marked.assign(scratch_.tops.size(), 0);
      tr.gained.clear();
    }
  }
  in_window_.assign(reservations_.size(), 0);
  ByWord(forbidden_, [this](uint32_t w, uint64_t m) { WantBits(w, m); });
  if (count_nodes_) {
    const DomainId root = topo_.root();
    counts_.Begin(topo_, in_tops_ ? std::span<const DomainId>(scratch_.tops) : std::span<const DomainId>(&root, 1));
    for (uint32_t w = 0; w < words_; ++w) CountChange(w, free_bits_[w] & ~held_[w], true);
    counting_ = true;
  }
  if (prints_) {
    // The fingerprints of the Topology as it is (the start blocks given back, nothing held), and
    // the change to the state at the walk's first time: the GPUs free now but held (-w/-x/-C).
    walk_prints_.Begin(topo_, scratch_.tops);
    for (uint32_t w = 0; w < words_; ++w) {
      for (uint64_t b = pass_.free_now_bits[w] ^ (free_bits_[w] & ~held_[w]); b != 0; b &= b - 1) {
        const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
        walk_prints_.FlipGpu(topo_, counts_.DomainOf(topo_.node_of(GpuId(g)).value), GpuId(g));
      }
    }
    printing_ = true;
  }
  released_.clear();
  others_.clear();
}

Walk::~Walk() {
  walk_prints_.End();                                          // the load changes all zero again
  if (counted_) std::fill(wanted_.begin(), wanted_.end(), 0);  // only a live walk counts
}

std::optional<Reservation> Walk::Run() {
  if (!JumpToFloor()) return std::nullopt;
  for (std::optional<Time> candidate; (candidate = times_.Next());) {
    Time t = *candidate;
    if (t < now_) continue;
    if (plan_) {
      const std::optional<Time> planned = PlannedFrom(t);
      if (!planned) {
        Ended(kForever);
        return std::nullopt;
      }
      t = *planned;
    }
    Advance(t);
    if (std::optional<Placement> p = BlockAt(t)) return Made(t, *p);
  }
  KeepReleases(next_);
  Ended(kForever);
  return std::nullopt;
}

bool Walk::JumpToFloor() {
  if (!(floor_ > now_ && !plan_)) return true;
  // No step before the floor asks the Placer (PassState::WalkFloor), so what such a step can
  // take is the job's own block alone (a block of the request would have ended the floor's
  // walk there, but the block kept from the last pass may have been planned for another
  // shape). When that block is not free before the floor either, the walk starts at the
  // floor, in the state the steps before it would have left: the releases before it made
  // (those the floor's walk had made: it made none after the floor), and the reservations
  // over its window held. The step at the floor then runs as any other. Under a long queue
  // most walks have a floor (each reservation pushes the next walk of the same request
  // later), and spent most of their steps before it (the whole Philly trace at 6x: 423 of 517
  // million steps of the walks that are not for a good block; Philly's saturation window at 6x:
  // 34 of 43 million steps of those for a good block, and 34 of 43 million of their releases).
  const std::optional<Time> own_free = own_fits_ ? FreeFrom(s_, pass_, own_->gpus) : kForever;
  if (!own_free || times_.From(*own_free) < floor_) return true;
  ++s_.floor_jumps;
  const Time to = times_.From(floor_);
  if (to == kForever) {
    Ended(kForever);
    return false;
  }
  const size_t upto = times_.SkipTo(to);  // the releases before `to`
  // The releases the floor's walk had made, if none after those at `to` (those at `to` are the
  // step's first work there).
  const PassState::ReleaseSnapshot& kept = pass_.walk_floors[floor_from_].releases;
  if (kept.gen == pass_.release_gen && kept.prints == prints_ &&
      (kept.next <= upto || ends_[kept.next - 1].first == to)) {
    // Nothing is held yet (a floored walk has no node filter): every GPU they freed counts.
    for (uint32_t w = 0; w < words_; ++w) {
      const uint64_t freed = kept.free_bits[w] & ~free_bits_[w];
      free_count_ += static_cast<uint32_t>(std::popcount(freed));
      if (counting_) CountChange(w, freed, true);
    }
    ++s_.floor_releases_kept;
    free_bits_.assign(kept.free_bits.begin(), kept.free_bits.end());
    released_.assign(kept.released.begin(), kept.released.end());
    next_ = kept.next;
    // A walk for a good block keeps more: the released jobs listed by domain (no domain is brought
    // to t before the floor), and their load changes for the fingerprints. Which domains gained
    // GPUs since the last search (`tracked_`) is not needed: no search was made before the floor.
    if (per_top_) {
      ++s_.floor_tops_kept;
      for (size_t k = 0; k < next_; ++k) {
        const PassState::ReleaseWords*& slot = pass_.ends_words[k];
        if (!slot) slot = &JobReleaseWords(topo_, pass_, ends_[k].second);
        if (slot->has_gpus) ListReleased(*slot, live_tops_.Released(slot));
      }
    }
    if (prints_) walk_prints_.TakeLoads(kept.loads);
  }
  while (next_ < upto) Release(next_++);
  for (; left_ < by_end_.size() && reservations_[by_end_[left_]].end <= to; ++left_) in_window_[by_end_[left_]] = 2;
  for (; entered_ < by_start_.size() && reservations_[by_start_[entered_]].start < to + w_; ++entered_) {
    const uint32_t i = by_start_[entered_];
    if (in_window_[i] == 0) {
      in_window_[i] = 1;
      Enter(i);
    }
  }
  return true;
}

std::optional<Time> Walk::PlannedFrom(Time t) {
  const auto c = plan_->EarliestBlock(max_level_, n_, w_, t, Level::kNode);
  if (!c) return std::nullopt;
  std::optional<Time> candidate = t;
  while (candidate && *candidate < c->first) candidate = times_.Next();
  return candidate;
}

void Walk::Advance(Time t) {
  if (live_ || track_) wi_->Empty(kPromised);
  if (live_) CountWants();
  while (next_ < ends_.size() && ends_[next_].first <= t) Release(next_++);
  for (; left_ < by_end_.size() && reservations_[by_end_[left_]].end <= t; ++left_) {
    const uint32_t i = by_end_[left_];
    if (in_window_[i] == 1) Leave(i);
    in_window_[i] = 2;  // past: never again
  }
  for (; entered_ < by_start_.size() && reservations_[by_start_[entered_]].start < t + w_; ++entered_) {
    const uint32_t i = by_start_[entered_];
    if (in_window_[i] == 0) {
      in_window_[i] = 1;
      Enter(i);
    }
  }
}

std::optional<Placement> Walk::BlockAt(Time t) {
  if ((live_ ? live_topo_->free_gpus(live_topo_->root()) : free_count_) < n_) return std::nullopt;
  // Stability keeps conservative backfill's promises: the job's own block from the last pass
  // if it is free at t; else a block that avoids those promised to jobs not re-planned yet;
  // else any block. Whether the own block is free at t needs no Topology: free at t and
  // not held.
  std::optional<Placement> p;
  if (own_fits_ && !live_ &&
      std::all_of(own_->gpus.begin(), own_->gpus.end(), [&](GpuId g) { return FreeAt(g) && !IsHeld(g); })) {
    p = Placement{own_->gpus, {}, {}};  // only the GPUs make the reservation
  }
  if (!p && t < floor_) return std::nullopt;
  if (!p && !live_) {
    // Live, CountsMayHold would refuse this step (below) on the same counts.
    if (count_nodes_ && !counts_.Allow(request_)) return std::nullopt;
    if (!per_top_) GoLive();
  }
  if (!p && live_ && own_fits_ &&
      std::all_of(own_->gpus.begin(), own_->gpus.end(), [&](GpuId g) { return live_topo_->is_free(g); })) {
    p = Placement{own_->gpus, {}, {}};
  }
  // Both Placer calls below would fail when the counts alone say so (the first holds more).
  if (!p && live_ && !CountsMayHold(*live_topo_, request_, scratch_.tops)) return std::nullopt;
  if (!p && track_) return SearchTracked();
  if (!p && complete_) {
    p = s_.PlaceOn(*live_topo_, *live_placer_, job_, request_);
    if (!p) return std::nullopt;
    BuildOthers();
    wi_->Extend(kPromised, others_);
    if (!wi_->empty(kPromised) && CountsMayHold(*live_topo_, request_, scratch_.tops)) {
      if (auto a = s_.PlaceOn(*live_topo_, *live_placer_, job_, request_)) p = std::move(a);
    }
  }
  if (!p) {
    BuildOthers();
    wi_->Extend(kPromised, others_);
    if (CountsMayHold(*live_topo_, request_, scratch_.tops)) p = s_.PlaceOn(*live_topo_, *live_placer_, job_, request_);
  }
  if (!p && !wi_->empty(kPromised)) {
    wi_->Empty(kPromised);
    p = s_.PlaceOn(*live_topo_, *live_placer_, job_, request_);
  }
  return p;
}

std::optional<Placement> Walk::SearchTracked() {
  // Searches without the blocks promised to others first: most searches of a walk find nothing,
  // and what finds nothing without them finds nothing with them held. Only when it finds a block
  // are they held (hundreds of GPUs under a long queue, each a Topology change, at every step)
  // and the search with them made (and preferred).
  // The domains each search looks in are brought to t first (the promised blocks are empty
  // here); those the one with the promised blocks held looks in only if it is made. Only the
  // promised GPUs inside domains brought to t are held: no search looks elsewhere.
  std::array<std::vector<uint32_t>, 2>& within = scratch_.within;
  Candidates(tracked_[1], within[1], true);
  for (uint32_t top : within[1]) {
    if (per_top_ && !live_tops_.live(top)) MakeLive(top);
  }
  std::optional<Placement> p = Place(tracked_[1], within[1]);
  if (!p) {
    Searched(tracked_[0], false);
    return std::nullopt;
  }
  Candidates(tracked_[0], within[0], false);
  for (uint32_t top : within[0]) {
    if (per_top_ && !live_tops_.live(top)) MakeLive(top);
  }
  BuildOthers();
  std::vector<GpuId>& held_others = scratch_.others_live;
  held_others.clear();
  for (GpuId g : others_) {
    if (!per_top_ || live_tops_.live(TopOf(g.value))) held_others.push_back(g);
  }
  wi_->Extend(kPromised, held_others);
  if (wi_->empty(kPromised)) {
    Searched(tracked_[0], true);  // the state just searched: a block
  } else if (per_top_ ? !CountsAllow(
                            request_, topo_.max_gpus_per_node(), live_tops_.domains().size(),
                            [&](size_t i, uint32_t f) { return topo_.nodes_with_free(live_tops_.domains()[i], f); },
                            [&](size_t i) { return topo_.free_gpus(live_tops_.domains()[i]); })
                      : !CountsMayHold(*live_topo_, request_, scratch_.tops)) {
    Searched(tracked_[0], false);
  } else if (auto a = Place(tracked_[0], within[0])) {
    p = std::move(a);
  }
  return p;
}

Reservation Walk::Made(Time t, const Placement& p) {
  KeepReleases(next_);
  Ended(t);
  Reservation res{job_.spec.id, t, t + w_, p.gpus};
  res.gpus.insert(res.gpus.end(), p.held.begin(), p.held.end());
  if (s_.config.whole_node_reservations) {
    // Slurm reserves whole nodes.
    std::vector<GpuId> whole;
    for (GpuId g : res.gpus) {
      const Domain& node = topo_.domain(topo_.node_domain(topo_.node_of(g)));
      for (uint32_t i = node.first_gpu; i < node.first_gpu + node.gpu_count; ++i) whole.push_back(GpuId(i));
    }
    std::sort(whole.begin(), whole.end());
    whole.erase(std::unique(whole.begin(), whole.end()), whole.end());
    res.gpus = std::move(whole);
  }
  std::sort(res.gpus.begin(), res.gpus.end());
  return res;
}

void Walk::Ended(Time t) {
  if (!floored_) return;
  std::erase_if(pass_.walk_floors, [&](const PassState::WalkFloor& f) {
    return f.partitions == partitions_ && f.w >= w_ && f.t <= t && f.request == request_;
  });
  pass_.walk_floors.push_back({request_, partitions_, w_, t, std::move(scratch_.walk_releases)});
  scratch_.walk_releases = {};
}

void Walk::CountChange(uint32_t w, uint64_t bits, bool freed) {
  for (; bits != 0; bits &= bits - 1) {
    const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
    const uint32_t node = topo_.node_of(GpuId(g)).value;
    if (printing_) walk_prints_.FlipGpu(topo_, counts_.DomainOf(node), GpuId(g));  // free at t, or no longer
    counts_.Change(node, freed);
  }
}

void Walk::Gained(uint32_t g) {
  const uint32_t top = TopOf(g);
  for (Tracked& tr : tracked_) {
    if (tr.failed && !tr.marked[top]) {
      tr.marked[top] = 1;
      tr.gained.push_back(top);
    }
  }
}

void Walk::Searched(Tracked& tr, bool found) {
  if (!track_) return;
  tr.failed = !found;
  std::fill(tr.marked.begin(), tr.marked.end(), 0);
  tr.gained.clear();
}

void Walk::Candidates(const Tracked& tr, std::vector<uint32_t>& out, bool unheld) {
  out.clear();
  auto consider = [&](uint32_t top) {
    if (per_top_ && !counts_.AllowIn(top, request_)) return;
    if (unheld && prints_) {
      const DomainId d = scratch_.tops[top];
      const Topology::Fingerprint at = live_tops_.live(top) ? topo_.fingerprint(d) : walk_prints_.At(top);
      if (s_.placer->KnownMiss(*asked_, d, at)) {
        s_.walk_known_tops += !live_tops_.live(top);
        return;
      }
    }
    out.push_back(top);
  };
  if (!tr.failed) {
    for (uint32_t top = 0; top < scratch_.tops.size(); ++top) consider(top);
  } else {
    for (uint32_t top : tr.gained) consider(top);
  }
}

std::optional<Placement> Walk::Place(Tracked& tr, const std::vector<uint32_t>& within) {
  std::optional<Placement> p;
  if (!within.empty()) {
    std::vector<DomainId>& regions = scratch_.regions;
    regions.clear();
    for (uint32_t top : within) regions.push_back(scratch_.tops[top]);
    p = s_.PlaceOn(*live_topo_, *live_placer_, job_, request_, regions);
  }
  Searched(tr, p.has_value());
  return p;
}

void Walk::WantBits(uint32_t w, uint64_t m) {
  want_counts_.Add(w, m);
  const uint64_t newly = m & ~held_[w];
  held_[w] |= m;
  if (newly != 0) free_count_ -= static_cast<uint32_t>(std::popcount(newly & free_bits_[w]));
  if (counting_) CountChange(w, newly & free_bits_[w], false);
  if (!live_tops_.domains().empty()) {  // held at t in the domains brought to t
    for (uint64_t b = newly & free_bits_[w]; b != 0; b &= b - 1) {
      const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
      if (live_tops_.live(TopOf(g))) wi_->HoldOne(GpuId(g));
    }
  }
}

void Walk::UnwantBits(uint32_t w, uint64_t m) {
  const uint64_t cleared = want_counts_.Remove(w, m);
  held_[w] &= ~cleared;
  if (cleared != 0) free_count_ += static_cast<uint32_t>(std::popcount(cleared & free_bits_[w]));
  if (counting_) CountChange(w, cleared & free_bits_[w], true);
  if (track_) {
    for (uint64_t b = cleared; b != 0; b &= b - 1) {
      const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
      Gained(g);
      if (LiveAt(g)) wi_->UnholdOne(GpuId(g));  // a no-op unless held
    }
  }
}

void Walk::Enter(uint32_t i) {
  if (!live_) {
    for (const auto& [w, m] : res_words_[i].list) WantBits(w, m);
    return;
  }
  for (GpuId g : reservations_[i].gpus) {
    if (wanted_[g.value]++ == 0) wi_->HoldOne(g);
  }
}

void Walk::Leave(uint32_t i) {
  if (!live_) {
    for (const auto& [w, m] : res_words_[i].list) UnwantBits(w, m);
    return;
  }
  for (GpuId g : reservations_[i].gpus) {
    if (--wanted_[g.value] == 0) {
      wi_->UnholdOne(g);
      if (track_) Gained(g.value);
    }
  }
}

uint32_t Walk::PrintTop(DomainId d) const {
  const DomainId at = topo_.print_domain(d);
  const Domain& a = topo_.domain(at);
  const uint32_t top = counts_.DomainOf(a.first_node);
  return a.level == Level::kNode || a.depth >= topo_.domain(scratch_.tops[top]).depth ? top : WalkPrints::kNone;
}

void Walk::Apply(uint32_t r) {
  if (!live_tops_.Apply(r)) return;  // released already
  wi_->ReleaseJob(released_[r]);
  const PassState::ReleaseWords& rw = *live_tops_.words(r);
  for (uint32_t x = rw.begin; x < rw.end; ++x) {
    const auto [w, m] = pass_.release_word_list[x];
    for (uint64_t b = m & held_[w]; b != 0; b &= b - 1) {
      const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
      if (live_tops_.live(TopOf(g))) wi_->HoldOne(GpuId(g));
    }
  }
}

void Walk::MakeLive(uint32_t top) {
  // The jobs listed in it that the Topology has not released yet, released, and held with them
  // (one Topology change, as GoLive's): the wanted GPUs they free in the other domains brought to
  // t (Apply), and the domain's wanted GPUs free at t.
  std::vector<JobId>& jobs = scratch_.to_release;
  std::vector<GpuId>& hold = scratch_.to_hold;
  jobs.clear();
  hold.clear();
  for (uint32_t r : live_tops_.MakeLive(top, scratch_.tops[top])) {
    if (!live_tops_.Apply(r)) continue;
    jobs.push_back(released_[r]);
    const PassState::ReleaseWords& rw = *live_tops_.words(r);
    for (uint32_t x = rw.begin; x < rw.end; ++x) {
      const auto [w, m] = pass_.release_word_list[x];
      for (uint64_t b = m & held_[w]; b != 0; b &= b - 1) {
        const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
        if (const uint32_t in = TopOf(g); in != top && live_tops_.live(in)) hold.push_back(GpuId(g));
      }
    }
  }
  const Domain& d = topo_.domain(scratch_.tops[top]);
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
    if (IsHeld(GpuId(g)) && FreeAt(GpuId(g))) hold.push_back(GpuId(g));  // (held if free once released)
  }
  wi_->ReleaseJobsAndHold(jobs, hold);
  // The fingerprint kept for it is the one it has now (else a miss was looked up in the wrong
  // state: counted, and tests ask for none).
  if (prints_ && !(topo_.fingerprint(scratch_.tops[top]) == walk_prints_.At(top))) ++s_.walk_print_mismatches;
}

void Walk::Release(size_t k) {
  const JobId id = ends_[k].second;
  if (!live_) {
    // Found by its place in `ends_` after the first call of the pass that asks (no lookup).
    const PassState::ReleaseWords*& slot = pass_.ends_words[k];
    if (!slot) slot = &JobReleaseWords(topo_, pass_, id);
    const PassState::ReleaseWords& rw = *slot;
    if (!rw.has_gpus) return;
    released_.push_back(id);
    // Released on a node that is up: free at t.
    for (uint32_t x = rw.begin; x < rw.end; ++x) {
      const auto [w, m] = pass_.release_word_list[x];
      free_bits_[w] |= m;
      free_count_ += static_cast<uint32_t>(std::popcount(m & ~held_[w]));
      if (counting_) CountChange(w, m & ~held_[w], true);
    }
    if (prints_) walk_prints_.Unload(topo_, rw.ring, [this](DomainId d) { return PrintTop(d); });
    if (track_) {
      // Its domains gain GPUs; per_top_, it is also listed in each of them, to be released when
      // that domain is brought to t (now, if one already is).
      if (tracked_[0].failed || tracked_[1].failed) {  // else Gained notes nothing
        for (uint32_t x = rw.begin; x < rw.end; ++x) {
          const auto [w, m] = pass_.release_word_list[x];
          for (uint64_t b = m; b != 0; b &= b - 1) Gained(w * 64 + static_cast<uint32_t>(std::countr_zero(b)));
        }
      }
      if (per_top_) {
        // It lists every job the walk releases, in the same order: as r there too.
        if (const uint32_t r = live_tops_.Released(&rw); ListReleased(rw, r)) Apply(r);
      }
    }
    return;
  }
  const std::span<const GpuId> list = live_topo_->job_gpus(id);  // empty if the Topology has none to give
  if (list.empty()) return;
  gpus_.assign(list.begin(), list.end());  // Suspend hides them from job_gpus
  wi_->ReleaseJob(id);
  for (GpuId g : gpus_) {
    if (topo_.node_state(topo_.node_of(g)) != NodeState::kUp) continue;  // not free: the node takes no work
    if (wanted_[g.value] > 0) wi_->HoldOne(g);
    if (track_) Gained(g.value);
  }
}

bool Walk::ListReleased(const PassState::ReleaseWords& rw, uint32_t r) {
  bool in_live = false;
  uint32_t listed_in = ~uint32_t{0};  // none yet; a job's GPUs come in order, so its domains do too
  for (uint32_t x = rw.begin; x < rw.end; ++x) {
    const auto [w, m] = pass_.release_word_list[x];
    for (uint64_t b = m; b != 0; b &= b - 1) {
      const uint32_t top = TopOf(w * 64 + static_cast<uint32_t>(std::countr_zero(b)));
      in_live = in_live || live_tops_.live(top);
      if (top != listed_in) {
        live_tops_.List(top, r);
        listed_in = top;
      }
    }
  }
  return in_live;
}

void Walk::KeepReleases(size_t made) {
  PassState::ReleaseSnapshot& kept = scratch_.walk_releases;
  if (!floored_ || plan_ || live_ || kept.gen != 0) return;
  kept.gen = pass_.release_gen;
  kept.next = made;
  kept.free_bits.assign(free_bits_.begin(), free_bits_.end());
  kept.released.assign(released_.begin(), released_.end());
  kept.prints = prints_;
  if (prints_) walk_prints_.KeepLoads(kept.loads);  // of the releases made: made is next_
}

void Walk::GoLive() {
  KeepReleases(next_);
  if (complete_ && s_.topo->no_what_if()) {
    // In the twin: only what differs from the last walk's state there changes.
    WalkTwin& twin = s_.Twin();
    twin.Sync(topo_);
    // The wanted GPUs free at t (no GPU frees up during a pass but by a release).
    std::vector<uint64_t>& hold = scratch_.hold_bits;
    hold.resize(words_);
    for (uint32_t w = 0; w < words_; ++w) hold[w] = held_[w] & free_bits_[w];
    twin.what_if.Retarget(released_, hold);
    wi_ = &twin.what_if;
    live_topo_ = &twin.topo;
    live_placer_ = &twin.placer;
    live_ = true;
    return;
  }
  gpus_.clear();  // the wanted GPUs, in order: those free once the jobs are released are held
  for (uint32_t w = 0; w < words_; ++w) {
    for (uint64_t b = held_[w]; b != 0; b &= b - 1)
      gpus_.push_back(GpuId(w * 64 + static_cast<uint32_t>(std::countr_zero(b))));
  }
  wi_->ReleaseJobsAndHold(released_, gpus_);
  live_ = true;
}

void Walk::CountWants() {
  if (counted_) return;
  for (uint32_t w = 0; w < words_; ++w) {
    for (uint64_t b = held_[w]; b != 0; b &= b - 1) {
      const uint32_t bit = static_cast<uint32_t>(std::countr_zero(b));
      wanted_[w * 64 + bit] = want_counts_.Count(w, bit);
    }
  }
  counted_ = true;
}

void Walk::BuildOthers() {
  if (others_built_) return;  // neither changes during the walk
  // The GPUs of the blocks promised to the jobs not planned yet (counted once a pass, then kept
  // by PassState::MarkPlanned), less those only this job's own block lists: the same GPUs held
  // as one Extend per other block.
  std::vector<GpuId>& all = scratch_.promised_gpus;
  std::vector<uint32_t>& count = scratch_.promised_count;
  if (!scratch_.promised_counted) {
    count.assign(topo_.gpu_count(), 0);
    all.clear();
    for (const PassState::Promise& other : pass_.promised) {
      if (other.planned) continue;
      for (GpuId g : other.gpus) {
        if (count[g.value]++ == 0) all.push_back(g);
      }
    }
    scratch_.promised_counted = true;
  }
  // The job's own block counts there while it is not planned (whether it is offered or not).
  const PassState::Promise* own = pass_.FindPromise(job_.spec.id);
  const bool own_counted = own && !own->planned;
  if (own_counted) {
    for (GpuId g : own->gpus) --count[g.value];
  }
  for (GpuId g : all) {
    if (count[g.value] > 0) others_.push_back(g);
  }
  if (own_counted) {
    for (GpuId g : own->gpus) ++count[g.value];
  }
  others_built_ = true;
}

}  // namespace

std::optional<Reservation> Reserve(SchedulerState& s, PassState& pass, const JobRecord& job, OwnBlock own) {
  Topology& topo = *s.topo;
  const Duration w = s.policies.runtime->Run(job);
  const uint32_t n = s.MinLegalSize(job);
  // No reservation can exist when the nodes that take new work cannot hold the job, even empty
  // (e.g. right after a daemon restart, while every node waits for its agent): walking every
  // release time would find nothing, at great cost. Node states do not change during a pass.
  if (!pass.up_gpus) {
    uint32_t usable = 0;
    for (uint32_t i = 0; i < topo.node_count(); ++i) {
      if (topo.node_state(NodeId(i)) == NodeState::kUp) usable += topo.node_gpu_count(NodeId(i));
    }
    pass.up_gpus = usable;
  }
  if (*pass.up_gpus < n) return std::nullopt;
  if (!job.forbidden_nodes.empty() && AllowedGpus(topo, job.forbidden_nodes) < n) return std::nullopt;
  pass.start_blocks.Clear();
  const std::vector<std::pair<Time, JobId>>& ends = Ends(s, pass);
  // The reservations by start and by end, and their bounds among the candidate times.
  ReservationBounds(s, pass);
  return Walk(s, pass, job, w, n, ends, own).Run();
}

void AddReservation(SchedulerState& s, PassState& pass, Reservation r) {
  if (pass.plan) pass.plan_pending.push_back({r.gpus, r.start, r.end});  // added when the plan is next asked
  ++pass.reservations_of[r.job];
  pass.reserved_filter.Add(r.job);
  pass.policy_reservations += !r.for_preemption && !r.for_patience;
  s.reservations.push_back(std::move(r));
  pass.start_blocks.Appended(s.reservations);
}

}  // namespace phalanx
