// daemon_bench: phalanxd's figures for docs/performance.md ("Daemon"), measured against the real
// program over its Unix socket.
//
//   daemon_bench submit --phalanxd PATH [--sync normal|full] [--inflight N] [--channels C]
//                       [--count M] [--warmup W] [--runs R] [--log-level L] [--dir DIR]
//     Durable submissions per second: for each run a fresh store and a fresh phalanxd
//     (gen:demo, no agents: every job stays pending), then a client keeps N Submit calls in
//     flight (gRPC callback API, spread over C connections) until M were acknowledged (after W
//     warm-up submissions that are not counted). An acknowledgement means the job's batch
//     committed (docs/daemon.md). Per run: submissions/s, ack latency p50/p99/max, the
//     daemon's CPU seconds per 1,000 submissions; then the medians over the runs.
//
//   daemon_bench restart --phalanxd PATH [--jobs N] [--topology gen:NAME] [--runs R]
//                        [--running-percent P] [--dir DIR] [--log-level L]
//     Restart time: fills a store through the Store API with N jobs (70% finished, P% (6)
//     running with disjoint GPU allocations while the cluster is below 80% full, the rest
//     pending; each with its launch info, as phalanxd writes it), then times phalanxd from exec
//     to its socket (recovery done, "phalanxd ready") and to its first answered RPC (GetStats,
//     served on the io thread: after recovery and behind the first scheduling pass), R times
//     after a clean stop (SIGTERM) and R times after kill -9 (a hot WAL, a stale socket).
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "adapters/store/store.h"
#include "adapters/topology/topology_loader.h"
#include "core/topology/topology.h"
#include "phalanx/v1/phalanx.grpc.pb.h"
#include "service/recovery.h"

namespace phalanx::bench {
namespace {

namespace v1 = ::phalanx::v1;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "daemon_bench: %s\n", what.c_str());
  std::exit(1);
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

struct Args {
  std::string mode;
  std::map<std::string, std::string> flags;
  std::string Get(const std::string& k, const std::string& def) const {
    auto it = flags.find(k);
    return it == flags.end() ? def : it->second;
  }
  long Num(const std::string& k, long def) const {
    auto it = flags.find(k);
    return it == flags.end() ? def : std::strtol(it->second.c_str(), nullptr, 10);
  }
};

// ---- phalanxd as a child process ---------------------------------------------------------

pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) Die("cannot open " + log);
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(out, 1);
    dup2(out, 2);
#ifdef SYS_close_range
    syscall(SYS_close_range, 3u, ~0u, 0u);
#endif
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out);
  if (pid < 0) Die("fork failed");
  return pid;
}

std::shared_ptr<grpc::Channel> Channel(const std::string& socket, int n) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one connection per channel
  args.SetInt("phalanx.bench.channel", n);
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

// Polls until GetStats answers; returns when it did, or dies after `limit`.
int64_t ChangeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
}

// A stale socket file left by a killed daemon (its change time `stale`, in ns) does not count.
Clock::time_point WaitServing(const std::string& socket, pid_t pid, const std::string& log, Clock::duration limit,
                              Clock::time_point* socket_seen = nullptr, int64_t stale = 0) {
  const auto end = Clock::now() + limit;
  std::shared_ptr<grpc::Channel> ch;
  std::unique_ptr<v1::Cluster::Stub> stub;
  bool seen = false;
  while (Clock::now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid)
      Die("phalanxd exited (status " + std::to_string(status) + "); see " + log);
    struct stat st {};
    if (!seen && stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && ChangeNs(st) != stale) {
      seen = true;
      if (socket_seen) *socket_seen = Clock::now();
    }
    if (seen) {
      if (!ch) {
        ch = Channel(socket, 999);
        stub = v1::Cluster::NewStub(ch);
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      v1::GetStatsResponse r;
      if (stub->GetStats(&ctx, v1::GetStatsRequest(), &r).ok()) return Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  Die("phalanxd did not answer in time; see " + log);
}

int StopDaemon(pid_t pid, int sig) {
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = s.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream f(s.substr(paren + 2));
  std::vector<std::string> v;
  std::string x;
  while (f >> x) v.push_back(x);
  if (v.size() < 13) return 0;
  return static_cast<double>(std::strtoull(v[11].c_str(), nullptr, 10) + std::strtoull(v[12].c_str(), nullptr, 10)) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string MakeDir(const Args& a, const std::string& what) {
  std::string base = a.Get("dir", "/tmp");
  std::string tmpl = base + "/phxbench-" + what + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp in " + base + " failed");
  return tmpl;
}

// ---- submissions -------------------------------------------------------------------------

struct SubmitRun {
  double per_s = 0, p50 = 0, p99 = 0, max = 0, cpu_per_1k = 0, last_pass_ms = 0;
  uint64_t errors = 0, passes = 0;
};

class Submitter {
 public:
  Submitter(std::vector<std::unique_ptr<v1::Jobs::Stub>>* stubs, uint64_t total, uint64_t skip)
      : stubs_(stubs), total_(total), skip_(skip), latency_(total) {}

  void Run(int inflight) {
    start_ = Clock::now();
    for (int i = 0; i < inflight; ++i) Issue();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return done_ == total_; });
  }
  // Latencies of the counted submissions (after the warm-up), and when the first counted one began.
  std::vector<double> counted() const { return {latency_.begin() + static_cast<long>(skip_), latency_.end()}; }
  Clock::time_point counted_start() const { return counted_start_; }
  Clock::time_point end() const { return end_; }
  uint64_t errors() const { return errors_; }

 private:
  struct Call {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    v1::SubmitResponse resp;
    uint64_t seq = 0;
    Clock::time_point start;
  };

  void Issue() {
    const uint64_t seq = issued_.fetch_add(1);
    if (seq >= total_) return;
    auto* call = new Call;
    call->seq = seq;
    v1::JobSpec* s = call->req.mutable_spec();
    s->set_name("bench-" + std::to_string(seq));
    s->set_gpus(1u << (seq % 4));
    s->set_walltime_s(3600);
    s->add_command("/usr/bin/python3");
    s->add_command("train.py");
    s->add_command("--epochs=10");
    s->set_working_dir("/home/bench");
    (*s->mutable_env())["PATH"] = "/usr/local/bin:/usr/bin:/bin";
    (*s->mutable_env())["HOME"] = "/home/bench";
    call->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (seq == skip_) {
      std::lock_guard lock(mu_);
      counted_start_ = Clock::now();
    }
    call->start = Clock::now();
    (*stubs_)[seq % stubs_->size()]->async()->Submit(&call->ctx, &call->req, &call->resp,
                                                     [this, call](grpc::Status st) {
      latency_[call->seq] = Ms(Clock::now() - call->start);
      if (!st.ok()) {
        ++errors_;
        if (errors_ == 1) std::fprintf(stderr, "daemon_bench: submit failed: %s\n", st.error_message().c_str());
      }
      delete call;
      Issue();
      std::lock_guard lock(mu_);
      if (++done_ == total_) {
        end_ = Clock::now();
        cv_.notify_all();
      }
    });
  }

  std::vector<std::unique_ptr<v1::Jobs::Stub>>* stubs_;
  const uint64_t total_, skip_;
  std::vector<double> latency_;  // by sequence number; each written by one callback
  std::atomic<uint64_t> issued_{0};
  std::atomic<uint64_t> errors_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t done_ = 0;
  Clock::time_point start_, counted_start_, end_;
};

SubmitRun OneSubmitRun(const Args& a, const std::string& sync, int run) {
  const std::string dir = MakeDir(a, "submit");
  const std::string socket = dir + "/d.sock", log = dir + "/phalanxd.log";
  std::ofstream(dir + "/phalanxd.yaml") << "store:\n  sync: " << sync << "\n";
  const pid_t pid = Spawn({a.Get("phalanxd", ""), "--config", dir + "/phalanxd.yaml", "--socket", socket, "--db",
                           dir + "/d.db", "--topology", "gen:demo", "--log-level", a.Get("log-level", "info")},
                          log);
  WaitServing(socket, pid, log, std::chrono::seconds(30));
  const int channels = static_cast<int>(a.Num("channels", 4));
  std::vector<std::shared_ptr<grpc::Channel>> chans;
  std::vector<std::unique_ptr<v1::Jobs::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    chans.push_back(Channel(socket, c));
    stubs.push_back(v1::Jobs::NewStub(chans.back()));
  }
  const uint64_t warmup = static_cast<uint64_t>(a.Num("warmup", 1000));
  const uint64_t count = static_cast<uint64_t>(a.Num("count", 20000));
  Submitter s(&stubs, warmup + count, warmup);
  // PHALANX_BENCH_PERF=FILE: perf record the daemon (call graphs) while the client runs.
  pid_t perf = -1;
  if (const char* out = getenv("PHALANX_BENCH_PERF")) {
    perf = Spawn({"/usr/bin/perf", "record", "-F", "999", "-g", "-p", std::to_string(pid), "-o",
                  std::string(out) + "." + sync + "." + std::to_string(run)},
                 dir + "/perf.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // perf attaches
  }
  const double cpu0 = CpuSeconds(pid);
  s.Run(static_cast<int>(a.Num("inflight", 64)));
  const double cpu1 = CpuSeconds(pid);
  if (perf > 0) StopDaemon(perf, SIGINT);
  // What the passes cost at the end of the run (the queue is longest then).
  v1::GetStatsResponse stats;
  {
    grpc::ClientContext ctx;
    auto cluster = v1::Cluster::NewStub(chans[0]);
    (void)cluster->GetStats(&ctx, v1::GetStatsRequest(), &stats);
  }
  SubmitRun r;
  const std::vector<double> lat = s.counted();
  r.per_s = static_cast<double>(count) / std::chrono::duration<double>(s.end() - s.counted_start()).count();
  r.p50 = Percentile(lat, 0.50);
  r.p99 = Percentile(lat, 0.99);
  r.max = Percentile(lat, 1.0);
  r.errors = s.errors();
  r.cpu_per_1k = (cpu1 - cpu0) / static_cast<double>(warmup + count) * 1000.0;
  r.passes = stats.passes();
  r.last_pass_ms = stats.last_pass_ms();
  // The queue grows by one job per submission and a pass costs O(queue): p99 by quarter.
  std::string quarters;
  for (int q = 0; q < 4; ++q) {
    const size_t from = lat.size() * static_cast<size_t>(q) / 4, to = lat.size() * static_cast<size_t>(q + 1) / 4;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%.1f", q ? " / " : "",
                  Percentile({lat.begin() + static_cast<long>(from), lat.begin() + static_cast<long>(to)}, 0.99));
    quarters += buf;
  }
  const int status = StopDaemon(pid, SIGTERM);
  std::printf(
      "  run %d: %8.0f subs/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  daemon CPU %.3f s/1k subs  passes %llu "
      "(last %.1f ms)  errors %llu%s\n",
      run, r.per_s, r.p50, r.p99, r.max, r.cpu_per_1k, static_cast<unsigned long long>(r.passes), r.last_pass_ms,
      static_cast<unsigned long long>(r.errors),
      WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "" : "  (daemon did not stop cleanly)");
  std::printf("         p99 by quarter of the run (queue %llu -> %llu jobs): %s ms\n",
              static_cast<unsigned long long>(warmup), static_cast<unsigned long long>(warmup + count),
              quarters.c_str());
  std::fflush(stdout);
  if (a.Get("keep", "").empty()) std::filesystem::remove_all(dir);
  return r;
}

int SubmitMain(const Args& a) {
  if (a.Get("phalanxd", "").empty()) Die("submit needs --phalanxd PATH");
  std::vector<std::string> syncs;
  const std::string sync = a.Get("sync", "normal");
  if (sync == "both") syncs = {"normal", "full"};
  else syncs = {sync};
  const int runs = static_cast<int>(a.Num("runs", 3));
  for (const std::string& s : syncs) {
    std::printf(
        "Durable submissions through phalanxd (synchronous=%s): %ld in flight over %ld connections, %ld counted per "
        "run "
        "(after %ld warm-up), log level %s\n",
        s.c_str(), a.Num("inflight", 64), a.Num("channels", 4), a.Num("count", 20000), a.Num("warmup", 1000),
        a.Get("log-level", "info").c_str());
    std::vector<double> rate, p50, p99, max, cpu;
    for (int r = 1; r <= runs; ++r) {
      const SubmitRun x = OneSubmitRun(a, s, r);
      rate.push_back(x.per_s);
      p50.push_back(x.p50);
      p99.push_back(x.p99);
      max.push_back(x.max);
      cpu.push_back(x.cpu_per_1k);
    }
    std::printf("  median of %d: %8.0f subs/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  daemon CPU %.3f s/1k subs\n\n",
                runs, Median(rate), Median(p50), Median(p99), Median(max), Median(cpu));
  }
  return 0;
}

// ---- restart -----------------------------------------------------------------------------

void FillStore(const std::string& path, const std::string& topology_name, size_t n, const Topology& topo,
               uint32_t running_percent) {
  auto opened = store::Store::Open(path);
  if (!opened) Die(opened.error().ToString());
  store::Store& st = **opened;
  std::mt19937 rng(11);
  const Time now = static_cast<Time>(std::time(nullptr));
  const uint32_t gpus_total = topo.gpu_count();
  uint32_t cursor = 0;  // next free GPU for running jobs (aligned blocks inside a node)
  size_t running = 0, pending = 0, finished = 0;
  uint64_t launch = 1;
  store::Batch b;
  for (size_t i = 0; i < n; ++i) {
    static constexpr uint32_t kSizes[] = {1, 1, 2, 4, 8, 8, 16, 64};
    JobSpec s;
    s.id = i + 1;
    s.name = "restart-" + std::to_string(i);
    s.user = "u" + std::to_string(rng() % 64);
    s.account = "a" + std::to_string(rng() % 8);
    s.walltime = 86400;
    s.submit = now - static_cast<Time>(n - i) * 5;  // one every 5 s, the last ones just now
    const uint32_t kind = rng() % 100;
    uint32_t size = kSizes[rng() % std::size(kSizes)];
    // Running jobs: 1-8 GPUs inside one node, while the cluster is less than 80% full.
    bool run = kind >= 70 && kind < 70 + running_percent;
    if (run) {
      size = std::min<uint32_t>(size, 8);
      cursor = (cursor + size - 1) / size * size;
      if (cursor + size > gpus_total * 8 / 10) run = false;
    }
    s.shape.gpus = size;
    b.SubmitJob(s, s.submit);
    v1::Job info;
    v1::JobSpec* ps = info.mutable_spec();
    ps->set_name(s.name);
    ps->set_account(s.account);
    ps->set_gpus(size);
    ps->set_walltime_s(s.walltime);
    ps->add_command("/usr/bin/python3");
    ps->add_command("train.py");
    ps->set_working_dir("/home/" + s.user);
    (*ps->mutable_env())["PATH"] = "/usr/local/bin:/usr/bin:/bin";
    info.set_user(s.user);
    info.set_uid(10000 + static_cast<uint32_t>(rng() % 64));
    info.set_gid(100);
    std::string blob;
    (void)info.SerializeToString(&blob);
    b.SetLaunchInfo(s.id, std::move(blob));
    if (kind < 70 || run) {
      JobRecord j;
      j.spec = s;
      j.start = s.submit + 5;
      j.walltime = s.walltime;
      j.run_walltime = s.walltime;
      j.last_checkpoint = j.start;
      if (run) {
        j.state = JobState::kRunning;
        j.start = now - 60;
        j.last_checkpoint = j.start;
        for (uint32_t g = 0; g < size; ++g) j.gpus.push_back(GpuId(cursor + g));
        cursor += size;
        ++running;
      } else {
        j.state = kind < 60 ? JobState::kCompleted : kind < 66 ? JobState::kFailed : JobState::kCancelled;
        j.end = j.start + 100 + static_cast<Time>(rng() % 3600);
        ++finished;
      }
      b.SaveJobState(j);
      Decision d;
      d.kind = DecisionKind::kStart;
      d.job = s.id;
      d.at = j.start;
      d.gpus = j.gpus;
      b.RecordDecision(d);
      ++launch;
    } else {
      ++pending;
    }
    if (b.size() >= 5000) {
      if (auto r = st.Apply(b); !r) Die(r.error().ToString());
      b.Clear();
    }
  }
  b.SetMeta("topology", service::TopologyFingerprint(topo));
  b.SetMeta("next_launch_id", std::to_string(launch));
  if (auto r = st.Apply(b); !r) Die(r.error().ToString());
  if (auto c = st.CheckpointWal(); !c) Die(c.error().ToString());
  std::printf("store: %zu jobs (%zu finished, %zu pending, %zu running on %u of %u GPUs of %s), %.1f MiB\n", n,
              finished, pending, running, cursor, gpus_total, topology_name.c_str(),
              static_cast<double>(std::filesystem::file_size(path)) / (1 << 20));
}

int RestartMain(const Args& a) {
  const std::string bin = a.Get("phalanxd", "");
  if (bin.empty()) Die("restart needs --phalanxd PATH");
  const std::string topology = a.Get("topology", "gen:superpod:128");
  const size_t n = static_cast<size_t>(a.Num("jobs", 100000));
  const int runs = static_cast<int>(a.Num("runs", 3));
  const std::string dir = MakeDir(a, "restart");
  const std::string db = dir + "/d.db", socket = dir + "/d.sock", log = dir + "/phalanxd.log";

  LoadOptions lo;
  auto spec = LoadTopologyFile(topology, lo);
  if (!spec) Die(spec.error().ToString());
  auto topo = Topology::Build(*spec);
  if (!topo) Die(topo.error().ToString());
  const auto f0 = Clock::now();
  FillStore(db, topology, n, *topo, static_cast<uint32_t>(std::clamp<long>(a.Num("running-percent", 6), 0, 30)));
  std::printf("filled in %.1f s\n", Ms(Clock::now() - f0) / 1000);

  std::printf("phalanxd from exec to the first answered RPC (GetStats), %s, log level %s:\n", topology.c_str(),
              a.Get("log-level", "info").c_str());
  std::map<std::string, std::vector<double>> ready, sock;
  for (const char* how : {"SIGTERM", "kill -9"}) {
    for (int r = 0; r <= runs; ++r) {  // run 0 warms the page cache and the binary; not counted
      struct stat before {};
      const int64_t stale = stat(socket.c_str(), &before) == 0 ? ChangeNs(before) : 0;
      const auto t0 = Clock::now();
      Clock::time_point seen;
      const pid_t pid = Spawn(
          {bin, "--socket", socket, "--db", db, "--topology", topology, "--log-level", a.Get("log-level", "info")},
          log);
      const auto t1 = WaitServing(socket, pid, log, std::chrono::seconds(120), &seen, stale);
      // Let the first pass finish before stopping, so that every run starts from the same store.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      StopDaemon(pid, std::string(how) == "SIGTERM" ? SIGTERM : SIGKILL);
      if (r == 0) continue;
      ready[how].push_back(Ms(t1 - t0));
      sock[how].push_back(Ms(seen - t0));
      std::printf("  after %-7s run %d: socket after %7.1f ms, first RPC answered after %7.1f ms\n", how, r,
                  Ms(seen - t0), Ms(t1 - t0));
      std::fflush(stdout);
    }
  }
  for (const auto& [how, v] : ready)
    std::printf("  median after %-7s: socket %7.1f ms, serving %7.1f ms\n", how.c_str(), Median(sock[how]), Median(v));
  if (a.Get("keep", "").empty()) std::filesystem::remove_all(dir);
  else std::printf("kept %s\n", dir.c_str());
  return 0;
}

int Main(int argc, char** argv) {
  Args a;
  if (argc < 2)
    Die("usage: daemon_bench submit|restart --phalanxd PATH [options] (see the header of bench/daemon_bench.cc)");
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string f = argv[i];
    if (!f.starts_with("--")) Die("unexpected argument " + f);
    f = f.substr(2);
    if (const size_t eq = f.find('='); eq != std::string::npos) {
      a.flags[f.substr(0, eq)] = f.substr(eq + 1);
    } else if (i + 1 < argc) {
      a.flags[f] = argv[++i];
    } else {
      Die("--" + f + " needs a value");
    }
  }
  signal(SIGPIPE, SIG_IGN);
  if (a.mode == "submit") return SubmitMain(a);
  if (a.mode == "restart") return RestartMain(a);
  Die("unknown mode '" + a.mode + "' (submit, restart)");
}

}  // namespace
}  // namespace phalanx::bench

int main(int argc, char** argv) { return phalanx::bench::Main(argc, argv); }
