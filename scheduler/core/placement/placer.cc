#include "core/placement/placer.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <memory>
#include <optional>
#include <span>

#include "core/placement/placement_counts.h"

namespace phalanx {

std::string_view PlaceStatusName(PlaceStatus status) {
  switch (status) {
    case PlaceStatus::kPlaced: return "placed";
    case PlaceStatus::kBusy: return "busy";
    case PlaceStatus::kUnsatisfiable: return "unsatisfiable";
  }
  return "busy";
}

namespace {

// Largest number of GPUs a job may use without crossing disconnected trees.
uint32_t ConnectedMax(const Topology& t) {
  const Domain& root = t.domain(t.root());
  if (root.kind != "disconnected") return root.gpu_count;
  uint32_t best = 0;
  for (DomainId c : t.children(t.root())) best = std::max(best, t.domain(c).gpu_count);
  return best;
}

}  // namespace

Placer::Placer(const Topology& topology, ModelParams params)
    : topo_(topology),
      model_(topology, params),
      max_gpu_cap_(topology.domain_count(), 0),
      max_lanes_(topology.domain_count(), 0),
      max_lane_cap_(topology.domain_count(), 0),
      level_max_gpus_(kLevelCount, 0),
      connected_max_(ConnectedMax(topology)),
      nodes_with_at_least_(topology.max_gpus_per_node() + 1, 0),
      misses_(topology),
      tops_(kLevelCount) {
  for (uint32_t i = 0; i < topology.node_count(); ++i) {
    for (uint32_t g = 0; g <= topology.node_gpu_count(NodeId(i)) && g < nodes_with_at_least_.size(); ++g)
      ++nodes_with_at_least_[g];
  }
  // Domains are numbered in pre-order, so children come after parents: walk backwards.
  for (size_t i = topology.domain_count(); i-- > 0;) {
    const DomainId d(static_cast<uint32_t>(i));
    const Domain& dom = topology.domain(d);
    if (dom.level == Level::kGpu) max_gpu_cap_[i] = model_.StaticCutCapacity(d, 1);
    if (dom.level == Level::kNode && dom.uplink.lanes > 0) {
      max_lanes_[i] = dom.uplink.lanes;
      max_lane_cap_[i] = dom.uplink.lane_gbs * model_.Efficiency(dom.uplink.type);
    }
    if (dom.parent.valid()) {
      const uint32_t p = dom.parent.value;
      max_gpu_cap_[p] = std::max(max_gpu_cap_[p], max_gpu_cap_[i]);
      max_lanes_[p] = std::max(max_lanes_[p], max_lanes_[i]);
      max_lane_cap_[p] = std::max(max_lane_cap_[p], max_lane_cap_[i]);
    }
    for (int l = static_cast<int>(dom.level); l < kLevelCount; ++l) {
      level_max_gpus_[static_cast<size_t>(l)] = std::max(level_max_gpus_[static_cast<size_t>(l)], dom.gpu_count);
    }
  }
}

std::string Placer::Unsatisfiable(const PlacementRequest& r) const {
  const uint32_t n = r.TotalGpus();
  if (r.nodes > 0) {
    if (r.gpus_per_node == 0) return "nodes given without gpus_per_node";
    if (r.gpus != 0 && r.gpus != r.nodes * r.gpus_per_node) {
      return "gpus " + std::to_string(r.gpus) + " != nodes " + std::to_string(r.nodes) + " x gpus_per_node " +
             std::to_string(r.gpus_per_node);
    }
    if (r.gpus_per_node > topo_.max_gpus_per_node()) {
      return std::to_string(r.gpus_per_node) + " GPUs per node requested; the largest node has " +
             std::to_string(topo_.max_gpus_per_node());
    }
    const uint32_t fitting = nodes_with_at_least_[r.gpus_per_node];
    if (fitting < r.nodes) {
      return std::to_string(r.nodes) + " nodes with " + std::to_string(r.gpus_per_node) +
             " GPUs requested; the cluster has " + std::to_string(fitting);
    }
  }
  if (n == 0) return "zero GPUs requested";
  if (n > topo_.gpu_count())
    return std::to_string(n) + " GPUs requested; the cluster has " + std::to_string(topo_.gpu_count());
  if (n > connected_max_) {
    return std::to_string(n) + " GPUs requested; the largest connected part of the cluster has " +
           std::to_string(connected_max_);
  }
  if (r.fit == FitMode::kRequire) {
    const uint32_t max = level_max_gpus_[static_cast<size_t>(r.level)];
    if (n > max) {
      return std::to_string(n) + " GPUs requested within one " + std::string(LevelName(r.level)) +
             "; the largest has " + std::to_string(max);
    }
    if (r.nodes > 1 && r.level < Level::kNvlDomain) {
      return std::to_string(r.nodes) + " nodes cannot fit within one " + std::string(LevelName(r.level));
    }
  }
  return {};
}

// One placement search. Holds the scratch state of the threshold search described in
// docs/placement.md: for a candidate region X and a bandwidth threshold B, Ach(D) is the set of
// GPU counts that can be placed in D so that every uplink crossed inside the region offers >= B.
class Placer::Search {
 public:
  // Run's answer when no region is left to search (every one is known to hold no fit).
  PlaceOutcome NothingToSearch() const {
    if (std::optional<PlaceOutcome> out = Refused()) return std::move(*out);
    return NoBlock();
  }

  // Candidates are looked for inside `regions` only (none: nothing is found).
  Search(const Placer& placer, const PlacementRequest& request, std::span<const DomainId> regions)
      : p_(placer),
        t_(placer.topo_),
        m_(placer.model_),
        r_(request),
        n_(request.TotalGpus()),
        regions_(regions),
        words_((n_ + 64) / 64),
        slot_(placer.memo_slot_),
        dirty_(placer.memo_dirty_),
        pool_(placer.memo_pool_) {
    if (slot_.size() != t_.domain_count()) slot_.assign(t_.domain_count(), -1);
  }
  ~Search() { ResetMemo(); }

  PlaceOutcome Run() {
    if (std::optional<PlaceOutcome> out = Refused()) return std::move(*out);
    bool found = false;
    if (r_.fit == FitMode::kPrefer) found = SearchAll(r_.level);
    if (!found) found = SearchAll(r_.fit == FitMode::kAny || r_.fit == FitMode::kPrefer ? Level::kCore : r_.level);
    if (!found || best_.busbw_gbs < r_.min_busbw_gbs) return NoBlock();
    PlaceOutcome out;
    out.status = PlaceStatus::kPlaced;
    std::sort(best_gpus_.begin(), best_gpus_.end());
    out.placement.gpus = best_gpus_;
    out.placement.prediction = best_;
    if (r_.exclusive) {
      for (GpuId g : best_gpus_) {
        const Domain& node = t_.domain(t_.node_domain(t_.node_of(g)));
        for (uint32_t i = node.first_gpu; i < node.first_gpu + node.gpu_count; ++i) {
          if (!std::binary_search(best_gpus_.begin(), best_gpus_.end(), GpuId(i)))
            out.placement.held.push_back(GpuId(i));
        }
      }
      std::sort(out.placement.held.begin(), out.placement.held.end());
      out.placement.held.erase(std::unique(out.placement.held.begin(), out.placement.held.end()),
                               out.placement.held.end());
    }
    return out;
  }

 private:
  // Unsatisfiable, or too few GPUs free in the whole cluster.
  std::optional<PlaceOutcome> Refused() const {
    PlaceOutcome out;
    if (std::string why = p_.Unsatisfiable(r_); !why.empty()) {
      out.status = PlaceStatus::kUnsatisfiable;
      out.reason = why;
      return out;
    }
    if (t_.free_gpus(t_.root()) < n_) {
      out.status = PlaceStatus::kBusy;
      out.reason =
          "Resources: " + std::to_string(n_) + " GPUs requested, " + std::to_string(t_.free_gpus(t_.root())) + " free";
      return out;
    }
    return std::nullopt;
  }

  PlaceOutcome NoBlock() const {
    PlaceOutcome out;
    out.status = PlaceStatus::kBusy;
    out.reason = "TopologyBlock(" + std::string(LevelName(r_.fit == FitMode::kRequire ? r_.level : Level::kCore)) +
                 "): no free block of " + std::to_string(n_) + " GPUs fits the request now";
    if (r_.min_busbw_gbs > 0) {  // to_chars: a walk for a good block is refused thousands of times
      char floor[32];
      const auto end = std::to_chars(floor, floor + sizeof floor, r_.min_busbw_gbs, std::chars_format::fixed, 1).ptr;
      out.reason.append(" at ").append(floor, end).append(" GB/s or more");
    }
    return out;
  }

  using Bits = std::vector<uint64_t>;
  struct Candidate {
    DomainId domain;
    double upper;
  };

  // ---- candidates ------------------------------------------------------------------------

  bool SearchAll(Level max_level) {
    if (n_ == 1) return PlaceOne(max_level);
    const bool one_node = n_ <= t_.max_gpus_per_node() && r_.nodes <= 1 && max_level >= Level::kNode;
    // Fast path for jobs that fit in one node: the fullest node that can hold them. If it
    // reaches the best GPU link of the whole cluster, nothing can beat it.
    if (one_node) {
      const DomainId node = FullestNodeFitting();
      if (node.valid() && InRegions(node) && EvaluateAll({&node, 1}, max_level) &&
          best_.busbw_gbs >= p_.max_gpu_cap_[t_.root().value])
        return true;
    }
    if (!EvaluateAll(regions_, max_level) && best_gpus_.empty()) return false;
    if (one_node && p_.best_fit_ && p_.node_fit_tolerance_ < 1.0) NodeFitTiers(max_level);
    return true;
  }

  // Node best fit before bandwidth (docs/placement.md, "Jobs that fit in one node"): among the
  // nodes that can hold the job, the one left with the fewest free GPUs whose best placement is
  // within the tolerance of the best placement found anywhere; bandwidth decides among those.
  // Keeps the large (and the better-connected) nodes whole for the jobs that need them.
  void NodeFitTiers(Level max_level) {
    // Never below the request's own floor: the fullest node must still be a fit.
    const double target = std::max(best_.busbw_gbs * p_.node_fit_tolerance_, r_.min_busbw_gbs);
    const Prediction global = best_;
    std::vector<GpuId> global_gpus = best_gpus_;
    for (uint32_t f = n_; f <= t_.max_gpus_per_node(); ++f) {
      if (t_.nodes_with_free(t_.root(), f) == 0) continue;
      best_gpus_.clear();
      best_ = {};
      only_free_ = f;
      const bool found = EvaluateAll(regions_, std::min(max_level, Level::kNode));
      only_free_ = 0;
      if (found && best_.busbw_gbs >= target) return;
    }
    best_ = global;
    best_gpus_ = std::move(global_gpus);
  }

  // Whether `d` lies inside one of the regions searched (always, for Place).
  bool InRegions(DomainId d) const {
    for (; d.valid(); d = t_.domain(d).parent) {
      if (std::find(regions_.begin(), regions_.end(), d) != regions_.end()) return true;
    }
    return false;
  }

  // Evaluates every candidate region in the subtrees of `tops`, best upper bound first.
  bool EvaluateAll(std::span<const DomainId> tops, Level max_level) {
    std::vector<Candidate> cands;
    for (DomainId top : tops) Collect(top, max_level, cands);
    std::sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
      if (a.upper != b.upper) return a.upper > b.upper;
      const Domain &da = t_.domain(a.domain), &db = t_.domain(b.domain);
      if (da.level != db.level) return da.level < db.level;
      const uint32_t fa = t_.free_gpus(a.domain), fb = t_.free_gpus(b.domain);
      if (fa != fb) return p_.best_fit_ ? fa < fb : fa > fb;
      // Then best fit one level up, and the next (the fullest switch first), so that equal
      // candidates fill the domains already in use and whole switches stay free.
      for (DomainId pa = da.parent, pb = db.parent; pa.valid() && pb.valid() && pa != pb;
           pa = t_.domain(pa).parent, pb = t_.domain(pb).parent) {
        const uint32_t ga = t_.free_gpus(pa), gb = t_.free_gpus(pb);
        if (ga != gb) return p_.best_fit_ ? ga < gb : ga > gb;
      }
      return a.domain < b.domain;
    });
    bool found = false;
    for (const Candidate& c : cands) {
      if (!best_gpus_.empty() && c.upper <= best_.busbw_gbs) break;
      if (c.upper < r_.min_busbw_gbs) break;  // upper bounds: nothing further reaches the floor
      if (Evaluate(c.domain, c.upper)) found = true;
    }
    return found;
  }

  // The node with the fewest free GPUs >= n (entirely free for exclusive jobs), by descent on
  // the per-domain free-count histograms; lowest id on ties. Invalid when none.
  DomainId FullestNodeFitting() const {
    const uint32_t gpn = t_.max_gpus_per_node();
    // Rank of the best node below d: its free GPUs (best fit), or gpn - free (worst fit).
    auto min_free = [&](DomainId d) -> uint32_t {
      if (r_.exclusive) return t_.free_nodes(d) > 0 ? 0 : UINT32_MAX;  // any entirely free node
      if (!p_.best_fit_) {
        for (uint32_t f = gpn; f >= n_ && f > 0; --f) {
          if (t_.nodes_with_free(d, f)) return gpn - f;
        }
        return UINT32_MAX;
      }
      for (uint32_t f = n_; f <= gpn; ++f) {
        if (t_.nodes_with_free(d, f)) return f;
      }
      return UINT32_MAX;
    };
    DomainId d = t_.root();
    if (min_free(d) == UINT32_MAX) return DomainId();
    while (t_.domain(d).level > Level::kNode) {
      DomainId pick;
      uint32_t pick_free = UINT32_MAX;
      for (DomainId c : t_.children(d)) {
        if (t_.domain(c).level < Level::kNode) continue;
        const uint32_t f = min_free(c);
        // Best fit: the fewest free GPUs in the node; then the fullest switch (worst fit: emptiest).
        const bool fuller = pick.valid() && (p_.best_fit_ ? t_.free_gpus(c) < t_.free_gpus(pick)
                                                          : t_.free_gpus(c) > t_.free_gpus(pick));
        if (f < pick_free || (f == pick_free && f != UINT32_MAX && fuller)) {
          pick_free = f;
          pick = c;
        }
      }
      if (!pick.valid()) return DomainId();
      d = pick;
    }
    return t_.domain(d).level == Level::kNode ? d : DomainId();
  }

  void Collect(DomainId d, Level max_level, std::vector<Candidate>& out) {
    const Domain& dom = t_.domain(d);
    if (t_.free_gpus(d) < n_ || dom.level == Level::kGpu) return;
    if (only_free_ > 0) {  // a node-fit tier: only nodes with exactly `only_free_` free GPUs
      if (dom.level > Level::kNode && t_.nodes_with_free(d, only_free_) == 0) return;
      if (dom.level == Level::kNode && t_.free_gpus(d) != only_free_) return;
    }
    bool ok = dom.level <= max_level;
    if (r_.nodes > 1 && dom.level <= Level::kNode) ok = false;
    if (r_.exclusive && dom.level < Level::kNode) {
      DomainId node = d;
      while (t_.domain(node).level != Level::kNode) node = t_.domain(node).parent;
      ok = ok && t_.free_nodes(node) > 0;
    }
    if (ok) {
      const double ub = Upper(d);
      if (ub > 0) out.push_back({d, ub});
    }
    for (DomainId c : t_.children(d)) {
      if (t_.free_gpus(c) >= n_ && t_.domain(c).level != Level::kGpu) Collect(c, max_level, out);
    }
  }

  // An upper bound on the busbw of any placement inside `d` (see docs/placement.md).
  double Upper(DomainId d) const {
    const Domain& dom = t_.domain(d);
    double ub = p_.max_gpu_cap_[d.value];
    if (dom.level <= Level::kNode || p_.max_lanes_[d.value] == 0) return ub;
    const uint32_t gpn = t_.max_gpus_per_node();
    uint32_t pstar = 0;
    if (r_.nodes > 0) {
      uint32_t count = 0;
      for (uint32_t f = r_.gpus_per_node; f <= gpn; ++f) count += t_.nodes_with_free(d, f);
      pstar = count >= r_.nodes ? r_.gpus_per_node : 0;
    } else {
      uint64_t sum = 0;
      for (uint32_t f = gpn; f >= 1; --f) {
        sum += uint64_t{f} * t_.nodes_with_free(d, f);
        if (sum >= n_) {
          pstar = f;
          break;
        }
      }
    }
    if (pstar == 0) return 0;
    return std::min(ub, std::min(pstar, p_.max_lanes_[d.value]) * p_.max_lane_cap_[d.value]);
  }

  // One GPU: the node left fullest (FullestNodeFitting), then by descent inside it, always into
  // the child with the fewest free GPUs.
  bool PlaceOne(Level max_level) {
    (void)max_level;  // every GPU is inside one domain of any level
    DomainId d = FullestNodeFitting();
    if (!d.valid()) return false;
    while (t_.domain(d).level != Level::kGpu) {
      DomainId pick;
      for (DomainId c : t_.children(d)) {
        const uint32_t f = t_.free_gpus(c);
        if (f == 0) continue;
        if (r_.exclusive && t_.domain(c).level == Level::kNode && t_.free_nodes(c) == 0) continue;
        if (r_.exclusive && t_.domain(c).level > Level::kNode && t_.free_nodes(c) == 0) continue;
        if (!pick.valid() || (p_.best_fit_ ? f < t_.free_gpus(pick) : f > t_.free_gpus(pick))) pick = c;
      }
      if (!pick.valid()) return false;
      d = pick;
    }
    best_gpus_ = {GpuId(t_.domain(d).first_gpu)};
    best_ = m_.Predict(best_gpus_);
    return true;
  }

  // ---- one region ------------------------------------------------------------------------

  // Tries region `x` at decreasing thresholds; records it if it beats the best so far.
  bool Evaluate(DomainId x, double upper) {
    region_ = x;
    // With a floor, one test at the floor first: most regions a walk for a good block searches
    // hold no fit, and where none reaches the floor, no threshold above it is feasible either
    // (one set computation instead of one per threshold down to the floor).
    if (r_.min_busbw_gbs > 0 && upper > r_.min_busbw_gbs) {
      B_ = r_.min_busbw_gbs;
      next_ = 0;
      ResetMemo();
      align_per_ = 0;
      align_mask_ = 0;
      if (!Test(RegionSet(), n_)) return false;
    }
    B_ = upper;
    // The first feasible threshold is the region's best busbw: below the request's floor, none
    // that is left can be a fit.
    // After the first threshold, the sets are made again only where the last one refused
    // something (KeepClean). An iteration that goes on left plain sets or none: an aligned try
    // that fails gives the memo back empty (TryAligned), and one that works ends the loop.
    bool first = true;
    while (B_ > 0 && B_ >= r_.min_busbw_gbs && (best_gpus_.empty() || B_ > best_.busbw_gbs)) {
      next_ = 0;
      if (first) {
        ResetMemo();
      } else {
        KeepClean();
      }
      first = false;
      align_per_ = 0;
      align_mask_ = 0;
      const Bits& s = RegionSet();
      if (Test(s, n_)) {
        std::vector<GpuId> gpus;
        Take(x, n_, gpus);
        const Prediction pred = m_.Predict(gpus);
        if (best_gpus_.empty() || pred.busbw_gbs > best_.busbw_gbs) {
          best_ = pred;
          best_gpus_ = std::move(gpus);
          return true;
        }
        return false;
      }
      B_ = next_;
    }
    return false;
  }

  bool NeedsAlignment() const {
    const Domain& x = t_.domain(region_);
    if (x.level <= Level::kNode) return false;
    if (r_.rail_aligned) return true;
    return x.rail_optimized && x.parent.valid() && m_.CutCapacity(region_, n_) < B_;
  }

  // Ach(region), in aligned mode when the region needs (or, at equal bandwidth, prefers) it.
  const Bits& RegionSet() {
    const Domain& x = t_.domain(region_);
    if (x.level > Level::kNode && NeedsAlignment()) {
      if (!r_.rail_aligned) Reject(m_.CutCapacity(region_, n_));
      if (TryAligned()) return Ach(region_);
      none_ = Zero();
      Set(none_, 0);
      return none_;
    }
    if (x.level > Level::kNode && x.rail_optimized && Test(Ach(region_), n_) && !TryAligned()) {
      ResetMemo();  // no aligned placement at this threshold: back to the plain sets
    }
    return Ach(region_);
  }

  void Reject(double cap) {
    ++rejects_;
    if (cap < B_ && cap > next_) next_ = cap;
  }
  bool Ok(double cap) {
    if (cap >= B_) return true;
    Reject(cap);
    return false;
  }

  // ---- bit sets of achievable counts 0..n ------------------------------------------------

  Bits Zero() const { return Bits(words_, 0); }
  bool Test(const Bits& b, uint32_t i) const { return (b[i / 64] >> (i % 64)) & 1u; }
  void Set(Bits& b, uint32_t i) const { b[i / 64] |= uint64_t{1} << (i % 64); }
  void Clear(Bits& b, uint32_t i) const { b[i / 64] &= ~(uint64_t{1} << (i % 64)); }
  // dst |= src << k, truncated to n+1 bits.
  void ShiftOr(Bits& dst, const Bits& src, uint32_t k) const {
    const uint32_t ws = k / 64, bs = k % 64;
    for (uint32_t i = words_; i-- > ws;) {
      uint64_t v = src[i - ws] << bs;
      if (bs != 0 && i - ws >= 1) v |= src[i - ws - 1] >> (64 - bs);
      dst[i] |= v;
    }
    const uint32_t extra = words_ * 64 - (n_ + 1);
    if (extra) dst[words_ - 1] &= ~uint64_t{0} >> extra;
  }
  // True when b = {0}: nothing can be placed there.
  bool OnlyZero(const Bits& b) const {
    if (b[0] != 1) return false;
    for (uint32_t w = 1; w < words_; ++w) {
      if (b[w]) return false;
    }
    return true;
  }
  // a := a (+) b (sumset). Every set of ours contains 0, so a itself is part of the result.
  void SumInto(Bits& a, const Bits& b) {
    tmp_ = a;
    for (uint32_t w = 0; w < words_; ++w) {
      for (uint64_t bits = b[w]; bits; bits &= bits - 1) {
        const uint32_t k = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
        if (k > 0) ShiftOr(a, tmp_, k);
      }
    }
  }

  void ResetMemo() {
    for (DomainId d : memo_touched_) slot_[d.value] = -1;
    memo_touched_.clear();
    pool_used_ = 0;
  }

  // Before a lower threshold: forgets the sets whose making refused something (a capacity below
  // the last threshold, in the domain or below it); the others passed every test there, so they
  // pass every test of a lower one and are the same sets (plain sets: no aligned one is left in
  // the memo between thresholds).
  void KeepClean() {
    size_t kept = 0;
    for (DomainId d : memo_touched_) {
      if (dirty_[static_cast<size_t>(slot_[d.value])]) {
        slot_[d.value] = -1;
      } else {
        memo_touched_[kept++] = d;
      }
    }
    memo_touched_.resize(kept);
  }

  // Ach(d): counts placeable in d with every crossed uplink inside the region >= B. The region's
  // own uplink is not crossed; every other domain holding part of the job is treated as crossed.
  const Bits& Ach(DomainId d) {
    if (slot_[d.value] >= 0) {
      const auto slot = static_cast<size_t>(slot_[d.value]);
      rejects_ += dirty_[slot];  // its refusals count for the set that uses it
      return *pool_[slot];
    }
    if (pool_used_ == pool_.size()) pool_.push_back(std::make_unique<Bits>());
    const size_t slot = pool_used_++;
    if (dirty_.size() <= slot) dirty_.resize(slot + 1);
    slot_[d.value] = static_cast<int32_t>(slot);
    memo_touched_.push_back(d);
    Bits& s = *pool_[slot];
    s.assign(words_, 0);
    Set(s, 0);
    const uint64_t before = rejects_;
    Compute(d, s);
    dirty_[slot] = rejects_ != before;
    return s;
  }

  // Fills s (= {0} on entry) with Ach(d).
  void Compute(DomainId d, Bits& s) {
    const Domain& dom = t_.domain(d);
    const uint32_t free = t_.free_gpus(d);
    if (free == 0) return;
    if (dom.level == Level::kGpu) {
      if (Ok(m_.CutCapacity(d, 1))) Set(s, 1);
      return;
    }
    if (dom.level == Level::kNode) {
      if (r_.exclusive && t_.free_nodes(d) == 0) return;
      if (align_per_ > 0) {
        if (free >= align_per_) ComputeAlignedNode(d, s);
        return;
      }
      // Cheap exit: not enough free GPUs to drive the node's lanes at B.
      if (d != region_ && dom.uplink.lanes > 0 && !Ok(m_.CutCapacity(d, std::min(free, n_)))) return;
      if (r_.nodes > 0 && free < r_.gpus_per_node) return;
    }
    if (dom.level > Level::kNode && d != region_ && Pruned(d)) return;
    for (DomainId c : t_.children(d)) {
      if (t_.free_gpus(c) == 0) continue;
      const Bits& a = Ach(c);
      if (!OnlyZero(a)) SumInto(s, a);
    }
    if (dom.level == Level::kNode && r_.nodes > 0) {
      const bool has = r_.gpus_per_node <= n_ && Test(s, r_.gpus_per_node);
      std::fill(s.begin(), s.end(), 0);
      Set(s, 0);
      if (has) Set(s, r_.gpus_per_node);
    }
    if (d != region_) FilterCut(d, s);
  }

  // Keeps the counts g for which d's uplink, crossed by g GPUs, offers >= B.
  void FilterCut(DomainId d, Bits& s) {
    const Link& link = t_.domain(d).uplink;
    if (link.lanes == 0) {
      if (!Ok(m_.CutCapacity(d, 1))) {
        std::fill(s.begin(), s.end(), 0);
        Set(s, 0);
      }
      return;
    }
    // The capacity does not fall as g grows, and stops growing at the lanes: the counts refused
    // are those below the first that passes, or every one from the lanes on (the rejections
    // noted are the same: whether any, and the largest capacity).
    for (uint32_t g = 1; g <= n_; ++g) {
      if (!Test(s, g)) continue;
      if (Ok(m_.CutCapacity(d, g))) return;
      Clear(s, g);
      if (g >= link.lanes) {
        for (uint32_t h = g + 1; h <= n_; ++h) Clear(s, h);
        return;
      }
    }
  }

  // True when no node below switch-level domain d can reach B through its lanes.
  bool Pruned(DomainId d) {
    const uint32_t lanes = p_.max_lanes_[d.value];
    const double lane = p_.max_lane_cap_[d.value];
    if (lanes == 0 || lane <= 0) return false;
    const uint32_t m = static_cast<uint32_t>(std::ceil(B_ / lane - 1e-12));
    if (m <= 1) return false;
    const uint32_t gpn = t_.max_gpus_per_node();
    if (m <= std::min(lanes, gpn)) {
      for (uint32_t f = m; f <= gpn; ++f) {
        if (t_.nodes_with_free(d, f)) return false;
      }
    }
    Reject(std::min(m - 1, lanes) * lane);
    return true;
  }

  // ---- reconstruction --------------------------------------------------------------------

  // Picks exactly t GPUs in d, consistent with Ach; best fit: the fullest children first.
  // `depth`: of the recursion, the frame of the Placer's scratch it uses.
  void Take(DomainId d, uint32_t t, std::vector<GpuId>& out, size_t depth = 0) {
    const Domain& dom = t_.domain(d);
    if (dom.level == Level::kGpu) {
      out.push_back(GpuId(dom.first_gpu));
      return;
    }
    if (dom.level == Level::kNode && align_per_ > 0) {
      for (uint64_t m = align_mask_; m; m &= m - 1) {
        out.push_back(t_.node_gpu(NodeId(dom.first_node), static_cast<uint32_t>(std::countr_zero(m))));
      }
      return;
    }
    if (p_.take_frames_.size() <= depth) p_.take_frames_.push_back(std::make_unique<Placer::TakeFrame>());
    Placer::TakeFrame& f = *p_.take_frames_[depth];
    std::vector<DomainId>& kids = f.kids;
    kids.clear();
    for (DomainId c : t_.children(d)) {
      if (t_.free_gpus(c) > 0 && !OnlyZero(Ach(c))) kids.push_back(c);
    }
    // Backtracking assigns from the back: put the preferred (fewest free, lowest id) last.
    std::sort(kids.begin(), kids.end(), [&](DomainId a, DomainId b) {
      const uint32_t fa = t_.free_gpus(a), fb = t_.free_gpus(b);
      if (fa != fb) return p_.best_fit_ ? fa > fb : fa < fb;
      return a > b;
    });
    // prefix[i] = Ach(kids[0]) (+) ... (+) Ach(kids[i-1]), flat: words_ words per entry.
    std::vector<uint64_t>& prefix = f.prefix;
    prefix.assign((kids.size() + 1) * words_, 0);
    prefix[0] = 1;  // {0}
    for (size_t i = 0; i < kids.size(); ++i) {
      acc_.assign(prefix.begin() + static_cast<std::ptrdiff_t>(i * words_),
                  prefix.begin() + static_cast<std::ptrdiff_t>((i + 1) * words_));
      SumInto(acc_, Ach(kids[i]));
      std::copy(acc_.begin(), acc_.end(), prefix.begin() + static_cast<std::ptrdiff_t>((i + 1) * words_));
    }
    auto in_prefix = [&](size_t i, uint32_t v) { return (prefix[i * words_ + v / 64] >> (v % 64)) & 1u; };
    std::vector<uint32_t>& take = f.take;
    take.assign(kids.size(), 0);
    uint32_t rest = t;
    for (size_t i = kids.size(); i-- > 0;) {
      const Bits& a = Ach(kids[i]);
      for (uint32_t g = rest + 1; g-- > 0;) {
        if (Test(a, g) && in_prefix(i, rest - g)) {
          take[i] = g;
          rest -= g;
          break;
        }
      }
    }
    for (size_t i = 0; i < kids.size(); ++i) {
      if (take[i] > 0) Take(kids[i], take[i], out, depth + 1);
    }
  }

  // ---- rail alignment --------------------------------------------------------------------

  // Looks for a placement in the region that uses one local-index set L on every node (|L| = p,
  // p | n). For each p, the sets shared by the most admissible nodes are tried (superset sums
  // over local-index masks), each with the same DP restricted to nodes contributing {0, p}. On
  // success the memo holds the restricted sets, ready for Take.
  bool TryAligned() {
    const uint32_t gpn = t_.max_gpus_per_node();
    const Domain& x = t_.domain(region_);
    if (gpn > 12) return false;
    std::vector<uint32_t> cnt(size_t{1} << gpn, 0);
    for (uint32_t i = x.first_node; i < x.first_node + x.node_count; ++i) {
      const DomainId nd = t_.node_domain(NodeId(i));
      if (t_.free_gpus(nd) == 0 || (r_.exclusive && t_.free_nodes(nd) == 0)) continue;
      uint64_t mask = 0;
      const Domain& node = t_.domain(nd);
      for (uint32_t g = node.first_gpu; g < node.first_gpu + node.gpu_count; ++g) {
        if (GpuAdmissible(GpuId(g))) mask |= uint64_t{1} << t_.local_index(GpuId(g));
      }
      cnt[mask]++;
    }
    for (uint32_t bit = 0; bit < gpn; ++bit) {
      for (uint32_t mask = 0; mask < cnt.size(); ++mask) {
        if (!(mask & (1u << bit))) cnt[mask] += cnt[mask | (1u << bit)];
      }
    }
    for (uint32_t per = std::min(gpn, n_); per >= 1; --per) {
      if (n_ % per != 0 || (r_.nodes > 0 && per != r_.gpus_per_node)) continue;
      const uint32_t k = n_ / per;
      std::vector<uint32_t> masks;
      for (uint32_t mask = 0; mask < cnt.size(); ++mask) {
        if (static_cast<uint32_t>(std::popcount(mask)) == per && cnt[mask] >= k) masks.push_back(mask);
      }
      std::stable_sort(masks.begin(), masks.end(), [&](uint32_t a, uint32_t b) { return cnt[a] > cnt[b]; });
      if (masks.size() > kMaxAlignedSets) masks.resize(kMaxAlignedSets);
      for (uint32_t mask : masks) {
        ResetMemo();
        align_per_ = per;
        align_mask_ = mask;
        if (Test(Ach(region_), n_)) return true;
      }
    }
    ResetMemo();
    align_per_ = 0;
    align_mask_ = 0;
    return false;
  }
  static constexpr size_t kMaxAlignedSets = 64;

  // Ach of a node in aligned mode: {0, p} when every GPU of L is admissible.
  void ComputeAlignedNode(DomainId d, Bits& s) {
    const NodeId node(t_.domain(d).first_node);
    for (uint64_t m = align_mask_; m; m &= m - 1) {
      const GpuId g = t_.node_gpu(node, static_cast<uint32_t>(std::countr_zero(m)));
      if (!g.valid() || !GpuAdmissible(g)) return;
    }
    if (align_per_ <= n_) Set(s, align_per_);
    if (d != region_) FilterCut(d, s);
  }

  // Free, and every link from the GPU up to its node offers >= B.
  bool GpuAdmissible(GpuId g) {
    if (!t_.is_free(g)) return false;
    for (DomainId a = t_.gpu_domain(g); t_.domain(a).level < Level::kNode; a = t_.domain(a).parent) {
      if (!Ok(m_.CutCapacity(a, 1))) return false;
    }
    return true;
  }

  const Placer& p_;
  const Topology& t_;
  const BandwidthModel& m_;
  const PlacementRequest& r_;
  const uint32_t n_;
  const std::span<const DomainId> regions_;  // where candidates are collected: the root, or PlaceWithin's
  const uint32_t words_;

  DomainId region_;
  double B_ = 0, next_ = 0;
  uint32_t only_free_ = 0;      // > 0: Collect only nodes with exactly this many free GPUs
  std::vector<int32_t>& slot_;  // per domain: index into pool_, -1 when not computed
  std::vector<DomainId> memo_touched_;
  uint64_t rejects_ = 0;                      // Reject's calls (and dirty sets read) so far
  std::vector<uint8_t>& dirty_;               // by pool slot: the set's making refused something (shared like pool_)
  std::vector<std::unique_ptr<Bits>>& pool_;  // shared across calls (keeps capacity); each set apart: stable references
  size_t pool_used_ = 0;
  uint32_t align_per_ = 0;   // > 0: aligned mode, every node holds exactly this many GPUs...
  uint64_t align_mask_ = 0;  // ...with these local indices
  Bits tmp_;
  Bits acc_;  // Take's running sumset
  Bits none_;

  Prediction best_;
  std::vector<GpuId> best_gpus_;
};

bool Placer::Remembers(const PlacementRequest& request) {
  return request.min_busbw_gbs > 0 && request.fit == FitMode::kRequire && request.TotalGpus() > 1;
}

PlaceOutcome Placer::PlaceRemembering(const PlacementRequest& request, std::span<const DomainId> candidates) const {
  const uint32_t n = request.TotalGpus();
  const MissMemory::Key asked = MissMemory::Of(request);
  std::vector<DomainId> open = std::move(open_);  // a member: no allocation per call
  open.clear();
  for (DomainId d : candidates) {
    if (topo_.free_gpus(d) >= n && !misses_.Known(asked, d)) open.push_back(d);
  }
  Search search(*this, request, open);
  PlaceOutcome out = open.empty() ? search.NothingToSearch() : search.Run();
  if (out.status == PlaceStatus::kBusy) {  // nothing in any of them
    for (DomainId d : open) misses_.Remember(asked, d);
  }
  open_ = std::move(open);
  return out;
}

PlaceOutcome Placer::Place(const PlacementRequest& request) const {
  if (Remembers(request)) {
    const Level level = std::max(request.level, Level::kLeaf);
    std::vector<DomainId>& tops = tops_[static_cast<size_t>(level)];
    if (tops.empty()) DomainsUpTo(topo_, level, tops);
    return PlaceRemembering(request, tops);
  }
  const DomainId root = topo_.root();
  return Search(*this, request, {&root, 1}).Run();
}

PlaceOutcome Placer::PlaceWithin(const PlacementRequest& request, std::span<const DomainId> regions) const {
  if (Remembers(request)) return PlaceRemembering(request, regions);
  return Search(*this, request, regions).Run();
}

}  // namespace phalanx
