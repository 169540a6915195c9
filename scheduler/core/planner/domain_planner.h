// DomainPlanner: GPU counts over time for every domain of a Topology at node level and above
// (optionally NVLink/PCIe groups too): one Planner per domain, whose total is the domain's GPU
// count. An allocation (a running job or a future reservation: GPUs over [start, end)) adds one
// span to every planned domain above its GPUs, with the number of its GPUs below that domain.
// It answers "when does a single domain of a level have N GPUs free for D seconds?" so that
// backfill can reserve a whole leaf for a 64-GPU job; the placer then checks each candidate
// with the real GPUs (counts free in a domain do not guarantee a good placement inside it).
//
// The structure of the topology (tree, levels, GPU counts, names) is copied at construction;
// the Topology's own state (owners, node states) is never read: the caller mirrors it here.
// A node that goes down is an allocation of its GPUs until kForever (after removing the
// allocations of the jobs it killed); a drained node's GPUs are allocated until kForever from
// the end of the job holding each.
//
// Complexity, P = points of one domain's planner, B = busy stretches skipped by one search,
// E = planned domains with an eligible level and at least the requested GPUs:
//   AddAllocation(k GPUs)          O(k log k + k depth log A + A log P), A = planned domains
//                                  above those GPUs
//   Remove                         O(A log P)
//   EarliestBlock, NextBlock       O(E (1 + B) log P) worst case; domains are tried by size
//                                  and each search stops at the best time found so far, and
//                                  EarliestBlock stops at once when a domain fits at `at`.
//   AdvanceTo                      sum of the planners' AdvanceTo, plus O(log) per allocation
//
// Contract: a call that fails returns an Error and changes nothing. Copyable. Thread-safety:
// none; const methods may run concurrently with each other, never with a mutating call.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/common/ids.h"
#include "core/common/result.h"
#include "core/common/time.h"
#include "core/planner/planner.h"
#include "core/topology/level.h"
#include "core/topology/topology.h"

namespace phalanx {

// Names one allocation of one DomainPlanner; ids are never reused. 0 is never an allocation.
struct AllocationId {
  uint64_t value = 0;
  friend constexpr auto operator<=>(AllocationId, AllocationId) = default;
};

struct DomainPlannerOptions {
  bool include_groups = false;  // also plan Level::kGroup domains (NVLink islands, PCIe switches)
};

// A domain and the time from which it has the requested GPUs free long enough.
using BlockCandidate = std::pair<Time, DomainId>;

class DomainPlanner {
 public:
  DomainPlanner(const Topology& topology, Time origin, DomainPlannerOptions options = {});

  Time origin() const { return origin_; }
  size_t allocation_count() const { return allocations_.size(); }
  // The planner of domain `d`; nullptr when `d` is not planned (GPU level, groups unless
  // included, or not a domain of the topology).
  const Planner* planner(DomainId d) const;

  // Holds `gpus` over [start, end). Fails, changing nothing, when `gpus` is empty, names an
  // unknown or repeated GPU, end <= start, start < origin(), end > kForever, or some planned
  // domain above the GPUs has fewer free than it needs somewhere in the window (the error
  // names the domain).
  Result<AllocationId> AddAllocation(std::span<const GpuId> gpus, Time start, Time end);
  // Frees an allocation. Fails only on an unknown id (never added, removed, or ended by
  // AdvanceTo).
  Status Remove(AllocationId allocation);

  // The earliest time t >= max(at, origin()) at which one planned domain with a level in
  // [min_level, max_level] has `gpus` free during [t, t + duration); among domains tied at t,
  // the one with the fewest GPUs, then the lowest id (best fit). nullopt when no domain ever
  // does (too small everywhere, capacity lost until kForever) or gpus == 0 or duration < 1.
  std::optional<BlockCandidate> EarliestBlock(Level max_level, uint32_t gpus, Duration duration, Time at,
                                              Level min_level = Level::kNode) const;

  // The candidates of one query, in order (time, then domain GPU count, then domain id): for
  // each eligible domain, its AvailTimeFirst and then each later point of its planner at which
  // the GPUs fit (Planner::AvailTimeNext). EarliestBlock is the first; NextBlock returns the one
  // right after `after` (which need not be a candidate itself; an invalid domain there orders
  // before every domain). Loop until the placer accepts one or nullopt. Stateless: valid across
  // mutations, each call re-searches.
  std::optional<BlockCandidate> NextBlock(Level max_level, uint32_t gpus, Duration duration, Time at,
                                          BlockCandidate after, Level min_level = Level::kNode) const;

  // Moves every planner to `now` (see Planner::AdvanceTo); allocations ending at or before
  // `now` are dropped and their ids become unknown.
  void AdvanceTo(Time now);

 private:
  struct Allocation {
    Time end = 0;
    std::vector<std::pair<uint32_t, SpanId>> spans;  // (planner index, span)
  };
  // Position of domain `d` in the best-fit order: (GPU count, id).
  std::pair<uint32_t, uint32_t> OrderKey(DomainId d) const { return {gpu_total_[d.value], d.value}; }
  bool Eligible(uint32_t p, Level min_level, Level max_level) const;

  Time origin_;
  std::vector<DomainId> parent_;      // per domain
  std::vector<uint32_t> gpu_total_;   // per domain
  std::vector<Level> level_;          // per domain
  std::vector<std::string> name_;     // per domain, for errors
  std::vector<DomainId> gpu_domain_;  // per GPU: its GPU-level domain
  std::vector<int32_t> slot_;         // per domain: index into planners_, -1 if not planned
  std::vector<Planner> planners_;
  std::vector<DomainId> planned_;  // per planner: its domain
  std::vector<uint32_t> order_;    // planner indices by (GPU count, domain id)
  uint64_t next_allocation_ = 1;
  std::map<uint64_t, Allocation> allocations_;
  std::set<std::pair<Time, uint64_t>> by_end_;  // (end, id), for AdvanceTo
};

}  // namespace phalanx
