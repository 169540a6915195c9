// Placer: where a gang job goes. All-or-nothing; never mutates the Topology (the caller commits
// a placement with Topology::Allocate).
//
// Among all sets of free GPUs that satisfy the request, the placer returns one with the highest
// predicted ring bus bandwidth (BandwidthModel); among those, the one in the lowest and
// fullest domain (best fit, so that large free blocks survive), rail-aligned where possible,
// filling partly used nodes and groups before whole ones. See docs/placement.md.
//
// Outcomes are not errors: placed, busy (fits the cluster, not its free GPUs now) or
// unsatisfiable (can never fit, with the reason).
// Thread-safety: not thread-safe; one Placer per Topology, used serially.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/common/ids.h"
#include "core/placement/bandwidth_model.h"
#include "core/placement/miss_memory.h"
#include "core/topology/topology.h"

namespace phalanx {

enum class FitMode : uint8_t {
  kAny,      // no topology constraint: bandwidth decides
  kPrefer,   // a placement inside one domain of `level` wins over any that is not
  kRequire,  // only placements inside one domain of `level` (or lower)
};

struct PlacementRequest {
  uint32_t gpus = 0;   // total GPUs (nodes * gpus_per_node when node-shaped)
  uint32_t nodes = 0;  // > 0: exactly `nodes` nodes with `gpus_per_node` each
  uint32_t gpus_per_node = 0;
  Level level = Level::kCore;
  FitMode fit = FitMode::kAny;
  bool exclusive = false;     // only entirely free nodes; the job holds them whole
  bool rail_aligned = false;  // require the same local GPU indices on every node
  // A placement predicted below this busbw (GB/s) does not count as a fit (0: any). Not part of a
  // user's request: placement under pressure asks for a block this good (internal/patience.cc).
  double min_busbw_gbs = 0;

  // The GPUs the job runs on: `gpus`, or nodes * gpus_per_node for a node-shaped request.
  uint32_t TotalGpus() const { return nodes > 0 && gpus == 0 ? nodes * gpus_per_node : gpus; }
  bool operator==(const PlacementRequest&) const = default;
};

struct Placement {
  std::vector<GpuId> gpus;  // the GPUs the job runs on, sorted
  std::vector<GpuId> held;  // GPUs held but unused (exclusive nodes), sorted
  Prediction prediction;
};

enum class PlaceStatus : uint8_t { kPlaced, kBusy, kUnsatisfiable };
std::string_view PlaceStatusName(PlaceStatus status);

struct PlaceOutcome {
  PlaceStatus status = PlaceStatus::kBusy;
  Placement placement;  // when placed
  std::string reason;   // when busy or unsatisfiable
};

class Placer {
 public:
  explicit Placer(const Topology& topology, ModelParams params = {});

  // Checks the request against the empty cluster (shape, sizes, level). Empty when it could fit.
  std::string Unsatisfiable(const PlacementRequest& request) const;

  // A request with a bandwidth floor that must fit inside one domain above the node (a walk for a
  // good block: internal/patience.cc) mostly finds nothing, in state after state. Such a search
  // looks only in the domains of the request's level not known to hold no fit: a domain where a
  // search found nothing is remembered by the request and the domain's fingerprint
  // (Topology::fingerprint: its free GPUs and loads), which is all the search reads there, so the
  // answer is the same as searching it again. The memory is a fixed-size cache: a forgotten
  // domain is searched again.
  PlaceOutcome Place(const PlacementRequest& request) const;
  // Place, looking only inside `regions` (disjoint domains; none: busy). When every domain the
  // request may use outside them is known to hold no fit (Reserve's walk: the domains that have
  // not gained GPUs since a search found nothing), the answer is Place's: the same search, less
  // candidates that could not win. (A job of one GPU gets Place's answer.)
  PlaceOutcome PlaceWithin(const PlacementRequest& request, std::span<const DomainId> regions) const;
  // Whether Place and PlaceWithin know, without searching, that domain `d` holds no fit for a
  // request in a state of fingerprint `fp` (Topology::fingerprint of d in that state, which
  // the Topology need not be in): a search for it found nothing there before (only for
  // requests PlaceWithin remembers misses of; false for others).
  // `asked`: MissKey(request), which is none for requests it does not remember misses of.
  bool KnownMiss(MissMemory::Key asked, DomainId d, Topology::Fingerprint fp) const {
    return misses_.Known(asked, d, fp);
  }
  static std::optional<MissMemory::Key> MissKey(const PlacementRequest& request) {
    if (!Remembers(request)) return std::nullopt;
    return MissMemory::Of(request);
  }

  const BandwidthModel& model() const { return model_; }

  // Tie-breaking among placements of equal bandwidth: best fit (the fullest domains first, so
  // large free blocks survive; the default) or worst fit (the emptiest first; for measuring).
  void set_best_fit(bool best_fit) { best_fit_ = best_fit; }
  bool best_fit() const { return best_fit_; }

  // Jobs that fit in one node (best fit only): the node left fullest wins over bandwidth as long
  // as its best placement reaches `tolerance` x the best placement anywhere (1.0: bandwidth
  // first, as for multi-node jobs). Keeps big nodes whole for the jobs that need them.
  void set_node_fit_tolerance(double tolerance) { node_fit_tolerance_ = tolerance; }
  // The best GPU link of the cluster: a job that fits in one node whose placement reaches it
  // takes the fullest node that can hold it, found from the root down (the search's one read
  // outside the regions it is given).
  double max_gpu_link_gbs() const { return max_gpu_cap_[topo_.root().value]; }
  double node_fit_tolerance() const { return node_fit_tolerance_; }

 private:
  class Search;
  const Topology& topo_;
  BandwidthModel model_;
  std::vector<double> max_gpu_cap_;            // per domain: best GPU link below it
  std::vector<uint32_t> max_lanes_;            // per domain: most NIC/NVLink lanes of a node below it
  std::vector<double> max_lane_cap_;           // per domain: best single-lane capacity of a node below it
  std::vector<uint32_t> level_max_gpus_;       // per level: GPUs of the largest domain at or below it
  uint32_t connected_max_;                     // GPUs of the largest connected part (Unsatisfiable)
  std::vector<uint32_t> nodes_with_at_least_;  // [g]: nodes with >= g GPUs, g <= the largest node's
  mutable std::vector<int32_t> memo_slot_;     // search scratch, all -1 between calls
  // Search scratch: reachable-count sets (each apart: a set stays put as the pool grows).
  mutable std::vector<std::unique_ptr<std::vector<uint64_t>>> memo_pool_;
  mutable std::vector<uint8_t> memo_dirty_;  // search scratch: by pool slot, its making rejected
  // Search scratch of the reconstruction (Search::Take), one frame per depth of its recursion:
  // the children it picks from, their sumset prefixes and the counts taken.
  struct TakeFrame {
    std::vector<DomainId> kids;
    std::vector<uint64_t> prefix;
    std::vector<uint32_t> take;
  };
  mutable std::vector<std::unique_ptr<TakeFrame>> take_frames_;  // (each apart: frames stay put)
  bool best_fit_ = true;
  double node_fit_tolerance_ = 1.0;
  static bool Remembers(const PlacementRequest& request);  // a search that uses misses_ (see Place)
  PlaceOutcome PlaceRemembering(const PlacementRequest& request, std::span<const DomainId> candidates) const;
  mutable MissMemory misses_;
  mutable std::vector<DomainId> open_;               // PlaceRemembering's regions to search
  mutable std::vector<std::vector<DomainId>> tops_;  // per level: DomainsUpTo, made when asked
};

}  // namespace phalanx
