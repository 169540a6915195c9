#include "core/sched/internal/reserve.h"

#include <algorithm>
#include <array>
#include <bit>
#include <span>
#include <unordered_map>
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

}  // namespace

std::optional<Reservation> Reserve(SchedulerState& s, PassState& pass, const JobRecord& job) {
  const Time now = pass.now;
  Topology& topo = *s.topo;
  const std::vector<Reservation>& reservations = s.reservations;
  const Duration w = s.policies.runtime->Run(job);
  const uint32_t n = s.MinLegalSize(job);
  const PlacementRequest request = SchedulerState::ShapeFor(job, n);
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
  // The Placer (topology mode) searches every set of free GPUs, so holding more GPUs can only
  // take fits away. The simple placers try one choice per domain and check a floor on it alone.
  const bool complete = s.config.placement == PlacementMode::kTopology && s.config.reserve_shortcuts;
  // Where an earlier walk of the pass for the same request ended (PassState::WalkFloor): no
  // time before it is searched, only the job's own block from the last pass is checked there.
  // Ends and ReservationBounds, above, clear the floors first when they no longer hold.
  const bool floored = complete && job.forbidden_nodes.empty() && !pass.user_gpu_limits;
  const uint64_t partitions = PartitionMask(job.partition_ids);
  Time floor = now;
  size_t floor_from = 0;  // the floor's index in walk_floors
  if (floored) {
    for (size_t i = 0; i < pass.walk_floors.size(); ++i) {
      const PassState::WalkFloor& f = pass.walk_floors[i];
      if (f.partitions == partitions && f.w <= w && f.request == request && f.t > floor) {
        floor = f.t;
        floor_from = i;
      }
    }
    s.floored_walks += floor > now;
  }
  PassState::ReserveScratch& scratch = pass.reserve;
  scratch.walk_releases.gen = 0;
  // Notes where this walk ended, with its releases; the floors it makes redundant (same request,
  // no shorter walltime, no later end) go.
  auto ended = [&](Time t) {
    if (!floored) return;
    std::erase_if(pass.walk_floors, [&](const PassState::WalkFloor& f) {
      return f.partitions == partitions && f.w >= w && f.t <= t && f.request == request;
    });
    pass.walk_floors.push_back({request, partitions, w, t, std::move(scratch.walk_releases)});
    scratch.walk_releases = {};
  };
  const std::vector<uint32_t>& by_start = scratch.by_start;
  const std::vector<uint32_t>& by_end = scratch.by_end;
  const std::vector<Time>& bounds = scratch.bounds;
  CandidateTimes times(ends, bounds);  // the times the walk tries, in order

  const Level max_level = request.fit == FitMode::kRequire ? std::max(request.level, Level::kNode) : Level::kCore;
  // Where a job that must fit inside one domain may fit, for CountsMayHold. A good block inside
  // one node (or group) is looked for leaf by leaf, as the Placer does (Placer::Place): the walk
  // tracks those domains as it tracks the domains of a level above the node (`track`, below).
  const std::optional<MissMemory::Key> remembered = Placer::MissKey(request);  // a request with a floor
  const bool by_leaf = !WithinDomainAboveNode(request) && request.fit == FitMode::kRequire &&
                       s.config.placement == PlacementMode::kTopology && remembered.has_value();
  if (WithinDomainAboveNode(request)) {
    DomainsUpTo(topo, request.level, scratch.tops);
  } else if (by_leaf) {
    DomainsUpTo(topo, Level::kLeaf, scratch.tops);
  } else {
    scratch.tops.clear();
  }
  // The state at t: the jobs released by then, and the GPUs of every reservation that overlaps
  // [t, t + w) held while free (more become free as jobs are released). Kept incrementally as t
  // advances: `wanted` counts, per GPU, the overlapping reservations that list it (two may share
  // GPUs at different times), and a GPU is held while its count is above zero and it is free
  // (no running job owns it, or its job is released by t), so each step touches only the
  // reservations that enter or leave the window and the GPUs of the jobs released. Block 0 holds
  // the blocks promised in the last pass to jobs not re-planned yet, made anew at each candidate
  // time.
  //
  // The Topology is changed only from the first time whose free-GPU count is enough for the job
  // (`live`): before it, the walk keeps the count alone (`free_count`, `free_bits`), which is what the
  // skipped times would have checked; most walks try the Placer once, at their last step, so the
  // releases and holds of every earlier step cost array updates, not Topology counters. At that
  // time the Topology is brought to the same state the step-by-step walk would have left (the
  // same jobs released, the same GPUs held; the counters depend only on which), and from there
  // on every step changes it as it goes.
  WhatIf what_if(topo);
  constexpr size_t kPromised = 0;
  what_if.Block({});
  std::vector<uint32_t>& wanted = scratch.wanted;
  wanted.resize(topo.gpu_count(), 0);
  bool live = false;
  // All zero again when the call returns, whichever way (only a live walk uses it).
  struct Zero {
    PassState::ReserveScratch& s;
    const bool& live;
    ~Zero() {
      if (live) std::fill(s.wanted.begin(), s.wanted.end(), 0);
    }
  } zero{scratch, live};
  // Before `live`: the GPUs free at t less those held, as the Topology would count them.
  uint32_t free_count = topo.free_gpus(topo.root());
  // Before `live`, who wants a GPU is kept in bits, 64 GPUs a word, not in `wanted`: `held` =
  // wanted by at least one, and the count itself in `want_counts` (BitCounts), room for every
  // reservation and the job's own filter. Going live turns them back into counts. `free_bits`:
  // free at t (free now, or released by t on a node that is up), from the pass's bits of the
  // GPUs free now.
  const size_t words = (topo.gpu_count() + 63) / 64;
  GpuBits(topo, pass);
  std::vector<uint64_t>& held = scratch.held_bits;
  const std::vector<PassState::ReserveScratch::Words>& res_words = scratch.res_words;  // ReservationBounds
  const std::vector<GpuId> forbidden = NodeFilter::Gpus(topo, job.forbidden_nodes);
  // The most wants one GPU can have: every reservation as often as it lists a GPU, and the
  // filter (as often as it lists one).
  size_t most_wants = forbidden.size();
  for (size_t i = 0; i < reservations.size(); ++i) most_wants += res_words[i].most;
  BitCounts& want_counts = scratch.want_counts;
  std::vector<uint64_t>& free_bits = scratch.free_bits;
  held.assign(words, 0);
  want_counts.Reset(words, most_wants);
  free_bits.assign(pass.free_now_bits.begin(), pass.free_now_bits.end());
  // Before `live`, for a request CountsMayHold can refuse: the GPUs free at t and not held, by
  // node and by domain of `tops` (the root alone when it does not need them; WalkCounts), so the
  // walk goes live only at a step whose counts allow the request (once live, every step changes
  // the Topology). Kept by the three places that change `free_bits` or `held` (below).
  const bool in_tops = WithinDomainAboveNode(request) || by_leaf;
  const bool count_nodes = CountsCanRefuse(request);
  WalkCounts& counts = scratch.counts;
  bool counting = false;
  const bool track =
      in_tops && count_nodes && request.min_busbw_gbs > 0 && s.config.placement == PlacementMode::kTopology;
  // The planner tells, from GPU counts alone, the earliest time some domain the job may live in
  // has n GPUs free for its whole walltime: a necessary condition, so every time it skips would
  // have failed. Each candidate is then checked with the Placer on the what-if state at t.
  // Only multi-node jobs that must fit inside a domain above the node ask it: for a job that
  // fits one node, counts almost never decide, and for a job that may go anywhere the count it
  // would check is the cluster's free GPUs, which the walk below checks at every step anyway
  // (building the plan was a quarter of a pass under long queues, for no skipped step).
  // (Groups are not planned: a job that must fit in a group must fit in its node.)
  // Nor a tracked walk (with SchedulerConfig::reserve_shortcuts): its steps keep each domain's
  // counts in words and search only where they allow the job, so the steps the plan skipped cost
  // less than keeping the plan up to date and asking it (Philly's saturation window: 30.8 s with
  // the plan, 25.3 s without; docs/performance.md, twenty-third round).
  DomainPlanner* plan = n > topo.max_gpus_per_node() && request.fit == FitMode::kRequire &&
                                request.level > Level::kNode && !(track && s.config.reserve_shortcuts)
                            ? Plan(s, pass)
                            : nullptr;
  // A tracked walk brings to t only the domains of `tops` it searches (`per_top`, below; with
  // SchedulerConfig::reserve_shortcuts off the whole Topology goes live, as other walks do). It
  // also keeps the fingerprint each domain of `tops` has at t (`prints`), so that a domain the
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
  const bool per_top = [&] {
    if (!track || !s.config.reserve_shortcuts) return false;
    const uint32_t total = request.TotalGpus();
    if (total <= topo.max_gpus_per_node() && (s.Best(total).busbw_gbs >= s.placer->max_gpu_link_gbs() ||
                                              !s.placer->best_fit() || s.placer->node_fit_tolerance() >= 1.0))
      return false;
    if (!s.DepthsByLevel(total)) return false;
    return std::all_of(scratch.tops.begin(), scratch.tops.end(),
                       [&](DomainId d) { return topo.domain(d).parent == topo.domain(scratch.tops[0]).parent; });
  }();
  const std::optional<MissMemory::Key> asked = per_top ? remembered : std::nullopt;
  const bool prints = asked && !pass.user_gpu_limits &&
                      std::all_of(job.partition_ids.begin(), job.partition_ids.end(),
                                  [&](uint32_t i) { return s.partitions.at(i).all_nodes; });
  WalkPrints& walk_prints = scratch.prints;
  bool printing = false;  // from when the counts below are made
  struct EndPrints {      // the load changes all zero again when the call returns
    WalkPrints& p;
    ~EndPrints() { p.End(); }
  } end_prints{walk_prints};
  auto count_change = [&](uint32_t w, uint64_t bits, bool freed) {
    for (; bits != 0; bits &= bits - 1) {
      const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
      const uint32_t node = topo.node_of(GpuId(g)).value;
      if (printing) walk_prints.FlipGpu(topo, counts.DomainOf(node), GpuId(g));  // free at t, or no longer
      counts.Change(node, freed);
    }
  };
  // A request with a bandwidth floor (placement under pressure: a good block) fails the Placer
  // at most steps of its walk, each a search of every domain of `tops` with enough free GPUs.
  // Once a search has found nothing, a domain of `tops` can hold a fit at a later step only if it
  // gained GPUs since (a release, a hold that ends; a hold that begins only takes), so the next
  // search looks only in those (Placer::PlaceWithin; exact, see there), and none is made while
  // there are none. The two searches of a step (the GPUs promised to others held, and not) are
  // tracked apart. Gains are over-counted (a released GPU that stays held marks its domain too).
  // (The Placer also remembers, across walks and passes, the domains that held no fit by their
  // state, so even the first search of a walk looks only where something changed.)
  //
  // Such a walk (`per_top`) never goes live as a whole: a search looks only inside domains of
  // `tops`, and reads nothing outside the ones it looks in, so only those need the state at t.
  // The walk keeps the counts above (and the fingerprints) at every step: they decide, domain by
  // domain, where a search may find something. A domain is brought to the state at t
  // (live_tops.h: its jobs released by t released, its wanted GPUs held) the first time a search
  // looks in it; from then on the steps change it as they go. Under a long queue most of the jobs
  // a walk releases are in domains no search looks in: going live released them all, and gave
  // them all back at the end (a fifth of the replay of the Philly trace at saturation).
  struct Tracked {
    bool failed = false;  // the last search found nothing; `gained` lists the domains since
    std::vector<uint8_t>& marked;
    std::vector<uint32_t>& gained;  // indexes in `tops`
  };
  std::array<Tracked, 2> tracked{Tracked{false, scratch.gained_mark[0], scratch.gained[0]},
                                 Tracked{false, scratch.gained_mark[1], scratch.gained[1]}};
  LiveTops<const PassState::ReleaseWords*>& live_tops = scratch.live;
  live_tops.Begin(per_top ? scratch.tops.size() : 0);
  if (track) {
    for (Tracked& tr : tracked) {
      tr.marked.assign(scratch.tops.size(), 0);
      tr.gained.clear();
    }
  }
  auto top_of = [&](uint32_t g) { return counts.DomainOf(topo.node_of(GpuId(g)).value); };
  // Whether GPU g's domain of `tops` is brought to t (never, unless per_top).
  auto live_at = [&](uint32_t g) { return per_top && live_tops.live(top_of(g)); };
  auto gained = [&](uint32_t g) {
    const uint32_t top = top_of(g);
    for (Tracked& tr : tracked) {
      if (tr.failed && !tr.marked[top]) {
        tr.marked[top] = 1;
        tr.gained.push_back(top);
      }
    }
  };
  // After a search of tr's state (or one known to find what it would): a block, or none.
  auto searched = [&](Tracked& tr, bool found) {
    if (!track) return;
    tr.failed = !found;
    std::fill(tr.marked.begin(), tr.marked.end(), 0);
    tr.gained.clear();
  };
  // The domains of `tops` tr's next search looks in: all, or those gained since its last search
  // found nothing; either way (per_top) only those whose counts allow the request.
  auto top_allows = [&](uint32_t top) { return counts.AllowIn(top, request); };
  // With the promised blocks given back (`unheld`), a domain the Placer remembers holding no fit
  // in its state at t is left out too (its search would look at nothing else: PlaceWithin).
  auto candidates = [&](const Tracked& tr, std::vector<uint32_t>& out, bool unheld) {
    out.clear();
    auto consider = [&](uint32_t top) {
      if (per_top && !top_allows(top)) return;
      if (unheld && prints) {
        const DomainId d = scratch.tops[top];
        const Topology::Fingerprint at = live_tops.live(top) ? topo.fingerprint(d) : walk_prints.At(top);
        if (s.placer->KnownMiss(*asked, d, at)) {
          s.walk_known_tops += !live_tops.live(top);
          return;
        }
      }
      out.push_back(top);
    };
    if (!tr.failed) {
      for (uint32_t top = 0; top < scratch.tops.size(); ++top) consider(top);
    } else {
      for (uint32_t top : tr.gained) consider(top);
    }
  };
  auto place = [&](Tracked& tr, const std::vector<uint32_t>& within) -> std::optional<Placement> {
    std::optional<Placement> p;
    if (!within.empty()) {
      std::vector<DomainId>& regions = scratch.regions;
      regions.clear();
      for (uint32_t top : within) regions.push_back(scratch.tops[top]);
      p = s.PlaceNow(job, request, regions);
    }
    searched(tr, p.has_value());
    return p;
  };
  // Before `live` (and in a per_top walk, which never goes live as a whole): free at t; held.
  auto free_at = [&](GpuId g) { return (free_bits[g.value >> 6] >> (g.value & 63)) & 1; };
  auto is_held = [&](GpuId g) { return (held[g.value >> 6] >> (g.value & 63)) & 1; };
  auto want_bits = [&](uint32_t w, uint64_t m) {  // before `live`: one more want of each GPU of m
    want_counts.Add(w, m);
    const uint64_t newly = m & ~held[w];
    held[w] |= m;
    if (newly != 0) free_count -= static_cast<uint32_t>(std::popcount(newly & free_bits[w]));
    if (counting) count_change(w, newly & free_bits[w], false);
    if (!live_tops.domains().empty()) {  // held at t in the domains brought to t
      for (uint64_t b = newly & free_bits[w]; b != 0; b &= b - 1) {
        const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
        if (live_tops.live(top_of(g))) what_if.HoldOne(GpuId(g));
      }
    }
  };
  auto unwant_bits = [&](uint32_t w, uint64_t m) {  // before `live`: one want less of each GPU of m
    const uint64_t cleared = want_counts.Remove(w, m);
    held[w] &= ~cleared;
    if (cleared != 0) free_count += static_cast<uint32_t>(std::popcount(cleared & free_bits[w]));
    if (counting) count_change(w, cleared & free_bits[w], true);
    if (track) {
      for (uint64_t b = cleared; b != 0; b &= b - 1) {
        const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
        gained(g);
        if (live_at(g)) what_if.UnholdOne(GpuId(g));  // a no-op unless held
      }
    }
  };
  // Reservations enter the window when t + w passes their start and leave it for good when t
  // reaches their end (t only grows): two cursors, over the reservations by start and by end.
  std::vector<uint8_t>& in_window = scratch.in_window;
  in_window.assign(reservations.size(), 0);
  size_t entered = 0, left = 0;
  auto enter = [&](uint32_t i) {
    if (!live) {
      for (const auto& [w, m] : res_words[i].list) want_bits(w, m);
      return;
    }
    for (GpuId g : reservations[i].gpus) {
      if (wanted[g.value]++ == 0) what_if.HoldOne(g);
    }
  };
  auto leave = [&](uint32_t i) {
    if (!live) {
      for (const auto& [w, m] : res_words[i].list) unwant_bits(w, m);
      return;
    }
    for (GpuId g : reservations[i].gpus) {
      if (--wanted[g.value] == 0) {
        what_if.UnholdOne(g);
        if (track) gained(g.value);
      }
    }
  };
  // -w/-x/-C: the forbidden nodes' GPUs are wanted by the job's own filter for all time, so they
  // are held (counted out before `live`) now and as their jobs release them.
  ByWord(forbidden, want_bits);
  if (count_nodes) {
    const DomainId root = topo.root();
    counts.Begin(topo, in_tops ? std::span<const DomainId>(scratch.tops) : std::span<const DomainId>(&root, 1));
    for (uint32_t w = 0; w < words; ++w) count_change(w, free_bits[w] & ~held[w], true);
    counting = true;
  }
  if (prints) {
    // The fingerprints of the Topology as it is (the start blocks given back, nothing held), and
    // the change to the state at the walk's first time: the GPUs free now but held (-w/-x/-C).
    walk_prints.Begin(topo, scratch.tops);
    for (uint32_t w = 0; w < words; ++w) {
      for (uint64_t b = pass.free_now_bits[w] ^ (free_bits[w] & ~held[w]); b != 0; b &= b - 1) {
        const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
        walk_prints.FlipGpu(topo, counts.DomainOf(topo.node_of(GpuId(g)).value), GpuId(g));
      }
    }
    printing = true;
  }
  // The index in `tops` of the domain whose fingerprint a crossing load at d is part of, if any
  // (none: above every domain of `tops`).
  auto print_top = [&](DomainId d) {
    const DomainId at = topo.print_domain(d);
    const Domain& a = topo.domain(at);
    const uint32_t top = counts.DomainOf(a.first_node);
    return a.level == Level::kNode || a.depth >= topo.domain(scratch.tops[top]).depth ? top : WalkPrints::kNone;
  };
  std::vector<JobId>& released = scratch.released;  // before `live`: the jobs to release when it goes live
  released.clear();
  // Releases job r of a walk that brings domains to t one by one (`per_top`) in the Topology, its
  // GPUs that are wanted held in the domains brought to t: when a domain it is in is brought
  // there.
  auto apply = [&](uint32_t r) {
    if (!live_tops.Apply(r)) return;  // released already
    what_if.ReleaseJob(released[r]);
    const PassState::ReleaseWords& rw = *live_tops.words(r);
    for (uint32_t x = rw.begin; x < rw.end; ++x) {
      const auto [w, m] = pass.release_word_list[x];
      for (uint64_t b = m & held[w]; b != 0; b &= b - 1) {
        const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
        if (live_tops.live(top_of(g))) what_if.HoldOne(GpuId(g));
      }
    }
  };
  // Brings domain `top` of `tops` to the state at t: its jobs released by t released, and its
  // wanted GPUs that are free at t held.
  auto make_live = [&](uint32_t top) {
    for (uint32_t r : live_tops.MakeLive(top, scratch.tops[top])) apply(r);
    const Domain& d = topo.domain(scratch.tops[top]);
    std::vector<GpuId>& hold = scratch.to_hold;
    hold.clear();
    for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) {
      if (is_held(GpuId(g)) && free_at(GpuId(g)) && topo.is_free(GpuId(g))) hold.push_back(GpuId(g));  // not yet
    }
    what_if.HoldEach(hold);
    // The fingerprint kept for it is the one it has now (else a miss was looked up in the wrong
    // state: counted, and tests ask for none).
    if (prints && !(topo.fingerprint(scratch.tops[top]) == walk_prints.At(top))) ++s.walk_print_mismatches;
  };
  std::vector<GpuId>& gpus = scratch.gpus;
  auto release = [&](size_t k) {  // the job of ends[k]
    const JobId id = ends[k].second;
    if (!live) {
      // Found by its place in `ends` after the first call of the pass that asks (no lookup).
      const PassState::ReleaseWords*& slot = pass.ends_words[k];
      if (!slot) slot = &JobReleaseWords(topo, pass, id);
      const PassState::ReleaseWords& rw = *slot;
      if (!rw.has_gpus) return;
      released.push_back(id);
      // Released on a node that is up: free at t.
      for (uint32_t x = rw.begin; x < rw.end; ++x) {
        const auto [w, m] = pass.release_word_list[x];
        free_bits[w] |= m;
        free_count += static_cast<uint32_t>(std::popcount(m & ~held[w]));
        if (counting) count_change(w, m & ~held[w], true);
      }
      if (prints) walk_prints.Unload(topo, rw.ring, print_top);
      if (track) {
        // Its domains gain GPUs; per_top, it is also listed in each of them, to be released
        // when that domain is brought to t (now, if one already is).
        const auto r = static_cast<uint32_t>(released.size() - 1);
        if (per_top) live_tops.Released(&rw);  // as r there too: it lists every job the walk releases
        bool in_live = false;
        uint32_t listed_in = ~uint32_t{0};  // none yet; a job's GPUs come in order, so its domains do too
        for (uint32_t x = rw.begin; x < rw.end; ++x) {
          const auto [w, m] = pass.release_word_list[x];
          for (uint64_t b = m; b != 0; b &= b - 1) {
            const uint32_t g = w * 64 + static_cast<uint32_t>(std::countr_zero(b));
            gained(g);
            if (!per_top) continue;
            const uint32_t top = top_of(g);
            in_live = in_live || live_tops.live(top);
            if (top != listed_in) {
              live_tops.List(top, r);
              listed_in = top;
            }
          }
        }
        if (in_live) apply(r);
      }
      return;
    }
    const std::span<const GpuId> list = topo.job_gpus(id);  // empty if the Topology has none to give
    if (list.empty()) return;
    gpus.assign(list.begin(), list.end());  // Suspend hides them from job_gpus
    what_if.ReleaseJob(id);
    for (GpuId g : gpus) {
      if (topo.node_state(topo.node_of(g)) != NodeState::kUp) continue;  // not free: the node takes no work
      if (wanted[g.value] > 0) what_if.HoldOne(g);
      if (track) gained(g.value);
    }
  };
  // The releases made so far, for the floor this walk leaves (PassState::ReleaseSnapshot): when
  // it goes live or ends, whichever comes first (live, the Topology releases the jobs, not
  // `free_bits` and `released`). Only by a walk of the kind that starts at a floor (below): a
  // later walk for the same request is of the same kind.
  auto keep_releases = [&](size_t made) {
    PassState::ReleaseSnapshot& kept = scratch.walk_releases;
    if (!floored || track || plan || live || kept.gen != 0) return;
    kept.gen = pass.release_gen;
    kept.next = made;
    kept.free_bits.assign(free_bits.begin(), free_bits.end());
    kept.released.assign(released.begin(), released.end());
  };
  size_t next = 0;  // the entries of `ends` released so far
  // The Topology at t as the step-by-step walk leaves it: the jobs released, every wanted GPU
  // that is free held.
  auto go_live = [&]() {
    keep_releases(next);
    gpus.clear();  // the wanted GPUs, in order: those free once the jobs are released are held
    for (uint32_t w = 0; w < words; ++w) {
      for (uint64_t b = held[w]; b != 0; b &= b - 1) {
        const uint32_t bit = static_cast<uint32_t>(std::countr_zero(b));
        const uint32_t g = w * 64 + bit;
        wanted[g] = want_counts.Count(w, bit);
        gpus.push_back(GpuId(g));
      }
    }
    what_if.ReleaseJobsAndHold(released, gpus);
    live = true;
  };
  // The blocks promised to the jobs not re-planned yet, other than this one (made on the first
  // step that asks), and the job's own.
  std::vector<GpuId>& others = scratch.others;
  others.clear();
  bool others_built = false;
  const auto own = pass.promised.find(job.spec.id);
  const bool own_fits = own != pass.promised.end() && !request.exclusive && own->second.size() == n;
  if (floor > now && !track && !plan) {
    // No step before the floor asks the Placer (PassState::WalkFloor), so what such a step can
    // take is the job's own block alone (a block of the request would have ended the floor's
    // walk there, but the block kept from the last pass may have been planned for another
    // shape). When that block is not free before the floor either, the walk starts at the
    // floor, in the state the steps before it would have left: the releases before it made
    // (those the floor's walk had made: it made none after the floor), and the reservations
    // over its window held. The step at the floor then runs as any other. Under a long queue
    // most walks have a floor (each reservation pushes the next walk of the same request
    // later), and spent most of their steps before it (the whole Philly trace at 6x: 423 of 517
    // million steps of the walks that are not for a good block).
    const std::optional<Time> own_free = own_fits ? FreeFrom(s, pass, own->second) : kForever;
    if (own_free && times.From(*own_free) >= floor) {
      ++s.floor_jumps;
      const Time to = times.From(floor);
      if (to == kForever) {
        ended(kForever);
        return std::nullopt;
      }
      const size_t upto = times.SkipTo(to);  // the releases before `to`
      // The releases the floor's walk had made, if none after those at `to` (those at `to` are
      // the step's first work there).
      const PassState::ReleaseSnapshot& kept = pass.walk_floors[floor_from].releases;
      if (kept.gen == pass.release_gen && (kept.next <= upto || ends[kept.next - 1].first == to)) {
        // Nothing is held yet (a floored walk has no node filter): every GPU they freed counts.
        for (uint32_t w = 0; w < words; ++w) {
          const uint64_t freed = kept.free_bits[w] & ~free_bits[w];
          free_count += static_cast<uint32_t>(std::popcount(freed));
          if (counting) count_change(w, freed, true);
        }
        ++s.floor_releases_kept;
        free_bits.assign(kept.free_bits.begin(), kept.free_bits.end());
        released.assign(kept.released.begin(), kept.released.end());
        next = kept.next;
      }
      while (next < upto) release(next++);
      for (; left < by_end.size() && reservations[by_end[left]].end <= to; ++left) in_window[by_end[left]] = 2;
      for (; entered < by_start.size() && reservations[by_start[entered]].start < to + w; ++entered) {
        const uint32_t i = by_start[entered];
        if (in_window[i] == 0) {
          in_window[i] = 1;
          enter(i);
        }
      }
    }
  }
  for (std::optional<Time> candidate; (candidate = times.Next());) {
    Time t = *candidate;
    if (t < now) continue;
    if (plan) {
      const auto c = plan->EarliestBlock(max_level, n, w, t, Level::kNode);
      if (!c) {
        ended(kForever);
        return std::nullopt;
      }
      if (c->first > t) {
        // The first candidate time not before it.
        while (candidate && *candidate < c->first) candidate = times.Next();
        if (!candidate) {
          ended(kForever);
          return std::nullopt;
        }
        t = *candidate;
      }
    }
    if (live || track) what_if.Empty(kPromised);
    while (next < ends.size() && ends[next].first <= t) release(next++);
    for (; left < by_end.size() && reservations[by_end[left]].end <= t; ++left) {
      const uint32_t i = by_end[left];
      if (in_window[i] == 1) leave(i);
      in_window[i] = 2;  // past: never again
    }
    for (; entered < by_start.size() && reservations[by_start[entered]].start < t + w; ++entered) {
      const uint32_t i = by_start[entered];
      if (in_window[i] == 0) {
        in_window[i] = 1;
        enter(i);
      }
    }
    if ((live ? topo.free_gpus(topo.root()) : free_count) < n) continue;
    // Stability keeps conservative backfill's promises: the job's own block from the last pass
    // if it is free at t; else a block that avoids those promised to jobs not re-planned yet;
    // else any block. Whether the own block is free at t needs no Topology: free at t and
    // not held.
    std::optional<Placement> p;
    if (own_fits && !live &&
        std::all_of(own->second.begin(), own->second.end(), [&](GpuId g) { return free_at(g) && !is_held(g); })) {
      p = Placement{own->second, {}, {}};  // only the GPUs make the reservation
    }
    if (!p && t < floor) continue;
    if (!p && !live) {
      // Live, CountsMayHold would refuse this step (below) on the same counts.
      if (count_nodes && !counts.Allow(request)) continue;
      if (!per_top) go_live();
    }
    if (!p && live && own_fits &&
        std::all_of(own->second.begin(), own->second.end(), [&](GpuId g) { return topo.is_free(g); })) {
      p = Placement{own->second, {}, {}};
    }
    // Both Placer calls below would fail when the counts alone say so (the first holds more).
    if (!p && live && !CountsMayHold(topo, request, scratch.tops)) continue;
    auto build_others = [&]() {
      if (others_built) return;  // neither changes during the call
      // One list, each block's GPUs in order, less those an earlier block lists (one Extend
      // per block would find them held by then): the same GPUs held as one Extend per block.
      std::vector<uint8_t>& listed = scratch.listed;
      listed.resize(topo.gpu_count(), 0);
      for (const auto& [other, gpus] : pass.promised) {
        if (other == job.spec.id || pass.planned.contains(other)) continue;
        const size_t from = others.size();
        for (GpuId g : gpus) {
          if (!listed[g.value]) others.push_back(g);
        }
        for (size_t i = from; i < others.size(); ++i) listed[others[i].value] = 1;
      }
      for (GpuId g : others) listed[g.value] = 0;
      others_built = true;
    };
    // Searches without the blocks promised to others first: most searches of a walk find
    // nothing, and what finds nothing without them finds nothing with them held. Only when it
    // finds a block are they held (hundreds of GPUs under a long queue, each a Topology change,
    // at every step) and the search with them made (and preferred, as below).
    if (!p && track) {
      // The domains each search looks in, brought to t first (the promised blocks are empty
      // here); those the one with the promised blocks held looks in only if it is made. Only
      // the promised GPUs inside domains brought to t are held: no search looks elsewhere.
      std::array<std::vector<uint32_t>, 2>& within = scratch.within;
      candidates(tracked[1], within[1], true);
      for (uint32_t top : within[1]) {
        if (per_top && !live_tops.live(top)) make_live(top);
      }
      p = place(tracked[1], within[1]);
      if (!p) {
        searched(tracked[0], false);
        continue;
      }
      candidates(tracked[0], within[0], false);
      for (uint32_t top : within[0]) {
        if (per_top && !live_tops.live(top)) make_live(top);
      }
      build_others();
      std::vector<GpuId>& held_others = scratch.others_live;
      held_others.clear();
      for (GpuId g : others) {
        if (!per_top || live_tops.live(top_of(g.value))) held_others.push_back(g);
      }
      what_if.Extend(kPromised, held_others);
      if (what_if.empty(kPromised)) {
        searched(tracked[0], true);  // the state just searched: a block
      } else if (per_top ? !CountsAllow(
                               request, topo.max_gpus_per_node(), live_tops.domains().size(),
                               [&](size_t i, uint32_t f) { return topo.nodes_with_free(live_tops.domains()[i], f); },
                               [&](size_t i) { return topo.free_gpus(live_tops.domains()[i]); })
                         : !CountsMayHold(topo, request, scratch.tops)) {
        searched(tracked[0], false);
      } else if (auto a = place(tracked[0], within[0])) {
        p = std::move(a);
      }
    } else if (!p && complete) {
      p = s.PlaceNow(job, request);
      if (!p) continue;
      build_others();
      what_if.Extend(kPromised, others);
      if (!what_if.empty(kPromised) && CountsMayHold(topo, request, scratch.tops)) {
        if (auto a = s.PlaceNow(job, request)) p = std::move(a);
      }
    }
    if (!p) {
      build_others();
      what_if.Extend(kPromised, others);
      if (CountsMayHold(topo, request, scratch.tops)) p = s.PlaceNow(job, request);
    }
    if (!p && !what_if.empty(kPromised)) {
      what_if.Empty(kPromised);
      p = s.PlaceNow(job, request);
    }
    if (!p) continue;
    keep_releases(next);
    ended(t);
    Reservation res{job.spec.id, t, t + w, p->gpus};
    res.gpus.insert(res.gpus.end(), p->held.begin(), p->held.end());
    if (s.config.whole_node_reservations) {
      // Slurm reserves whole nodes.
      std::vector<GpuId> whole;
      for (GpuId g : res.gpus) {
        const Domain& node = topo.domain(topo.node_domain(topo.node_of(g)));
        for (uint32_t i = node.first_gpu; i < node.first_gpu + node.gpu_count; ++i) whole.push_back(GpuId(i));
      }
      std::sort(whole.begin(), whole.end());
      whole.erase(std::unique(whole.begin(), whole.end()), whole.end());
      res.gpus = std::move(whole);
    }
    std::sort(res.gpus.begin(), res.gpus.end());
    return res;
  }
  keep_releases(next);
  ended(kForever);
  return std::nullopt;
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
