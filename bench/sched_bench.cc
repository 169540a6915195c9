// sched_bench: wall time of one full scheduling pass (Scheduler::Schedule) with N pending jobs.
//
// Cluster: a DGX SuperPOD-like fabric of 128 SUs x 32 DGX H100 nodes (32,768 GPUs), filled to
// 70% (--occupancy=P) by the scheduler itself (jobs of the mix below submitted and started by
// passes at t=0, long walltimes); with --churn=P, P% of the running jobs then end at t=5 (free
// GPUs in scattered pieces, as on a busy cluster). Then N jobs of the same mix are submitted at
// t=10 and one pass is timed with std::chrono::steady_clock. Configuration: conservative
// backfill, reserve_depth 100, the other knobs at their defaults; or, with --policy=NAME, a
// preset (phalanx: EASY with the starvation guard and placement under pressure, the daemon's
// default). Every job is of class "normal": no preemption for class; the preset's preemption for
// service only with --at (below).
// Size mix (GPUs): 50% 1-8, 30% 16-64, 15% 128-256, 5% 512.
// Each measurement runs on a freshly built scheduler (same seed, so the same state); the table
// gives the median of --reps passes.
// With --warm=K, K passes run first (untimed, one a second from t=10) and the next one is timed:
// a daemon's steady state, where a pass follows another with the queue mostly the same. Under a
// keyed policy without preemption (e.g. --policy=ideal-backfill) the Scheduler keeps the queue's
// keys from pass to pass; --kept-keys=0 turns that off (SchedulerConfig::kept_queue_keys), to
// compare.
// With --at=T the timed pass runs at t=T instead (after the warm ones): the running jobs have
// run about T seconds, so under the preset's least-attained-service order (service_min_run 3600)
// a pass at T >= 3,610 preempts them for the pending jobs, which have had none.
// --policy takes a preset or a preset with settings, as `phalanx sim` does (e.g.
// --policy=phalanx:order=priority).
// Usage: sched_bench [--reps=R] [--n=N[,N...]] [--seed=S] [--policy=SPEC] [--occupancy=P] [--churn=P]
//                    [--warm=K] [--at=T] [--kept-keys=0|1]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/sched/config.h"
#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"
#include "util/printable.h"

namespace phalanx::bench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "sched_bench: %s\n", what.c_str());
  std::exit(1);
}

// `text` for a message: escaped, cut at 40 bytes, quoted.
std::string Shown(std::string_view text) {
  return "'" + EscapeForLog(text.substr(0, 40)) + (text.size() > 40 ? "'..." : "'");
}

// `text` as a whole number from `min` to `max` (digits only); dies naming `flag` otherwise.
uint64_t Whole(std::string_view flag, std::string_view text, uint64_t min, uint64_t max) {
  uint64_t v = 0;
  bool ok = !text.empty() && text.size() <= 19;  // 19 digits cannot overflow
  for (size_t i = 0; ok && i < text.size(); ++i) {
    ok = text[i] >= '0' && text[i] <= '9';
    v = v * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (!ok || v < min || v > max) {
    Die("bad " + std::string(flag) + " (a whole number, " + std::to_string(min) + "-" + std::to_string(max) +
        "): " + Shown(text));
  }
  return v;
}

// The whole number after the first `skip` characters of `arg` ("--flag="), from `min` to `max`.
uint64_t WholeArg(const char* arg, size_t skip, uint64_t min, uint64_t max) {
  return Whole(std::string_view(arg, skip - 1), arg + skip, min, max);
}

uint32_t PickSize(std::mt19937& rng) {
  const uint32_t r = rng() % 100;
  if (r < 50) {
    static constexpr uint32_t kSmall[] = {1, 1, 2, 4, 8, 8};
    return kSmall[rng() % std::size(kSmall)];
  }
  if (r < 80) return 16u << (rng() % 3);   // 16, 32, 64
  if (r < 95) return 128u << (rng() % 2);  // 128, 256
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

struct Measurement {
  double ms = 0;
  size_t starts = 0, waits = 0, reservations = 0;
  size_t held = 0;       // waits for a better block while a slower one is free (placement under pressure)
  size_t preempts = 0;   // checkpoint requests and preemptions
  double occupancy = 0;  // before the pass
};

// Builds the busy cluster, submits `n` jobs and times one pass.
Measurement MeasureOnce(size_t n, uint32_t seed, const SchedulerConfig& config, uint32_t occupancy, uint32_t churn,
                        uint32_t warm, Time at) {
  auto spec = GenerateSuperPod({.scalable_units = 128, .nodes_per_su = 32, .model = "dgx-h100"});
  if (!spec) Die(spec.error().ToString());
  auto topo = Topology::Build(*spec);
  if (!topo) Die(topo.error().ToString());
  auto created = Scheduler::Create(std::move(*topo), config);
  if (!created) Die(created.error().ToString());
  Scheduler& sched = **created;
  const Topology& t = sched.topology();
  std::mt19937 rng(seed);

  // Fill to `occupancy` % through the scheduler: submit a batch that would reach the target, run a pass,
  // cancel what did not start, repeat while it makes progress.
  const size_t target = t.gpu_count() * occupancy / 100;
  JobId next = 1;
  for (int round = 0; round < 50; ++round) {
    const size_t used = t.gpu_count() - t.free_gpus(t.root());
    if (used >= target) break;
    size_t batch = 0;
    std::vector<JobId> submitted;
    while (used + batch < target) {
      JobSpec s = MakeJob(next++, rng, 3600, 24 * 3600);
      s.shape.gpus = static_cast<uint32_t>(std::min<size_t>(s.shape.gpus, target - used - batch));
      batch += s.shape.gpus;
      submitted.push_back(s.id);
      if (auto st = sched.Submit(std::move(s), 0); !st) Die(st.error().ToString());
    }
    sched.Schedule(0);
    size_t left = 0;
    for (JobId id : submitted) {
      if (sched.job(id)->state == JobState::kPending) {
        (void)sched.Cancel(id, 0);
        ++left;
      }
    }
    if (left == submitted.size()) break;
  }
  // Churn: `churn` % of the running jobs, picked at random, end at t=5; their GPUs are free in
  // scattered pieces, as on a busy cluster, where multi-GPU jobs find slower split blocks free.
  if (churn > 0) {
    for (JobId id = 1; id < next; ++id) {
      const JobRecord* j = sched.job(id);
      if (j && j->state == JobState::kRunning && rng() % 100 < churn) {
        if (auto st = sched.JobEnded(id, 5, true); !st) Die(st.error().ToString());
      }
    }
  }
  Measurement m;
  m.occupancy = 1.0 - static_cast<double>(t.free_gpus(t.root())) / static_cast<double>(t.gpu_count());

  for (size_t i = 0; i < n; ++i) {
    if (auto st = sched.Submit(MakeJob(1'000'000 + i, rng, 600, 12 * 3600), 10); !st) Die(st.error().ToString());
  }
  Time now = 10;
  for (uint32_t k = 0; k < warm; ++k) (void)sched.Schedule(now++);
  now = std::max(now, at);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Decision> ds = sched.Schedule(now);
  const auto t1 = std::chrono::steady_clock::now();
  m.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  for (const Decision& d : ds) {
    m.starts += d.kind == DecisionKind::kStart;
    m.waits += d.kind == DecisionKind::kWait;
    m.held += d.kind == DecisionKind::kWait && d.wait.detail.ends_with("a slower block is free now");
    m.preempts += d.kind == DecisionKind::kCheckpoint || d.kind == DecisionKind::kPreempt;
  }
  m.reservations = sched.reservations().size();
  if (std::string bad = sched.CheckInvariants(); !bad.empty()) Die("invariants broken:\n" + bad);
  return m;
}

int Main(int argc, char** argv) {
  int reps = 3;
  uint32_t seed = 42;
  std::vector<size_t> sizes = {1'000, 10'000, 100'000};
  SchedulerConfig config;
  config.backfill = BackfillMode::kConservative;
  config.reserve_depth = 100;
  std::string described = "conservative backfill, reserve_depth 100";
  uint32_t occupancy = 70, churn = 0, warm = 0;
  Time at = 0;
  bool kept_keys = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--reps=", 7) == 0) {
      reps = static_cast<int>(WholeArg(argv[i], 7, 1, 1000));
    } else if (std::strncmp(argv[i], "--seed=", 7) == 0) {
      seed = static_cast<uint32_t>(WholeArg(argv[i], 7, 0, std::numeric_limits<uint32_t>::max()));
    } else if (std::strncmp(argv[i], "--n=", 4) == 0) {
      // Comma-separated sizes, each a whole number (an empty item is an error too).
      sizes.clear();
      const std::string_view list(argv[i] + 4);
      for (size_t from = 0;;) {
        const size_t comma = list.find(',', from);
        sizes.push_back(Whole("--n", list.substr(from, comma - from), 1, 10'000'000));
        if (comma == std::string_view::npos) break;
        from = comma + 1;
      }
    } else if (std::strncmp(argv[i], "--occupancy=", 12) == 0) {
      occupancy = static_cast<uint32_t>(WholeArg(argv[i], 12, 1, 100));
    } else if (std::strncmp(argv[i], "--churn=", 8) == 0) {
      churn = static_cast<uint32_t>(WholeArg(argv[i], 8, 0, 100));
    } else if (std::strncmp(argv[i], "--warm=", 7) == 0) {
      warm = static_cast<uint32_t>(WholeArg(argv[i], 7, 0, 1000));
    } else if (std::strncmp(argv[i], "--at=", 5) == 0) {
      at = static_cast<Time>(WholeArg(argv[i], 5, 0, 365 * 24 * 3600));
    } else if (std::strncmp(argv[i], "--kept-keys=", 12) == 0) {
      kept_keys = WholeArg(argv[i], 12, 0, 1) == 1;
    } else if (std::strncmp(argv[i], "--policy=", 9) == 0) {
      auto preset = PolicyFromSpec(argv[i] + 9);
      if (!preset) Die(preset.error().ToString());
      config = std::move(*preset);
      described = "policy preset " + Shown(argv[i] + 9);
    } else {
      std::fprintf(stderr,
                   "sched_bench: unknown argument %s (use --reps=R --n=N[,N...] --seed=S --policy=NAME "
                   "--occupancy=P --churn=P --warm=K --at=T --kept-keys=0|1)\n",
                   Shown(argv[i]).c_str());
      return 2;
    }
  }
  config.kept_queue_keys = kept_keys;
  std::printf("One Schedule() pass, 32,768-GPU SuperPOD (128 SUs x 32 DGX H100) filled to ~%u%%", occupancy);
  if (churn > 0) std::printf(", then %u%% of its running jobs ended", churn);
  std::printf(",\n");
  std::printf("%s; median of %d fresh runs, seed %u", described.c_str(), reps, seed);
  if (warm > 0) std::printf("; the pass after %u untimed ones", warm);
  if (at > 0) std::printf("; timed at t=%lld", static_cast<long long>(at));
  if (!kept_keys) std::printf("; queue keys not kept");
  std::printf(".\n\n");
  std::printf(
      "| pending jobs | median ms | min ms | max ms | starts | reservations | held for a better block | "
      "preempted | occupancy before |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t n : sizes) {
    std::vector<Measurement> ms;
    for (int r = 0; r < reps; ++r) ms.push_back(MeasureOnce(n, seed, config, occupancy, churn, warm, at));
    std::sort(ms.begin(), ms.end(), [](const Measurement& a, const Measurement& b) { return a.ms < b.ms; });
    const Measurement& med = ms[ms.size() / 2];
    std::printf("| %zu | %.1f | %.1f | %.1f | %zu | %zu | %zu | %zu | %.1f%% |\n", n, med.ms, ms.front().ms,
                ms.back().ms, med.starts, med.reservations, med.held, med.preempts, 100.0 * med.occupancy);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace phalanx::bench

int main(int argc, char** argv) { return phalanx::bench::Main(argc, argv); }
