// array_bench: what a 10,000-task job array costs the core (docs/performance.md, "Job arrays").
//
// Cluster: a SuperPOD of 128 SUs x 32 DGX H100 nodes (32,768 GPUs), 90% of it held by long
// 8-GPU jobs. Then N array tasks (max_array_size raised to N + 1) of 1 GPU each are submitted (Scheduler::Submit per
// task, as phalanxd does) and one pass is timed, for three cases: the array with %8, the array without a limit, and N
// independent jobs of the same shape (the baseline). Median of --reps fresh runs. Usage: array_bench [--reps=R] [--n=N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"

namespace phalanx::bench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "array_bench: %s\n", what.c_str());
  std::exit(1);
}

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

struct Result {
  double submit_ms = 0, pass_ms = 0;
  size_t starts = 0;
};

enum class Case { kArrayLimited, kArray, kPlainJobs };

Result MeasureOnce(Case c, size_t n) {
  auto spec = GenerateSuperPod({.scalable_units = 128, .nodes_per_su = 32, .model = "dgx-h100"});
  if (!spec) Die(spec.error().ToString());
  auto topo = Topology::Build(*spec);
  if (!topo) Die(topo.error().ToString());
  SchedulerConfig config;
  config.max_array_size = static_cast<uint32_t>(n) + 1;  // as a site would raise MaxArraySize
  auto created = Scheduler::Create(std::move(*topo), config);
  if (!created) Die(created.error().ToString());
  Scheduler& s = **created;
  const size_t fill = s.topology().gpu_count() * 9 / 10 / 8;
  for (size_t i = 0; i < fill; ++i) {
    JobSpec j;
    j.id = 1 + i;
    j.user = "filler";
    j.shape.gpus = 8;
    j.walltime = 7 * 24 * 3600;
    if (auto st = s.Submit(j, 0); !st) Die(st.error().ToString());
  }
  s.Schedule(0);
  const JobId array = 1'000'000;
  Result r;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    JobSpec t;
    t.id = array + 1 + i;
    t.user = "ada";
    t.shape.gpus = 1;
    t.walltime = 3600;
    t.submit = 10;
    if (c != Case::kPlainJobs) {
      t.array_id = array;
      t.array_task = static_cast<uint32_t>(i);
      t.array_max_running = c == Case::kArrayLimited ? 8 : 0;
    }
    if (auto st = s.Submit(t, 10); !st) Die(st.error().ToString());
  }
  const auto t1 = Clock::now();
  const std::vector<Decision> ds = s.Schedule(10);
  const auto t2 = Clock::now();
  r.submit_ms = Ms(t0, t1);
  r.pass_ms = Ms(t1, t2);
  for (const Decision& d : ds) r.starts += d.kind == DecisionKind::kStart;
  return r;
}

int Main(int argc, char** argv) {
  int reps = 3;
  size_t n = 10000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) reps = std::atoi(argv[i] + 7);
    else if (std::strncmp(argv[i], "--n=", 4) == 0) n = static_cast<size_t>(std::atoll(argv[i] + 4));
    else Die(std::string("unknown argument '") + argv[i] + "' (--reps=R --n=N)");
  }
  if (reps < 1 || n == 0 || n > 4000000) Die("--reps must be >= 1 and --n in 1..4000000");
  std::printf("| %zu pending | submit ms (all tasks) | pass ms | starts |\n|---|---:|---:|---:|\n", n);
  for (Case c : {Case::kArrayLimited, Case::kArray, Case::kPlainJobs}) {
    std::vector<Result> rs;
    for (int k = 0; k < reps; ++k) rs.push_back(MeasureOnce(c, n));
    const auto median = [&](auto field) {
      std::vector<double> v;
      for (const Result& r : rs) v.push_back(field(r));
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const char* name = c == Case::kArrayLimited ? "array %8" : c == Case::kArray ? "array, no limit" : "plain jobs";
    std::printf("| %s | %.1f | %.1f | %zu |\n", name, median([](const Result& r) { return r.submit_ms; }),
                median([](const Result& r) { return r.pass_ms; }), rs.front().starts);
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::bench

int main(int argc, char** argv) { return phalanx::bench::Main(argc, argv); }
