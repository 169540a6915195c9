// store_bench: the store's figures for docs/store.md, on SQLite and (--dsn=...) PostgreSQL.
//
// 1. Durable submissions per second through a GroupCommitter with 1, 4, 16 and 64 submitting
//    threads (each thread: SubmitJob, wait for the commit, repeat: 64 threads = 64 in flight),
//    with p50/p99/max acknowledgement latency; plus one thread calling Store::SubmitJob
//    directly (one transaction per job) for comparison. SQLite: for synchronous=NORMAL (the
//    default) and FULL. PostgreSQL: the server's settings decide (run_store_bench.sh starts a
//    throwaway cluster with the defaults: fsync on, synchronous_commit on); each row uses a
//    fresh schema `store_bench`.
// 2. Restart: a store holding --restart-jobs jobs (60% completed, 25% pending, 15% running on
//    8 GPUs; one submit event each and a start event per started job) is closed, then timed:
//    Store::Open, LoadAll, rebuilding the id -> JobRecord map, and re-submitting the pending
//    jobs into a fresh Scheduler (128 SUs x 32 DGX H100, built before the clock starts).
//    The file was just written, so it is in the page cache (a warm restart).
// Usage: store_bench [--dir=DIR] [--jobs=N] [--restart-jobs=N] [--sync=normal|full|both]
//                    [--dsn=LIBPQ_CONNECTION_STRING] [--backend=sqlite|postgresql|both]
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "adapters/store/group_committer.h"
#include "adapters/store/store.h"
#ifdef PHALANX_HAVE_POSTGRES
#include "adapters/store/pg_db.h"
#endif
#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"

namespace phalanx::bench {
namespace {

using Clock = std::chrono::steady_clock;
using store::Batch;
using store::GroupCommitter;
using store::Store;
using store::StoreOptions;
using store::SyncMode;

store::Backend g_backend = store::Backend::kSqlite;
std::string g_dsn;  // PostgreSQL: the server; the store lives in schema store_bench

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "store_bench: %s\n", what.c_str());
  std::exit(1);
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

JobSpec MakeSpec(uint64_t n, std::mt19937& rng) {
  static constexpr uint32_t kSizes[] = {1, 2, 4, 8, 8, 16, 64};
  JobSpec s;
  s.name = "bench-" + std::to_string(n);
  s.user = "u" + std::to_string(rng() % 64);
  s.account = "a" + std::to_string(rng() % 8);
  s.shape.gpus = kSizes[rng() % std::size(kSizes)];
  s.walltime = 600 + static_cast<Duration>(rng() % 36000);
  return s;
}

std::string Target(const std::string& path) {
  return g_backend == store::Backend::kPostgres ? g_dsn + " options='-c search_path=store_bench'" : path;
}

std::unique_ptr<Store> OpenFresh(const std::string& path, SyncMode sync) {
  StoreOptions options;
  options.sync = sync;
  options.backend = g_backend;
  if (g_backend == store::Backend::kPostgres) {
#ifdef PHALANX_HAVE_POSTGRES
    auto admin = store::PgDb::Connect(g_dsn);
    if (!admin) Die(admin.error().ToString());
    if (auto st = (*admin)->Exec("DROP SCHEMA IF EXISTS store_bench CASCADE; CREATE SCHEMA store_bench"); !st)
      Die(st.error().ToString());
#endif
  } else {
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
  }
  auto s = Store::Open(Target(path), options);
  if (!s) Die(s.error().ToString());
  return std::move(*s);
}

struct Row {
  double per_s = 0, p50 = 0, p99 = 0, max = 0, group = 0;
  uint64_t txns = 0;
};

Row Summarize(std::vector<double>& lat, Clock::duration wall, uint64_t txns) {
  std::sort(lat.begin(), lat.end());
  Row r;
  r.per_s = static_cast<double>(lat.size()) / std::chrono::duration<double>(wall).count();
  r.p50 = lat[lat.size() / 2];
  r.p99 = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
  r.max = lat.back();
  r.txns = txns;
  r.group = txns ? static_cast<double>(lat.size()) / static_cast<double>(txns) : 1;
  return r;
}

Row Committer(const std::string& path, SyncMode sync, int threads, int total) {
  auto store = OpenFresh(path, sync);
  std::vector<std::vector<double>> lat(threads);
  const int per = std::max(1, total / threads);
  GroupCommitter committer(store.get());
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      lat[t].reserve(per);
      for (int i = 0; i < per; ++i) {
        JobSpec s = MakeSpec(static_cast<uint64_t>(i), rng);
        const auto a = Clock::now();
        auto id = committer.SubmitJob(std::move(s), 1000);
        lat[t].push_back(Ms(Clock::now() - a));
        if (!id) Die(id.error().ToString());
      }
    });
  }
  for (auto& th : ts) th.join();
  const auto wall = Clock::now() - t0;
  committer.Close();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  return Summarize(all, wall, committer.stats().groups);
}

Row Direct(const std::string& path, SyncMode sync, int total) {
  auto store = OpenFresh(path, sync);
  std::mt19937 rng(1);
  std::vector<double> lat;
  lat.reserve(total);
  const auto t0 = Clock::now();
  for (int i = 0; i < total; ++i) {
    JobSpec s = MakeSpec(static_cast<uint64_t>(i), rng);
    const auto a = Clock::now();
    auto id = store->SubmitJob(std::move(s), 1000);
    lat.push_back(Ms(Clock::now() - a));
    if (!id) Die(id.error().ToString());
  }
  return Summarize(lat, Clock::now() - t0, static_cast<uint64_t>(total));
}

void Restart(const std::string& path, size_t n) {
  std::mt19937 rng(7);
  {
    auto store = OpenFresh(path, SyncMode::kNormal);
    Batch b;
    for (size_t i = 0; i < n; ++i) {
      JobSpec s = MakeSpec(i, rng);
      s.id = i + 1;
      s.submit = static_cast<Time>(i / 10);
      const uint32_t kind = rng() % 100;
      b.SubmitJob(s, s.submit);
      if (kind >= 60 && kind < 85) {
        // pending: the submit is all
      } else {
        JobRecord j;
        j.spec = s;
        j.state = kind < 60 ? JobState::kCompleted : JobState::kRunning;
        j.start = s.submit + 5;
        j.walltime = s.walltime;
        j.run_walltime = s.walltime;
        j.last_checkpoint = j.start;
        if (j.state == JobState::kRunning) {
          const uint32_t base = static_cast<uint32_t>(rng() % 4096) * 8;
          for (uint32_t g = 0; g < 8; ++g) j.gpus.push_back(GpuId(base + g));
        } else {
          j.end = j.start + 100;
        }
        b.SaveJobState(j);
        Decision d;
        d.kind = DecisionKind::kStart;
        d.job = s.id;
        d.at = j.start;
        d.gpus = {GpuId(0), GpuId(1), GpuId(2), GpuId(3), GpuId(4), GpuId(5), GpuId(6), GpuId(7)};
        b.RecordDecision(d);
      }
      if (b.size() >= 3000) {
        if (auto r = store->Apply(b); !r) Die(r.error().ToString());
        b.Clear();
      }
    }
    if (auto r = store->Apply(b); !r) Die(r.error().ToString());
  }
  const double mib = g_backend == store::Backend::kSqlite
                         ? static_cast<double>(std::filesystem::file_size(path)) / (1 << 20)
                         : 0.0;  // PostgreSQL: the server's files

  auto spec = GenerateSuperPod({.scalable_units = 128, .nodes_per_su = 32, .model = "dgx-h100"});
  if (!spec) Die(spec.error().ToString());
  auto topo = Topology::Build(*spec);
  if (!topo) Die(topo.error().ToString());
  auto created = Scheduler::Create(std::move(*topo), SchedulerConfig{});
  if (!created) Die(created.error().ToString());
  Scheduler& sched = **created;

  StoreOptions open_options;
  open_options.backend = g_backend;
  const auto t0 = Clock::now();
  auto store = Store::Open(Target(path), open_options);
  if (!store) Die(store.error().ToString());
  const auto t1 = Clock::now();
  auto state = (*store)->LoadAll();
  if (!state) Die(state.error().ToString());
  const auto t2 = Clock::now();
  std::map<JobId, JobRecord> jobs;
  for (JobRecord& j : state->jobs) jobs.emplace_hint(jobs.end(), j.spec.id, std::move(j));
  const auto t3 = Clock::now();
  size_t pending = 0;
  const Time now = static_cast<Time>(n / 10) + 10;
  for (const auto& [id, j] : jobs) {
    if (j.state != JobState::kPending) continue;
    if (auto st = sched.Submit(j.spec, now); !st) Die(st.error().ToString());
    ++pending;
  }
  const auto t4 = Clock::now();
  auto check = (*store)->CheckIntegrity();
  const auto t5 = Clock::now();
  if (!check) Die(check.error().ToString());
  StoreOptions verify = open_options;
  verify.verify_on_open = true;
  const auto t6 = Clock::now();
  auto verified = Store::Open(Target(path), verify);
  const auto t7 = Clock::now();
  if (!verified) Die(verified.error().ToString());

  std::printf("\nRestart with %zu jobs in the store (%.1f MiB, %zu pending, warm page cache)\n", jobs.size(), mib,
              pending);
  std::printf("  %-44s %9s\n", "step", "ms");
  std::printf("  %-44s %9.1f\n", "Store::Open (migrate check, prepare)", Ms(t1 - t0));
  std::printf("  %-44s %9.1f\n", "LoadAll (read + decode every job)", Ms(t2 - t1));
  std::printf("  %-44s %9.1f\n", "rebuild id -> JobRecord map", Ms(t3 - t2));
  std::printf("  %-44s %9.1f\n", "Scheduler::Submit of the pending jobs", Ms(t4 - t3));
  std::printf("  %-44s %9.1f\n", "total (open + load + rebuild + resubmit)", Ms(t4 - t0));
  std::printf("  %-44s %9.1f\n", "  (optional) Open with verify_on_open", Ms(t7 - t6));
  std::printf("  %-44s %9.1f\n", "  (optional) PRAGMA integrity_check", Ms(t5 - t4));
}

int Main(int argc, char** argv) {
  std::string dir;
  int total = 20000;
  size_t restart_jobs = 100000;
  std::vector<SyncMode> modes = {SyncMode::kNormal, SyncMode::kFull};
  std::vector<store::Backend> backends;
  bool backend_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.starts_with("--dir=")) {
      dir = a.substr(6);
    } else if (a.starts_with("--jobs=")) {
      total = std::max(16, std::atoi(a.c_str() + 7));
    } else if (a.starts_with("--restart-jobs=")) {
      restart_jobs = std::strtoul(a.c_str() + 15, nullptr, 10);
    } else if (a == "--sync=normal") {
      modes = {SyncMode::kNormal};
    } else if (a == "--sync=full") {
      modes = {SyncMode::kFull};
    } else if (a == "--sync=both") {
    } else if (a.starts_with("--dsn=")) {
      g_dsn = a.substr(6);
    } else if (a.starts_with("--backend=") && store::ParseBackend(a.substr(10))) {
      backends = {*store::ParseBackend(a.substr(10))};
      backend_given = true;
    } else if (a == "--backend=both") {
      backends = {store::Backend::kSqlite, store::Backend::kPostgres};
      backend_given = true;
    } else {
      std::fprintf(stderr,
                   "usage: store_bench [--dir=DIR] [--jobs=N] [--restart-jobs=N] [--sync=normal|full|both] "
                   "[--dsn=CONNINFO] [--backend=sqlite|postgresql|both]\n");
      return 2;
    }
  }
  if (backends.empty()) backends = {store::Backend::kSqlite};
  if (!g_dsn.empty() && backends.size() == 1 && backends[0] == store::Backend::kSqlite && !backend_given)
    backends = {store::Backend::kSqlite, store::Backend::kPostgres};
  for (store::Backend b : backends)
    if (b == store::Backend::kPostgres && (g_dsn.empty() || !store::PostgresBuilt()))
      Die("postgresql needs --dsn=... and a build with libpq");
  bool made_dir = false;
  if (dir.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "store-bench-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp failed");
    dir = tmpl;
    made_dir = true;
  }
  const std::string path = dir + "/bench.db";
  std::printf("Durable submissions (%d per row, %u hardware threads, store in %s)\n", total,
              std::thread::hardware_concurrency(), dir.c_str());
  std::printf("  %-10s %-7s %-10s %7s %9s %8s %8s %8s %8s %9s\n", "backend", "sync", "path", "threads", "subs/s",
              "p50 ms", "p99 ms", "max ms", "txns", "per txn");
  for (store::Backend backend : backends) {
    g_backend = backend;
    const bool pg = backend == store::Backend::kPostgres;
    for (SyncMode sync : modes) {
      if (pg && sync == SyncMode::kFull) continue;  // PostgreSQL: the server's settings, one row set
      const char* name = pg ? "server" : sync == SyncMode::kFull ? "full" : "normal";
      const int n = !pg && sync == SyncMode::kFull ? std::max(16, total / 4) : total;  // fsyncs are slow
      const auto print = [&](const char* how, int threads, const Row& r) {
        std::printf("  %-10s %-7s %-10s %7d %9.0f %8.3f %8.3f %8.2f %8llu %9.1f\n", pg ? "postgresql" : "sqlite", name,
                    how, threads, r.per_s, r.p50, r.p99, r.max, static_cast<unsigned long long>(r.txns), r.group);
      };
      print("direct", 1, Direct(path, sync, pg ? std::max(16, total / 4) : n));
      for (int threads : {1, 4, 16, 64}) print("committer", threads, Committer(path, sync, threads, n));
    }
  }
  for (store::Backend backend : backends) {
    g_backend = backend;
    if (restart_jobs > 0) {
      std::printf("\n[%s]", backend == store::Backend::kPostgres ? "postgresql" : "sqlite");
      Restart(path, restart_jobs);
    }
  }
  if (made_dir) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace phalanx::bench

int main(int argc, char** argv) { return phalanx::bench::Main(argc, argv); }
