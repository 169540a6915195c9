// The exhaustive reference of the placement-quality tests: small cluster shapes, a cluster in a
// random state and a random request rebuilt from (mode, shape, seed) alone, and the best of ALL
// GPU subsets that satisfy a request, found by enumeration (BandwidthModel::Predict on every
// subset). A request whose subset count is above a limit (200,000) is skipped and counted.
// PHALANX_QUALITY_SCALE (a factor, default 1) scales the tests' case counts, for slow builds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/placement/bandwidth_model.h"
#include "core/placement/placer.h"
#include "core/topology/topology.h"

namespace phalanx::placer_exhaustive {

inline constexpr double kRelTol = 1e-9;

// ---- cluster shapes ------------------------------------------------------------------------

struct Shape {
  TopologySpec spec;
  bool nvl = false;
};

// Two-tier clusters of H100, L40S, NVLink-bridge and mixed nodes, and GB200 NVL racks.
const std::vector<Shape>& Shapes();

// ---- small helpers -------------------------------------------------------------------------

// Equal up to kRelTol (relative).
bool SameScore(double a, double b);
std::vector<GpuId> FreeGpus(const Topology& t);
std::vector<GpuId> NodeGpus(const Topology& t, NodeId n);
bool NodeEntirelyFree(const Topology& t, NodeId n);
// "[name name ...]", for reproducers.
std::string GpuList(const Topology& t, std::span<const GpuId> gpus);
std::string RequestText(const PlacementRequest& r);

// ---- the constraint, as the test reads the placer's contract -------------------------------

// Calls `fn` once per way of filling `cur` up to `k` GPUs, in order, from pool[from..].
void ForEachCombination(const std::vector<GpuId>& pool, size_t k, std::vector<GpuId>& cur, size_t from,
                        const std::function<void()>& fn);

struct Best {
  bool any = false;
  bool skipped = false;
  double subsets = 0;
  double busbw = -1;
  std::vector<GpuId> gpus;
};

// The best valid subset under `require` (nullopt: no fit constraint).
Best Exhaustive(const Topology& t, const BandwidthModel& model, const PlacementRequest& r,
                std::optional<Level> require);

// Empty when `p` satisfies `r` on `t` (which the placer has not changed).
std::string CheckPlacement(const Topology& t, const BandwidthModel& model, const PlacementRequest& r,
                           const Placement& p);

// ---- cases ---------------------------------------------------------------------------------

enum class Mode { kAny, kNodeShaped, kRequire, kExclusive, kRailAligned, kPrefer, kCombined };
inline constexpr std::string_view kModeNames[] = {"any",          "node-shaped", "require", "exclusive",
                                                  "rail-aligned", "prefer",      "combined"};

// A cluster in the state of one case: random drained/down nodes and random dummy jobs whose
// rings are charged with their predicted busbw (so shared uplinks carry traffic).
struct World {
  Topology topo;
  std::string log;  // what was done to it, for reproducers
};

std::optional<World> MakeWorld(const Shape& shape, Mode mode, std::mt19937& rng);

// A request of `mode` on `t`: mostly feasible sizes, sometimes one or two GPUs too many.
PlacementRequest MakeRequest(const Shape& shape, const Topology& t, Mode mode, std::mt19937& rng);

// What a test's cases came to.
struct Stats {
  int cases = 0, placed = 0, not_placed = 0, skipped = 0, mismatches = 0;
  double subsets = 0;
  std::string smallest;  // reproducer of the smallest mismatch
  double smallest_key = 1e18;
};

// The floor on compared (not skipped) cases for `generated` cases, given `min_compared` of
// `planned` at scale 1: the same fraction, so PHALANX_QUALITY_SCALE scales it too.
int CompareFloor(int min_compared, int planned, int generated);

}  // namespace phalanx::placer_exhaustive
