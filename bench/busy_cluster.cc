#include "busy_cluster.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/topology/node_models.h"

namespace phalanx::bench {

std::string_view FabricName(Fabric fabric) { return fabric == Fabric::kSuperPod32k ? "superpod-32k" : "nvl72-8k"; }

std::string_view OccupancyName(Occupancy occupancy) { return occupancy == Occupancy::kJobs ? "jobs" : "single-gpus"; }

namespace {

TopologySpec MakeSpec(Fabric fabric) {
  Result<TopologySpec> spec = fabric == Fabric::kSuperPod32k
                                  ? GenerateSuperPod({.scalable_units = 128, .nodes_per_su = 32, .model = "dgx-h100"})
                                  : GenerateNvl72({.racks = 114, .racks_per_leaf = 4});
  if (!spec) {
    std::fprintf(stderr, "bench: %s\n", spec.error().ToString().c_str());
    std::abort();
  }
  return *std::move(spec);
}

}  // namespace

BusyCluster::BusyCluster(Fabric fabric, Occupancy occupancy, double fraction, uint32_t seed)
    : occupancy_(occupancy), fraction_(fraction), rng_(seed) {
  auto built = Topology::Build(MakeSpec(fabric));
  if (!built) {
    std::fprintf(stderr, "bench: %s\n", built.error().ToString().c_str());
    std::abort();
  }
  topo_ = std::make_unique<Topology>(*std::move(built));
  placer_ = std::make_unique<Placer>(*topo_);
  Fill();
}

double BusyCluster::used_fraction() const {
  return static_cast<double>(used_) / static_cast<double>(topo_->gpu_count());
}

bool BusyCluster::PlaceJob(uint32_t gpus) {
  PlacementRequest r;
  r.gpus = gpus;
  const PlaceOutcome out = placer_->Place(r);
  if (out.status != PlaceStatus::kPlaced) return false;
  if (!topo_->Allocate(next_job_, out.placement.gpus, out.placement.prediction.busbw_gbs)) std::abort();
  jobs_.push_back(next_job_++);
  used_ += gpus;
  return true;
}

void BusyCluster::Fill() {
  const size_t target = static_cast<size_t>(fraction_ * static_cast<double>(topo_->gpu_count()));
  if (occupancy_ == Occupancy::kSingleGpus) {
    std::uniform_int_distribution<uint32_t> any(0, static_cast<uint32_t>(topo_->gpu_count()) - 1);
    while (used_ < target) {
      const GpuId g(any(rng_));
      if (!topo_->is_free(g)) continue;
      if (!topo_->Allocate(next_job_, std::span<const GpuId>(&g, 1), 0)) std::abort();
      jobs_.push_back(next_job_++);
      ++used_;
    }
    return;
  }
  // Mixed sizes, weighted towards small jobs as in production traces; GPUs-weighted, the large
  // jobs still hold most of the cluster.
  static constexpr uint32_t kSizes[] = {1, 1, 2, 4, 8, 8, 8, 16, 16, 32, 64, 128, 256};
  std::uniform_int_distribution<size_t> pick(0, std::size(kSizes) - 1);
  int misses = 0;
  while (used_ < target && misses < 64) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(kSizes[pick(rng_)], target - used_));
    misses = PlaceJob(n) ? 0 : misses + 1;
  }
}

void BusyCluster::Churn(int jobs) {
  for (int i = 0; i < jobs && !jobs_.empty(); ++i) {
    const size_t k = std::uniform_int_distribution<size_t>(0, jobs_.size() - 1)(rng_);
    used_ -= topo_->job_gpus(jobs_[k]).size();
    if (!topo_->Release(jobs_[k])) std::abort();
    jobs_[k] = jobs_.back();
    jobs_.pop_back();
  }
  Fill();
}

}  // namespace phalanx::bench
