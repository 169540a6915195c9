// The inputs Reserve's walk reads, made once per pass and kept from pass to pass where they
// stay the same: the sorted release times of the running jobs and the plan of GPU counts over
// time per domain (reserve_inputs.h).
#include "core/sched/internal/reserve_inputs.h"

#include <algorithm>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/planner/domain_planner.h"
#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/scheduler_state.h"

namespace phalanx {

namespace {

// One allocation the plan of a pass holds: the GPUs pool[begin, begin + size) over [start, end).
struct PlanWant {
  Time start, end;
  uint32_t begin, size;
};

uint64_t PlanHash(Time start, Time end, std::span<const GpuId> gpus) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  mix(static_cast<uint64_t>(start));
  mix(static_cast<uint64_t>(end));
  for (GpuId g : gpus) mix(g.value);
  return h;
}

}  // namespace

// Release times of the active jobs, sorted; built on first use in a pass (StartJob and
// preemptions keep or invalidate them).
//
// Sorting them all again in every pass that reserves was a sixth of a Slurm-like replay under
// long queues, while from one build to the next few change: a running job's release time moves
// only when it starts, becomes overdue (it is then `now`), is suspended or checkpoints. So a
// job whose release time is the one the last build listed takes its place from there (in rank
// order those are sorted: they were, with the same keys), the others (new, changed, outside
// load) are sorted alone, and the two merge: the same list as a sort of all (the keys are
// distinct: one per job or outside piece).
const std::vector<std::pair<Time, JobId>>& Ends(SchedulerState& s, PassState& pass) {
  if (pass.ends_dirty) {
    SchedulerState::EndsOrder& o = s.ends_order;
    const uint64_t last = o.builds;
    const uint64_t build = ++o.builds;
    o.kept.assign(o.last_size, {0, kNoJob, nullptr});
    o.changed.clear();
    for (const auto& [id, job] : s.active.Walk()) {
      const Time t = s.ReleaseTime(*job);
      // (The place is checked to be free: a record copied from another Scheduler carries its
      // marks. The kept entries are checked to be in order below, for the same reason.)
      if (last != 0 && job->ends_build == last && job->ends_release == t && job->ends_rank < o.kept.size() &&
          o.kept[job->ends_rank].id == kNoJob) {
        o.kept[job->ends_rank] = {t, id, job};
      } else {
        o.changed.push_back({t, id, job});
      }
    }
    // Load from outside (Slurm's own jobs): free at its end; one past its end, a little later.
    for (const auto& [node, load] : s.external) {
      for (uint32_t k = 0; k < load.pieces.size(); ++k) {
        o.changed.push_back(
            {std::max(load.pieces[k].until, pass.now + 1), Topology::ExternalOwner(NodeId(node), k), nullptr});
      }
    }
    using Entry = SchedulerState::EndsOrder::Entry;
    const auto before = [](const Entry& a, const Entry& b) { return a.t != b.t ? a.t < b.t : a.id < b.id; };
    std::erase_if(o.kept, [](const Entry& e) { return e.id == kNoJob; });
    if (!std::is_sorted(o.kept.begin(), o.kept.end(), before)) {
      o.changed.insert(o.changed.end(), o.kept.begin(), o.kept.end());
      o.kept.clear();
    }
    std::sort(o.changed.begin(), o.changed.end(), before);
    o.merged.resize(o.kept.size() + o.changed.size());
    std::merge(o.kept.begin(), o.kept.end(), o.changed.begin(), o.changed.end(), o.merged.begin(), before);
    pass.ends.clear();
    for (uint32_t i = 0; i < o.merged.size(); ++i) {
      const Entry& e = o.merged[i];
      pass.ends.push_back({e.t, e.id});
      if (e.job) {
        e.job->ends_build = build;
        e.job->ends_rank = i;
        e.job->ends_release = e.t;
      }
    }
    o.last_size = o.merged.size();
    pass.ends_words.assign(pass.ends.size(), nullptr);
    pass.ends_dirty = false;
    pass.walk_floors.clear();  // release times may have come earlier (PassState::WalkFloor)
    ++pass.release_gen;
  }
  return pass.ends;
}

const PassState::ReleaseWords& JobReleaseWords(const Topology& topo, PassState& pass, JobId id) {
  auto [it, added] = pass.release_words.try_emplace(id);
  PassState::ReleaseWords& rw = it->second;
  if (added) {
    const std::span<const GpuId> list = topo.job_gpus(id);  // empty if the Topology has none to give
    rw.has_gpus = !list.empty();
    rw.begin = static_cast<uint32_t>(pass.release_word_list.size());
    ByWord(list, [&](uint32_t w, uint64_t m) {
      if ((m &= pass.up_bits[w]) != 0) pass.release_word_list.emplace_back(w, m);  // else: the node takes no work
    });
    rw.end = static_cast<uint32_t>(pass.release_word_list.size());
    rw.ring = topo.job_ring(id);
  }
  return rw;
}

void GpuBits(const Topology& topo, PassState& pass) {
  if (pass.gpu_bits_built) return;
  const size_t words = (topo.gpu_count() + 63) / 64;
  pass.free_now_bits.assign(words, 0);
  pass.up_bits.assign(words, 0);
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    const uint64_t bit = uint64_t{1} << (g & 63);
    if (topo.is_free(GpuId(g))) pass.free_now_bits[g >> 6] |= bit;
    if (topo.node_state(topo.node_of(GpuId(g))) == NodeState::kUp) pass.up_bits[g >> 6] |= bit;
  }
  pass.gpu_bits_built = true;
  ++pass.release_gen;
}

// Each reservation's GPUs as ByWord's calls, and how often it lists one GPU at most; the list
// grows as reservations are appended (a removal clears it: StartJob, ReservationBounds).
void ReservationWords(SchedulerState& s, PassState& pass) {
  const std::vector<Reservation>& reservations = s.reservations;
  PassState::ReserveScratch& scratch = pass.reserve;
  std::vector<PassState::ReserveScratch::Words>& res_words = scratch.res_words;
  scratch.res_by_word.resize((s.topo->gpu_count() + 63) / 64);
  for (size_t i = res_words.size(); i < reservations.size(); ++i) {
    PassState::ReserveScratch::Words& entry = res_words.emplace_back();
    std::vector<uint32_t>& seen = scratch.seen;
    ByWord(reservations[i].gpus, [&](uint32_t w, uint64_t m) {
      entry.list.emplace_back(w, m);
      scratch.res_by_word[w].emplace_back(static_cast<uint32_t>(i), m);
    });
    if (!std::is_sorted(reservations[i].gpus.begin(), reservations[i].gpus.end(),
                        [](GpuId a, GpuId b) { return a.value <= b.value; })) {  // not strictly increasing
      seen.clear();
      for (GpuId g : reservations[i].gpus) seen.push_back(g.value);
      std::sort(seen.begin(), seen.end());
      for (size_t a = 0; a < seen.size();) {
        size_t b = a;
        while (b < seen.size() && seen[b] == seen[a]) ++b;
        entry.most = std::max<uint32_t>(entry.most, static_cast<uint32_t>(b - a));
        a = b;
      }
    }
  }
}

void ClearReservationWords(PassState& pass) {
  pass.reserve.res_words.clear();
  for (std::vector<std::pair<uint32_t, uint64_t>>& in : pass.reserve.res_by_word) in.clear();
}

// The reservations by start and by end (ties in any order: entering or leaving the window in
// any order leaves the same counts and the same held GPUs), kept from the last call while the
// reservations it sorted are unchanged (most calls come after one more reservation); and the
// candidate times they give: now and their bounds, merged.
void ReservationBounds(SchedulerState& s, PassState& pass) {
  const std::vector<Reservation>& reservations = s.reservations;
  const Time now = pass.now;
  PassState::ReserveScratch& scratch = pass.reserve;
  std::vector<uint32_t>& by_start = scratch.by_start;
  std::vector<uint32_t>& by_end = scratch.by_end;
  std::vector<std::pair<Time, Time>>& sorted = scratch.sorted_bounds;
  bool valid = sorted.size() <= reservations.size();
  for (size_t i = 0; valid && i < sorted.size(); ++i) {
    valid = sorted[i].first == reservations[i].start && sorted[i].second == reservations[i].end;
  }
  if (!valid) {
    pass.walk_floors.clear();  // a reservation was removed (PassState::WalkFloor)
    sorted.clear();
    by_start.clear();
    by_end.clear();
    ClearReservationWords(pass);
  }
  for (uint32_t i = static_cast<uint32_t>(sorted.size()); i < reservations.size(); ++i) {
    const Reservation& r = reservations[i];
    sorted.emplace_back(r.start, r.end);
    by_start.insert(std::upper_bound(by_start.begin(), by_start.end(), r.start,
                                     [&](Time t, uint32_t j) { return t < reservations[j].start; }),
                    i);
    by_end.insert(std::upper_bound(by_end.begin(), by_end.end(), r.end,
                                   [&](Time t, uint32_t j) { return t < reservations[j].end; }),
                  i);
  }
  ReservationWords(s, pass);
  std::vector<Time>& bounds = scratch.bounds;
  bounds.clear();
  size_t a = 0, b = 0;
  bool now_in = false;
  for (;;) {
    const bool has_a = a < by_start.size(), has_b = b < by_end.size();
    if (!has_a && !has_b) break;
    const bool take_a = has_a && (!has_b || reservations[by_start[a]].start <= reservations[by_end[b]].end);
    const Time next = take_a ? reservations[by_start[a++]].start : reservations[by_end[b++]].end;
    if (!now_in && now <= next) {
      bounds.push_back(now);
      now_in = true;
    }
    bounds.push_back(next);
  }
  if (!now_in) bounds.push_back(now);
}

// The pass's plan of GPU counts over time per domain (running jobs until their release,
// unavailable nodes, reservations); made on first use in a pass. nullptr if inconsistent.
//
// The allocations it holds are a function of the state at that first use alone; the plan
// answers from their GPU counts over [now, kForever) alone (EarliestBlock: the earliest time,
// then the domain, of a count condition), and a set of allocations is refused (some
// AddAllocation fails, in whatever order they are added) exactly when one of them is invalid or
// together they overfill a domain at some time. So a plan kept from an earlier pass, moved to
// `now` (Planner::AdvanceTo: queries at t >= now answer as before), less the allocations not
// wanted now and plus the new ones, answers as one built anew, and is refused when that one is.
DomainPlanner* Plan(SchedulerState& s, PassState& pass) {
  SchedulerState::KeptPlan& kept = s.kept_plan;
  const bool keep = s.config.keep_domain_plan;
  const Time now = pass.now;
  auto fail = [&]() -> DomainPlanner* {
    pass.plan = nullptr;
    pass.own_plan.reset();
    kept.plan.reset();
    kept.entries.clear();
    return nullptr;
  };
  auto add = [&](std::span<const GpuId> gpus, Time start, Time end) {
    Result<AllocationId> id = pass.plan->AddAllocation(gpus, start, end);
    if (!id) return false;
    if (keep) kept.entries.push_back({start, end, std::vector<GpuId>(gpus.begin(), gpus.end()), *id});
    return true;
  };
  if (pass.plan_built) {
    // The reservations made since the last question, as AddReservation would have added them.
    for (const PassState::PlanPending& r : pass.plan_pending) {
      if (pass.plan && !add(r.gpus, r.start, r.end)) fail();
    }
    pass.plan_pending.clear();
    return pass.plan;
  }
  pass.plan_built = true;
  const Topology& topo = *s.topo;
  // What the plan holds, in the order a plan built anew adds it.
  std::vector<GpuId> pool;
  std::vector<PlanWant> wants;
  auto want = [&](std::span<const GpuId> gpus, Time start, Time end) {
    wants.push_back({start, end, static_cast<uint32_t>(pool.size()), static_cast<uint32_t>(gpus.size())});
    pool.insert(pool.end(), gpus.begin(), gpus.end());
  };
  std::vector<GpuId> up, down;
  for (const auto& [id, jp] : s.active.Walk()) {
    const JobRecord& j = *jp;
    up.clear();
    down.clear();
    for (GpuId g : j.gpus) (topo.node_state(topo.node_of(g)) == NodeState::kUp ? up : down).push_back(g);
    const Time end = s.ReleaseTime(j);
    if (!up.empty() && end > now) want(up, now, end);
    if (!down.empty()) want(down, now, kForever);
  }
  for (const auto& [node, load] : s.external) {
    for (uint32_t k = 0; k < load.pieces.size(); ++k) {
      const auto held = topo.job_gpus(Topology::ExternalOwner(NodeId(node), k));
      const Time end =
          topo.node_state(NodeId(node)) == NodeState::kUp ? std::max(load.pieces[k].until, now + 1) : kForever;
      if (!held.empty()) want(held, now, end);
    }
  }
  std::vector<GpuId> unavailable;
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    if (topo.owner(GpuId(g)) == kNoJob && !topo.is_free(GpuId(g))) unavailable.push_back(GpuId(g));
  }
  if (!unavailable.empty()) want(unavailable, now, kForever);
  for (const Reservation& r : s.reservations) {
    // Preemption claims overlap their victims' running allocations; leaving them out keeps
    // the plan optimistic, which is all a filter needs.
    if (!r.for_preemption) want(r.gpus, r.start, r.end);
  }
  auto gpus_of = [&](const PlanWant& w) { return std::span<const GpuId>(pool).subspan(w.begin, w.size); };
  if (!keep) {
    pass.own_plan.emplace(topo, now);
    pass.plan = &*pass.own_plan;
    for (const PlanWant& w : wants) {
      if (!add(gpus_of(w), w.start, w.end)) return fail();
    }
    return pass.plan;
  }
  // The kept plan: moved to now (allocations that ended are gone, the others start at now at
  // the earliest), then each wanted allocation matched with one it holds (the same GPUs in the
  // same order, start and end); those left unmatched are removed, those wanted and not held added.
  std::vector<uint32_t> missing;
  bool rebuild = !kept.plan;
  if (!rebuild) {
    kept.plan->AdvanceTo(now);
    std::erase_if(kept.entries, [&](const SchedulerState::KeptPlan::Entry& e) { return e.end <= now; });
    std::unordered_multimap<uint64_t, uint32_t> index;
    index.reserve(kept.entries.size());
    for (uint32_t i = 0; i < kept.entries.size(); ++i) {
      SchedulerState::KeptPlan::Entry& e = kept.entries[i];
      e.start = std::max(e.start, now);
      index.emplace(PlanHash(e.start, e.end, e.gpus), i);
    }
    std::vector<uint8_t> matched(kept.entries.size(), 0);
    for (uint32_t k = 0; k < wants.size(); ++k) {
      const PlanWant& w = wants[k];
      const std::span<const GpuId> gpus = gpus_of(w);
      bool found = false;
      for (auto [it, last] = index.equal_range(PlanHash(w.start, w.end, gpus)); it != last && !found; ++it) {
        const SchedulerState::KeptPlan::Entry& e = kept.entries[it->second];
        if (!matched[it->second] && e.start == w.start && e.end == w.end &&
            std::equal(e.gpus.begin(), e.gpus.end(), gpus.begin(), gpus.end())) {
          matched[it->second] = 1;
          found = true;
        }
      }
      if (!found) missing.push_back(k);
    }
    size_t to = 0;
    for (size_t i = 0; i < kept.entries.size() && !rebuild; ++i) {
      if (!matched[i]) {
        rebuild = !kept.plan->Remove(kept.entries[i].id);  // cannot fail: the entries are what it holds
        continue;
      }
      if (to != i) kept.entries[to] = std::move(kept.entries[i]);
      ++to;
    }
    kept.entries.resize(std::min(to, kept.entries.size()));
  }
  if (rebuild) {
    kept.plan.emplace(topo, now);
    kept.entries.clear();
    missing.resize(wants.size());
    for (uint32_t k = 0; k < wants.size(); ++k) missing[k] = k;
  }
  pass.plan = &*kept.plan;
  for (uint32_t k : missing) {
    if (!add(gpus_of(wants[k]), wants[k].start, wants[k].end)) return fail();
  }
  return pass.plan;
}

}  // namespace phalanx
