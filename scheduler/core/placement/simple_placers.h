// Topology-blind and node-level placers, for the baselines the simulator compares against.
// They share the request/outcome types of the Placer and never mutate the Topology.
// Thread-safety: pure functions over a const Topology.
#pragma once

#include "core/placement/placer.h"

namespace phalanx {

// The first free GPUs in id order (nodes x gpn: the first nodes with enough free GPUs).
// Ignores levels, rails and bandwidth. Outcome prediction is filled from `model`.
PlaceOutcome PlaceFirstFit(const Topology& topology, const BandwidthModel& model, const Placer& placer,
                           const PlacementRequest& request);

// Slurm cons_tres + topology/tree: the lowest, then fullest switch (or node) with enough free
// GPUs; inside it whole free nodes first (fewest nodes), then the fullest partial nodes; GPUs
// in index order. No bandwidth model, no rail alignment.
PlaceOutcome PlaceNodeBestFit(const Topology& topology, const BandwidthModel& model, const Placer& placer,
                              const PlacementRequest& request);

}  // namespace phalanx
