// Google Benchmark: Placer::Place latency for one gang on a fixed busy snapshot (50% occupancy).
// Args: fabric (0 superpod-32k, 1 nvl72-8k), occupancy (0 jobs, 1 single GPUs), gang size.
// The mean per call is what this reports; placer_latency gives percentiles over varied snapshots.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "busy_cluster.h"

namespace phalanx::bench {
namespace {

// Built once per (fabric, occupancy) and kept for the whole run.
const BusyCluster& Cluster(Fabric fabric, Occupancy occupancy) {
  static std::map<std::pair<int, int>, std::unique_ptr<BusyCluster>> clusters;
  auto& c = clusters[{static_cast<int>(fabric), static_cast<int>(occupancy)}];
  if (!c) c = std::make_unique<BusyCluster>(fabric, occupancy, 0.5, 42);
  return *c;
}

void BM_Place(benchmark::State& state) {
  const auto fabric = static_cast<Fabric>(state.range(0));
  const auto occupancy = static_cast<Occupancy>(state.range(1));
  const BusyCluster& cluster = Cluster(fabric, occupancy);
  PlacementRequest request;
  request.gpus = static_cast<uint32_t>(state.range(2));
  double busbw = 0;
  int placed = 0;
  for (auto _ : state) {
    PlaceOutcome out = cluster.placer().Place(request);
    benchmark::DoNotOptimize(out);
    if (out.status == PlaceStatus::kPlaced) {
      busbw = out.placement.prediction.busbw_gbs;
      ++placed;
    }
  }
  state.SetLabel(std::string(FabricName(fabric)) + "/" + std::string(OccupancyName(occupancy)));
  state.counters["busbw_GBps"] = busbw;
  state.counters["placed"] = benchmark::Counter(placed, benchmark::Counter::kAvgIterations);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int gang : {8, 64, 256, 1024}) b->Args({0, 0, gang});
  for (int gang : {8, 64, 256, 1024}) b->Args({0, 1, gang});
  for (int gang : {8, 64, 256, 1024}) b->Args({1, 0, gang});
}

BENCHMARK(BM_Place)->Apply(Args)->ArgNames({"fabric", "occ", "gang"})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace phalanx::bench
