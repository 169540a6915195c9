// phalanx demo: places a deterministic stream of gang jobs on a topology with the Placer,
// commits each placement with Topology::Allocate, releases jobs as they end, and prints every
// decision with the free blocks per level after it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "adapters/topology/topology_loader.h"
#include "adapters/topology/topology_text.h"
#include "args.h"
#include "commands.h"
#include "core/placement/placer.h"
#include "core/topology/node_models.h"
#include "core/topology/topology.h"

namespace phalanx::cli {
namespace {

constexpr FlagSpec kDemoFlags[] = {
    {"topology", "FILE", "topology file or gen:NAME (default: the embedded demo cluster)"},
    {"jobs", "N", "number of jobs to submit (default 12)"},
    {"seed", "S", "seed of the job stream after the scripted first jobs (default 1)"},
    {"help", "", "this help"},
};

constexpr const char* kDemoUsage =
    "usage: phalanx demo [--topology FILE|gen:NAME] [--jobs N] [--seed S]\n"
    "\n"
    "Places a deterministic stream of gang jobs (8, 2x8, 4, 2, 1, 3x8, 8, 5x8 GPUs, then random\n"
    "ones drawn with --seed), each running for a few steps, and prints every decision: the GPUs\n"
    "(node:local-gpus), the predicted NCCL ring bus bandwidth and its bottleneck, or why the job\n"
    "is busy (does not fit the free GPUs now) or unsatisfiable (can never fit).\n"
    "\n"
    "options:\n";

struct DemoJob {
  JobId id = 0;
  PlacementRequest request;
  int duration = 0;  // steps until it ends
};

PlacementRequest Request(uint32_t gpus, uint32_t per_node) {
  PlacementRequest r;
  r.gpus = gpus;
  if (gpus > per_node && per_node > 0 && gpus % per_node == 0) {
    r.nodes = gpus / per_node;
    r.gpus_per_node = per_node;
  }
  return r;
}

std::string RequestText(const PlacementRequest& r) {
  if (r.nodes > 0) return std::to_string(r.nodes) + "x" + std::to_string(r.gpus_per_node) + " GPUs";
  return std::to_string(r.gpus) + (r.gpus == 1 ? " GPU" : " GPUs");
}

// "node0:0-7 node1:0-3": local GPU indices per node, in node order.
std::string PlacementText(const Topology& topo, const std::vector<GpuId>& gpus) {
  std::map<uint32_t, std::vector<uint32_t>> by_node;
  for (GpuId g : gpus) by_node[topo.node_of(g).value].push_back(topo.local_index(g));
  std::string out;
  for (auto& [node, locals] : by_node) {
    std::sort(locals.begin(), locals.end());
    std::string list;
    for (size_t i = 0; i < locals.size();) {
      size_t j = i;
      while (j + 1 < locals.size() && locals[j + 1] == locals[j] + 1) ++j;
      list += (list.empty() ? "" : ",") + std::to_string(locals[i]) + (j > i ? "-" + std::to_string(locals[j]) : "");
      i = j + 1;
    }
    out += (out.empty() ? "" : " ") + topo.domain(topo.node_domain(NodeId(node))).name + ":" + list;
  }
  return out;
}

std::vector<DemoJob> MakeJobs(int count, uint32_t seed, uint32_t per_node) {
  // The scripted start shows a single node, multi-node gangs, small fills, a job that must
  // wait, and one larger than the demo cluster.
  const uint32_t scripted[] = {8, 16, 4, 2, 1, 24, 8, 40};
  const int durations[] = {3, 2, 6, 4, 5, 3, 4, 1};
  const uint32_t sizes[] = {1, 2, 4, 8, 8, 16, 24, 32};
  std::mt19937 rng(seed);
  std::vector<DemoJob> jobs;
  for (int i = 0; i < count; ++i) {
    DemoJob j;
    j.id = static_cast<JobId>(i + 1);
    const bool script = i < static_cast<int>(std::size(scripted));
    const uint32_t gpus = script ? scripted[i] : sizes[rng() % std::size(sizes)];
    j.request = Request(gpus, per_node);
    j.duration = script ? durations[i] : 1 + static_cast<int>(rng() % 6);
    jobs.push_back(j);
  }
  return jobs;
}

}  // namespace

int RunDemo(std::span<const std::string> raw) {
  auto args = ParseArgs(raw, kDemoFlags);
  if (!args) {
    PrintError(args.error().ToString());
    return 2;
  }
  if (args->Has("help")) {
    std::fputs((std::string(kDemoUsage) + FlagsHelp(kDemoFlags)).c_str(), stdout);
    return 0;
  }
  if (!args->positional().empty()) {
    PrintError("demo takes no arguments, got '" + args->positional()[0] + "' (see phalanx demo --help)");
    return 2;
  }
  auto jobs_flag = IntFlag(*args, "jobs", 12, 1, 100000);
  auto seed = IntFlag(*args, "seed", 1, 0, 2147483647);
  if (!jobs_flag || !seed) {
    PrintError((jobs_flag ? seed.error() : jobs_flag.error()).ToString());
    return 2;
  }
  TopologySpec spec = DemoCluster();
  if (args->Has("topology")) {
    auto loaded = LoadTopologyFile(args->Get("topology"), LoadOptions{});
    if (!loaded) {
      PrintError(loaded.error().ToString());
      return 1;
    }
    spec = std::move(*loaded);
  }
  auto built = Topology::Build(spec);
  if (!built) {
    PrintError(built.error().ToString());
    return 1;
  }
  Topology& topo = *built;
  const Placer placer(topo);
  std::printf("%s", TopologySummary(topo).c_str());
  std::printf("\n");

  const std::vector<DemoJob> jobs = MakeJobs(*jobs_flag, static_cast<uint32_t>(*seed), topo.max_gpus_per_node());
  std::multimap<int, JobId> ends;  // step -> job
  int placed = 0, busy = 0, never = 0;
  auto release_until = [&](int step) {
    while (!ends.empty() && ends.begin()->first <= step) {
      const JobId id = ends.begin()->second;
      ends.erase(ends.begin());
      if (auto s = topo.Release(id); !s) {
        PrintError("release of job " + std::to_string(id) + " failed: " + s.error().ToString());
        continue;
      }
      std::printf("step %2d  job %-3llu ends             free: %u/%zu GPUs | largest free block: %s\n", step,
                  static_cast<unsigned long long>(id), topo.free_gpus(topo.root()), topo.gpu_count(),
                  FreeBlocksLine(topo).c_str());
    }
  };
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int step = static_cast<int>(i) + 1;
    release_until(step);
    const DemoJob& job = jobs[i];
    const PlaceOutcome outcome = placer.Place(job.request);
    std::string line = "step " + std::string(step < 10 ? " " : "") + std::to_string(step) + "  job " +
                       std::to_string(job.id) +
                       std::string(job.id < 10    ? "  "
                                   : job.id < 100 ? " "
                                                  : "") +
                       " " + RequestText(job.request);
    line.resize(std::max<size_t>(line.size() + 1, 34), ' ');
    if (outcome.status == PlaceStatus::kPlaced) {
      const Placement& p = outcome.placement;
      std::vector<GpuId> all = p.gpus;
      all.insert(all.end(), p.held.begin(), p.held.end());
      if (auto s = topo.Allocate(job.id, all, p.prediction.busbw_gbs); !s) {
        PrintError("allocate of job " + std::to_string(job.id) + " failed: " + s.error().ToString());
        return 1;
      }
      ++placed;
      ends.emplace(step + job.duration, job.id);
      const std::string bottleneck = p.prediction.bottleneck.valid() ? topo.domain(p.prediction.bottleneck).name : "-";
      char bw[64];
      std::snprintf(bw, sizeof bw, "%.1f", p.prediction.busbw_gbs);
      line += "placed  " + PlacementText(topo, p.gpus) + "  busbw " + bw + " GB/s (bottleneck " + bottleneck + ")";
    } else {
      (outcome.status == PlaceStatus::kBusy ? busy : never)++;
      line += std::string(PlaceStatusName(outcome.status)) + ": " + outcome.reason;
    }
    std::printf("%s\n", line.c_str());
    std::printf("         free: %u/%zu GPUs, %u whole node%s | largest free block: %s\n", topo.free_gpus(topo.root()),
                topo.gpu_count(), topo.free_nodes(topo.root()), topo.free_nodes(topo.root()) == 1 ? "" : "s",
                FreeBlocksLine(topo).c_str());
  }
  if (!ends.empty()) release_until(ends.rbegin()->first);
  std::printf("\n%d placed, %d busy, %d unsatisfiable; all jobs ended, %u/%zu GPUs free\n", placed, busy, never,
              topo.free_gpus(topo.root()), topo.gpu_count());
  if (const std::string bad = topo.CheckInvariants(); !bad.empty()) {
    PrintError("internal error: topology counters inconsistent: " + bad);
    return 1;
  }
  return 0;
}

}  // namespace phalanx::cli
