// BandwidthModel: predicted NCCL ring all-reduce bus bandwidth of a set of GPUs.
//
// busbw(P) = min over every uplink the ring crosses of the capacity that uplink gives the job.
// A domain's uplink is crossed when the domain holds some but not all of P's GPUs (every GPU's
// own link is crossed when |P| > 1). The capacity of a crossed uplink is
//   min(link, min(g, lanes) * lane) * efficiency(link type)          (g = P's GPUs below it)
// reduced, when other running jobs' rings cross the same uplink, to
//   max(capacity - their traffic, capacity / (jobs + 1))   (x congestion factor if oversubscribed)
// On a rail-optimized domain whose nodes do not all use the same local GPU indices, the ring also
// crosses that domain's uplink (cross-rail traffic goes through the spine).
// The formula, its assumptions and its calibration: docs/bandwidth-model.md.
//
// Thread-safety: not thread-safe (uses scratch buffers); reads the Topology it was given.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/ids.h"
#include "core/topology/topology.h"

namespace phalanx {

struct ModelParams {
  // Measured nccl-tests busbw / line rate per link type.
  double eff_nvlink = 0.80;
  double eff_pcie = 0.75;
  double eff_smp = 0.60;
  double eff_infiniband = 0.92;
  double eff_ethernet = 0.80;
  // Extra loss on an oversubscribed uplink that is shared with other jobs (ECMP collisions,
  // congestion). Calibrated so a fully loaded 2:1 leaf-spine gives 0.3675 of full bisection.
  double congestion = 0.735;
};

struct Prediction {
  double busbw_gbs = 0;
  DomainId bottleneck;       // the domain whose uplink limits the ring (invalid for 1 GPU)
  DomainId lca;              // lowest domain holding all GPUs
  bool rail_aligned = true;  // every rail-optimized domain sees one local-index set
};

class BandwidthModel {
 public:
  explicit BandwidthModel(const Topology& topology, ModelParams params = {});

  const ModelParams& params() const { return params_; }
  double Efficiency(LinkType type) const;

  // Capacity (GB/s) that `d`'s uplink offers a ring with `g` GPUs below `d`, under the current
  // traffic of running jobs. 0 for the root (nothing above it); effectively unlimited for links
  // of type none (a group that is its whole node).
  double CutCapacity(DomainId d, uint32_t g) const;
  // Capacity ignoring running jobs (the empty cluster).
  double StaticCutCapacity(DomainId d, uint32_t g) const;

  // Predicted busbw of running a ring over `gpus` (any order; no duplicates). For one GPU, the
  // GPU's own link (nothing to cross). 0 when the GPUs sit in disconnected trees.
  Prediction Predict(std::span<const GpuId> gpus) const;

  static constexpr double kUnlimited = 1e12;

 private:
  const Topology& topo_;
  ModelParams params_;
  mutable std::vector<uint32_t> count_;      // per domain, scratch
  mutable std::vector<uint64_t> mask_;       // per domain, scratch (rail check)
  mutable std::vector<uint8_t> misaligned_;  // per domain, scratch
  mutable std::vector<DomainId> touched_;
};

}  // namespace phalanx
