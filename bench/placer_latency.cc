// placer_latency: Placer::Place latency percentiles over varied occupancy snapshots.
//
// For every case (fabric x occupancy x gang size) it times N Place() calls with
// std::chrono::steady_clock; between calls (untimed) two random jobs are released and the
// cluster is refilled to 50%, so every call sees a different snapshot. Prints a Markdown table.
// Usage: placer_latency [--calls=N] [--seed=S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "busy_cluster.h"

namespace phalanx::bench {
namespace {

struct Row {
  std::string name;
  double p50 = 0, p99 = 0, max = 0, mean_busbw = 0, placed = 0;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

Row Measure(BusyCluster& cluster, Fabric fabric, Occupancy occupancy, uint32_t gang, int calls) {
  PlacementRequest request;
  request.gpus = gang;
  std::vector<double> us;
  us.reserve(static_cast<size_t>(calls));
  double busbw = 0;
  int placed = 0;
  for (int i = 0; i < calls; ++i) {
    cluster.Churn(2);
    const auto t0 = std::chrono::steady_clock::now();
    const PlaceOutcome out = cluster.placer().Place(request);
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (out.status == PlaceStatus::kPlaced) {
      busbw += out.placement.prediction.busbw_gbs;
      ++placed;
    }
  }
  Row row;
  row.name = std::to_string(gang) + " GPUs, " + std::string(FabricName(fabric)) + ", 50% " +
             std::string(OccupancyName(occupancy));
  row.p50 = Percentile(us, 0.50);
  row.p99 = Percentile(us, 0.99);
  row.max = *std::max_element(us.begin(), us.end());
  row.mean_busbw = placed ? busbw / placed : 0;
  row.placed = 100.0 * placed / calls;
  return row;
}

int Main(int argc, char** argv) {
  int calls = 2000;
  uint32_t seed = 42;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--calls=", 8) == 0) {
      calls = std::max(1, std::atoi(argv[i] + 8));
    } else if (std::strncmp(argv[i], "--seed=", 7) == 0) {
      seed = static_cast<uint32_t>(std::strtoul(argv[i] + 7, nullptr, 10));
    } else {
      std::fprintf(stderr, "placer_latency: unknown argument '%s' (use --calls=N --seed=S)\n", argv[i]);
      return 2;
    }
  }
  struct Setup {
    Fabric fabric;
    Occupancy occupancy;
  };
  const Setup setups[] = {{Fabric::kSuperPod32k, Occupancy::kJobs},
                          {Fabric::kSuperPod32k, Occupancy::kSingleGpus},
                          {Fabric::kNvl72x114, Occupancy::kJobs}};
  std::vector<Row> rows;
  for (const Setup& s : setups) {
    const auto t0 = std::chrono::steady_clock::now();
    BusyCluster cluster(s.fabric, s.occupancy, 0.5, seed);
    const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "%s/%s: %zu GPUs, %.1f%% used, built in %.2f s\n", std::string(FabricName(s.fabric)).c_str(),
                 std::string(OccupancyName(s.occupancy)).c_str(), cluster.topology().gpu_count(),
                 100 * cluster.used_fraction(), build_s);
    for (uint32_t gang : {8u, 64u, 256u, 1024u}) {
      rows.push_back(Measure(cluster, s.fabric, s.occupancy, gang, calls));
      std::fprintf(stderr, "  %s done\n", rows.back().name.c_str());
    }
  }
  std::printf("Placer::Place latency, %d calls per case, each on a new snapshot (seed %u)\n\n", calls, seed);
  std::printf("| case | p50 us | p99 us | max us | mean busbw GB/s | placed %% |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.0f |\n", r.name.c_str(), r.p50, r.p99, r.max, r.mean_busbw,
                r.placed);
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::bench

int main(int argc, char** argv) { return phalanx::bench::Main(argc, argv); }
