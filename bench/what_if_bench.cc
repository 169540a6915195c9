// what_if_bench: the cost of Scheduler::WhatIfStarts, the core's "a job of N GPUs within one
// LEVEL submitted now would start at T" (docs/dashboard.md), on the 32,768-GPU SuperPOD.
//
// The cluster of sched_bench: 128 SUs x 32 DGX H100, filled to ~70% by the scheduler (jobs of
// mixed sizes, 1-24 h walltimes), then N pending jobs of the same mix and one pass (their
// reservations: conservative backfill, reserve_depth 100). Then the dashboard's shapes are
// asked -- per level (core, spine, leaf, node) every power of two up to the level's domain and
// the whole domain -- all at once, as /api/v1/placeable does, and each alone; median of
// --reps. Usage: what_if_bench [--reps=R] [--n=N[,N...]] [--seed=S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"

namespace phalanx::bench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "what_if_bench: %s\n", what.c_str());
  std::exit(1);
}

uint32_t PickSize(std::mt19937& rng) {
  const uint32_t r = rng() % 100;
  if (r < 50) {
    static constexpr uint32_t kSmall[] = {1, 1, 2, 4, 8, 8};
    return kSmall[rng() % std::size(kSmall)];
  }
  if (r < 80) return 16u << (rng() % 3);
  if (r < 95) return 128u << (rng() % 2);
  return 512;
}

JobSpec MakeJob(JobId id, std::mt19937& rng, Duration min_wall, Duration max_wall) {
  JobSpec s;
  s.id = id;
  s.user = "u" + std::to_string(rng() % 64);
  s.account = "a" + std::to_string(rng() % 8);
  s.shape.gpus = PickSize(rng);
  s.walltime = min_wall + static_cast<Duration>(rng() % static_cast<uint32_t>(max_wall - min_wall + 1));
  return s;
}

std::unique_ptr<Scheduler> Busy(size_t pending, uint32_t seed) {
  auto spec = GenerateSuperPod({.scalable_units = 128, .nodes_per_su = 32, .model = "dgx-h100"});
  if (!spec) Die(spec.error().ToString());
  auto topo = Topology::Build(*spec);
  if (!topo) Die(topo.error().ToString());
  SchedulerConfig config;
  config.backfill = BackfillMode::kConservative;
  config.reserve_depth = 100;
  auto created = Scheduler::Create(std::move(*topo), config);
  if (!created) Die(created.error().ToString());
  std::unique_ptr<Scheduler> s = std::move(*created);
  const Topology& t = s->topology();
  std::mt19937 rng(seed);
  const size_t target = t.gpu_count() * 7 / 10;
  JobId next = 1;
  for (int round = 0; round < 50; ++round) {
    const size_t used = t.gpu_count() - t.free_gpus(t.root());
    if (used >= target) break;
    size_t batch = 0;
    std::vector<JobId> submitted;
    while (used + batch < target) {
      JobSpec j = MakeJob(next++, rng, 3600, 24 * 3600);
      j.shape.gpus = static_cast<uint32_t>(std::min<size_t>(j.shape.gpus, target - used - batch));
      batch += j.shape.gpus;
      submitted.push_back(j.id);
      if (auto st = s->Submit(std::move(j), 0); !st) Die(st.error().ToString());
    }
    s->Schedule(0);
    size_t left = 0;
    for (JobId id : submitted) {
      if (s->job(id)->state == JobState::kPending) {
        (void)s->Cancel(id, 0);
        ++left;
      }
    }
    if (left == submitted.size()) break;
  }
  for (size_t i = 0; i < pending; ++i) {
    if (auto st = s->Submit(MakeJob(1'000'000 + i, rng, 600, 12 * 3600), 10); !st) Die(st.error().ToString());
  }
  s->Schedule(10);
  return s;
}

// The shapes /api/v1/placeable asks (dashboard.cc), with their level.
std::vector<std::pair<Level, JobSpec>> Shapes(const Topology& t) {
  std::vector<std::pair<Level, JobSpec>> out;
  for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kNode); --l) {
    const Level level = static_cast<Level>(l);
    uint32_t domain = 0;
    for (uint32_t d = 0; d < t.domain_count(); ++d) {
      if (t.domain(DomainId(d)).level == level) domain = std::max(domain, t.domain(DomainId(d)).gpu_count);
    }
    if (domain == 0) continue;
    std::set<uint32_t> sizes;
    for (uint32_t g = 1; g <= domain; g *= 2) sizes.insert(g);
    sizes.insert(domain);
    for (uint32_t g : sizes) {
      JobSpec s;
      s.shape.gpus = g;
      s.shape.level = level;
      s.shape.fit = level == Level::kCore ? FitMode::kAny : FitMode::kRequire;
      out.push_back({level, s});
    }
  }
  return out;
}

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int Main(int argc, char** argv) {
  int reps = 5;
  uint32_t seed = 42;
  std::vector<size_t> sizes = {0, 1'000, 10'000};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) {
      reps = std::max(1, std::atoi(argv[i] + 7));
    } else if (std::strncmp(argv[i], "--seed=", 7) == 0) {
      seed = static_cast<uint32_t>(std::strtoul(argv[i] + 7, nullptr, 10));
    } else if (std::strncmp(argv[i], "--n=", 4) == 0) {
      sizes.clear();
      for (const char* p = argv[i] + 4; *p;) {
        char* end = nullptr;
        sizes.push_back(std::strtoul(p, &end, 10));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) Die(std::string("bad --n list: ") + argv[i]);
      }
    } else {
      std::fprintf(stderr, "what_if_bench: unknown argument '%s' (use --reps=R --n=N[,N...] --seed=S)\n", argv[i]);
      return 2;
    }
  }
  std::printf("Scheduler::WhatIfStarts on the 32,768-GPU SuperPOD at ~70%% occupancy, conservative\n");
  std::printf("backfill (reserve_depth 100); median of %d, seed %u.\n\n", reps, seed);
  std::printf(
      "| pending jobs | running jobs | reservations | shapes | all at once ms | slowest shape ms (which) | never |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t n : sizes) {
    auto s = Busy(n, seed);
    const auto shapes = Shapes(s->topology());
    std::vector<JobSpec> specs;
    for (const auto& [l, spec] : shapes) specs.push_back(spec);
    size_t running = 0;
    for (const auto& [id, j] : s->jobs()) running += j.state == JobState::kRunning;
    std::vector<double> all;
    std::map<size_t, std::vector<double>> one;
    size_t never = 0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto answers = s->WhatIfStarts(specs, s->now());
      all.push_back(Ms(t0, std::chrono::steady_clock::now()));
      never = 0;
      for (const auto& a : answers) never += a && a->start == kForever;
      for (size_t i = 0; i < specs.size(); ++i) {
        const auto t1 = std::chrono::steady_clock::now();
        (void)s->WhatIfStart(specs[i], s->now());
        one[i].push_back(Ms(t1, std::chrono::steady_clock::now()));
      }
    }
    if (std::string bad = s->CheckInvariants(); !bad.empty()) Die("invariants broken:\n" + bad);
    if (std::getenv("WHAT_IF_BENCH_ALL") != nullptr) {
      for (auto& [i, v] : one) {
        std::sort(v.begin(), v.end());
        std::fprintf(stderr, "  %u GPUs within a %s: %.2f ms\n", specs[i].shape.gpus,
                     std::string(LevelName(shapes[i].first)).c_str(), v[v.size() / 2]);
      }
    }
    std::sort(all.begin(), all.end());
    double worst = 0;
    size_t which = 0;
    for (auto& [i, v] : one) {
      std::sort(v.begin(), v.end());
      if (v[v.size() / 2] > worst) {
        worst = v[v.size() / 2];
        which = i;
      }
    }
    std::printf("| %zu | %zu | %zu | %zu | %.1f | %.1f (%u GPUs within a %s) | %zu |\n", n, running,
                s->reservations().size(), specs.size(), all[all.size() / 2], worst, specs[which].shape.gpus,
                std::string(LevelName(shapes[which].first)).c_str(), never);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::bench

int main(int argc, char** argv) { return phalanx::bench::Main(argc, argv); }
