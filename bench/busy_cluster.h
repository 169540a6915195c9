// BusyCluster: a generated fabric at a target occupancy, for placer benchmarks. Occupancy is made
// either of jobs of mixed sizes placed by the Placer itself and committed (what a running cluster
// looks like), or of random single GPUs (worst-case fragmentation). Churn() releases a few jobs
// and refills to the same occupancy, giving a new snapshot without rebuilding.
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string_view>
#include <vector>

#include "core/placement/placer.h"
#include "core/topology/topology.h"

namespace phalanx::bench {

enum class Fabric : int {
  kSuperPod32k,  // 128 rail-optimized SUs x 32 DGX H100 = 4,096 nodes, 32,768 GPUs
  kNvl72x114,    // 114 GB200 NVL72 racks = 2,052 trays, 8,208 GPUs
};
enum class Occupancy : int { kJobs, kSingleGpus };

std::string_view FabricName(Fabric fabric);
std::string_view OccupancyName(Occupancy occupancy);

class BusyCluster {
 public:
  // Builds the fabric and fills it to `fraction` of its GPUs. Aborts (benchmarks have no caller
  // to report to) if the generator or the topology fails.
  BusyCluster(Fabric fabric, Occupancy occupancy, double fraction, uint32_t seed);

  const Topology& topology() const { return *topo_; }
  const Placer& placer() const { return *placer_; }
  // Releases `jobs` random jobs, then refills to the target occupancy.
  void Churn(int jobs);
  double used_fraction() const;

 private:
  void Fill();
  bool PlaceJob(uint32_t gpus);

  std::unique_ptr<Topology> topo_;  // stable address: the Placer keeps a reference
  std::unique_ptr<Placer> placer_;
  Occupancy occupancy_;
  double fraction_;
  std::mt19937 rng_;
  std::vector<JobId> jobs_;
  JobId next_job_ = 1;
  size_t used_ = 0;
};

}  // namespace phalanx::bench
