// Google Benchmark: one scheduling pass under a long queue of jobs the starvation guard
// reserves for (the hot path of issue 17's replays, docs/performance.md "Trace replay speed").
//
// Cluster: 4 SUs x 32 DGX H100 (1,024 GPUs, itp-1024's size), filled at t=0 by the scheduler
// with 1-8 GPU jobs of 4-10 day walltimes until nothing more fits. Then --pending jobs of 1-64
// GPUs (1-48 h walltimes) are submitted at t=0 and the pass runs at t=3 days with the phalanx
// preset (EASY backfill; every job waiting 2 days gets a reservation, up to reserve_depth 100),
// so each pass makes ~100 reservations, each walking the running jobs' release times. Passes
// after the first start nothing (no GPU frees up), so every iteration is the same pass.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/sched/config.h"
#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"

namespace phalanx::bench {
namespace {

std::unique_ptr<Scheduler> Busy(size_t pending) {
  auto spec = GenerateSuperPod({.scalable_units = 4, .nodes_per_su = 32, .model = "dgx-h100"});
  if (!spec) return nullptr;
  auto topo = Topology::Build(*spec);
  auto config = PolicyPreset("phalanx");
  if (!topo || !config) return nullptr;
  config->max_walltime = 30 * 86400;  // the fill jobs run for up to 10 days
  auto created = Scheduler::Create(std::move(*topo), *config);
  if (!created) return nullptr;
  std::unique_ptr<Scheduler> sched = std::move(*created);
  std::mt19937 rng(17);
  JobId next = 1;
  auto job = [&](uint32_t gpus, Duration wall) {
    JobSpec s;
    s.id = next++;
    s.user = "u" + std::to_string(rng() % 32);
    s.account = s.user;
    s.shape.gpus = gpus;
    s.walltime = wall;
    return s;
  };
  const Topology& t = sched->topology();
  static constexpr uint32_t kFill[] = {1, 1, 1, 2, 4, 8};
  for (int round = 0; round < 40 && t.free_gpus(t.root()) > 0; ++round) {
    for (int i = 0; i < 64; ++i) {
      (void)sched->Submit(job(kFill[rng() % 6], 4 * 86400 + static_cast<Duration>(rng() % (6 * 86400))), 0);
    }
    sched->Schedule(0);
    const std::vector<JobId> queued = sched->queue();  // the pass's queue: started ones too
    for (const JobId id : queued) {
      if (sched->job(id)->state == JobState::kPending) (void)sched->Cancel(id, 0);  // did not fit
    }
  }
  static constexpr uint32_t kQueue[] = {1, 1, 1, 2, 4, 8, 8, 16, 32, 64};
  for (size_t i = 0; i < pending; ++i) {
    (void)sched->Submit(job(kQueue[rng() % 10], 3600 + static_cast<Duration>(rng() % (47 * 3600))), 0);
  }
  sched->Schedule(3 * 86400);  // starts whatever fits; the passes after it are all alike
  return sched;
}

void BM_PassWithGuardReservations(benchmark::State& state) {
  std::unique_ptr<Scheduler> sched = Busy(static_cast<size_t>(state.range(0)));
  if (!sched) {
    state.SkipWithError("could not build the cluster");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(sched->Schedule(3 * 86400));
  state.counters["reservations"] = static_cast<double>(sched->reservations().size());
  state.counters["running"] = static_cast<double>(sched->topology().job_count());
}
BENCHMARK(BM_PassWithGuardReservations)->Arg(200)->Arg(2000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace phalanx::bench
