// phalanxd under kill -9: real processes, a real SQLite file, real agents running real jobs.
//
// The test starts phalanxd (gen:demo: 4 nodes x 8 GPUs) and four phalanx-agent processes (one
// per node, declared GPUs, jobs are `sleep`), then submits PHALANX_CRASH_JOBS (2,000) uniquely
// named jobs from several threads, each with its own connection, paced over about 12 s, while
// the main thread SIGKILLs phalanxd at seeded random moments (mostly 100-400 ms after its
// start, sometimes 1.5-3 s so that agents re-register and jobs run) and restarts it on the same
// store each time (short lives go on after the submissions until there were 8 kills). A
// submission is recorded only when it was acknowledged; a failed one is retried under a new
// name (its outcome is unknown: it may or may not be stored). The scheduler runs FIFO here so
// that small jobs run beside gangs (more concurrency to check); the invariants do not depend
// on the policy.
//
// While this runs, a sampler reads /proc every 40 ms and fails the test if two launches of one
// job are alive at the same time or one GPU is used by two jobs' processes at the same time;
// another thread lists running jobs and checks that no GPU is allocated to two jobs.
//
// After the last restart:
//   - every acknowledged job is in the daemon (Get with the environment) with its spec intact,
//     every stored job is one the client attempted, no name is stored twice;
//   - quiescent check: drain every node, SIGSTOP every job process (so none can end), let the
//     reports settle, then the daemon's running jobs and the processes alive must match one to
//     one: exactly one launch per running job, one process per node of its allocation, on the
//     GPUs the daemon allocated (CUDA_VISIBLE_DEVICES); allocations are disjoint;
//   - the daemon stops cleanly on SIGTERM; the store opens with the Store API, passes
//     PRAGMA integrity_check and has every acknowledged job with its spec and launch info.
//
// Printed: the seed, kills, acknowledged and failed submissions, job states, launches seen,
// and the failed jobs by reason. Also asserted:
//   - no job ends failed: every job is a `sleep` that exits 0, so a job ends failed only when a
//     crash lost its outcome or its launch. A job that ran must keep its exit 0: neither when the
//     part ends while phalanxd is down (4dae593: the agent lists ended parts when it registers)
//     nor when phalanxd dies after the agent wrote the exit but before the daemon committed the
//     outcome (the agent keeps the part until the daemon answers ExitStored, after that commit).
//     A launch decided (committed) but not delivered before the kill is requeued when its agent
//     registers without it (docs/daemon.md, "Kept across a restart"), never failed;
//   - at least 5 kills hit a daemon that had acknowledged submissions (a life counts when a
//     Submit was sent and answered within it), so the kills overlap the submissions.
// PHALANX_CRASH_SEED=N picks the kill schedule (default 1, so that CI runs one schedule; the
// interleaving is still the machine's; bench/run_crash_soak.sh runs random seeds);
// PHALANX_CRASH_JOBS=N changes the number of jobs; PHALANX_CRASH_KEEP=1 keeps the directory
// (store, logs, agents' state dirs).
//
// The rig (processes, /proc, job specs) is crash_rig.h; job_ends_while_daemon_down_test.cc is a
// deterministic case of one outcome this test samples.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapters/store/store.h"
#include "crash_rig.h"
#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::crash_test {
namespace {

constexpr int kSubmitters = 6;

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Ack {
  uint64_t id = 0;
  uint64_t slot = 0;
  v1::JobSpec spec;
};

std::string Diff(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  google::protobuf::util::MessageDifferencer d;
  std::string report;
  d.ReportDifferencesToString(&report);
  return d.Compare(a, b) ? std::string() : report;
}

// The node a failed job's reason names ("lost: the agent on node3 registered without it",
// "exit 1 on node2"); "" when none.
std::string NodeOfFailure(const std::string& reason) {
  const size_t at = reason.rfind(" on node");
  if (at == std::string::npos) return {};
  size_t end = at + 8;
  while (end < reason.size() && reason[end] >= '0' && reason[end] <= '9') ++end;
  return reason.substr(at + 4, end - at - 4);
}

std::string GpuKey(const v1::GpuRef& g) { return g.node() + ":" + std::to_string(g.index()); }

// Running and checkpointing jobs; empty optional when the daemon did not answer.
std::optional<std::vector<v1::Job>> ListActive(v1::Jobs::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  v1::ListJobsRequest req;
  req.add_states(v1::JOB_STATE_RUNNING);
  req.add_states(v1::JOB_STATE_CHECKPOINTING);
  v1::ListJobsResponse resp;
  if (!stub.List(&ctx, req, &resp).ok()) return std::nullopt;
  return std::vector<v1::Job>(resp.jobs().begin(), resp.jobs().end());
}

// "" when no GPU is allocated to two jobs.
std::string OverlappingGpus(const std::vector<v1::Job>& jobs) {
  std::map<std::string, uint64_t> owner;
  for (const v1::Job& j : jobs) {
    for (const v1::GpuRef& g : j.gpus()) {
      auto [it, fresh] = owner.emplace(GpuKey(g), j.id());
      if (!fresh)
        return "GPU " + GpuKey(g) + " is allocated to jobs " + std::to_string(it->second) + " and " +
               std::to_string(j.id());
    }
  }
  return {};
}

TEST(DaemonCrash, KillNineWhileSubmittingWithAgentsRunningJobs) {
  const uint64_t seed =
      EnvU64("PHALANX_CRASH_SEED", 1);  // fixed: CI runs one schedule (random ones: bench/run_crash_soak.sh)
  const uint64_t total = EnvU64("PHALANX_CRASH_JOBS", 2000);
  const double spread_s =  // submissions are paced over this long
      static_cast<double>(EnvU64("PHALANX_CRASH_SPREAD_S", 12));
  std::printf("PHALANX_CRASH_SEED=%llu jobs=%llu\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(total));
  const auto t0 = Clock::now();

  CrashRig rig;
  ASSERT_GT(rig.port, 0);
  ASSERT_NO_FATAL_FAILURE(rig.StartDaemon());
  for (int n = 0; n < kNodes; ++n) ASSERT_NO_FATAL_FAILURE(rig.StartAgent(n));

  // ---- submitters ----
  std::mutex mu;
  std::vector<std::string> violations;
  std::map<uint64_t, std::set<uint64_t>> launches_seen;  // job -> launches ever seen
  std::map<uint64_t, std::set<std::string>> nodes_seen;  // job -> nodes where a process of it was seen
  size_t samples = 0, max_alive = 0, alloc_checks = 0;
  // Counted without the cap of `violations` (all must stay 0): jobs seen running twice, GPUs
  // used by two jobs' processes, GPUs the daemon allocated to two jobs (per sample / check).
  size_t twice = 0, gpu_shared = 0, gpu_double_allocated = 0;
  // Restart time: from the spawn of a daemon to its first answered GetStats (a life killed
  // before it answered gives none), measured by the prober below.
  std::vector<double> restart_ms;
  std::atomic<int64_t> life_started_ns{Clock::now().time_since_epoch().count()};
  std::vector<Ack> acks;
  std::set<std::string> attempted;
  std::map<int, int> failures;  // status code -> count
  std::atomic<uint64_t> next_slot{0};
  std::atomic<int> submitters_left{kSubmitters};
  const auto submit_start = Clock::now();
  std::atomic<bool> give_up{false};  // a fatal failure: threads end
  // Which daemon life this is (0, 1, ...): bumped after each kill, before the next start, so a
  // Submit sent and answered within one value was answered by that life's daemon.
  std::atomic<int> life{0};
  std::set<int> lives_with_acks;
  std::atomic<bool> stop_watchers{false};
  std::vector<std::thread> submitters, watchers;
  // Whatever ends the test (an ASSERT too), no thread is left joinable.
  struct Joiner {
    std::function<void()> fn;
    ~Joiner() { fn(); }
  } joiner{[&] {
    give_up = true;
    stop_watchers = true;
    for (std::thread& t : submitters)
      if (t.joinable()) t.join();
    for (std::thread& t : watchers)
      if (t.joinable()) t.join();
  }};
  for (int t = 0; t < kSubmitters; ++t) {
    submitters.emplace_back([&, t] {
      auto stub = v1::Jobs::NewStub(rig.Channel());
      std::mt19937_64 rng(seed * 1000 + static_cast<uint64_t>(t));
      for (;;) {
        const uint64_t slot = next_slot.fetch_add(1);
        if (slot >= total || give_up) break;
        std::this_thread::sleep_until(submit_start +
                                      milliseconds(static_cast<int64_t>(spread_s * 1000.0 * static_cast<double>(slot) /
                                                                        static_cast<double>(total))));
        for (int attempt = 0;; ++attempt) {
          const std::string name = rig.tag + "-s" + std::to_string(slot) + "-a" + std::to_string(attempt);
          v1::SubmitRequest req;
          *req.mutable_spec() = MakeSpec(name, slot, rig.tag, rig.dir, rng);
          {
            std::lock_guard lock(mu);
            attempted.insert(name);
          }
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
          v1::SubmitResponse resp;
          const int sent_in = life.load();
          const grpc::Status st = stub->Submit(&ctx, req, &resp);
          const int answered_in = life.load();
          {
            std::lock_guard lock(mu);
            if (st.ok()) {
              acks.push_back(Ack{resp.job_id(), slot, req.spec()});
              if (sent_in == answered_in) lives_with_acks.insert(sent_in);
              break;
            }
            ++failures[st.error_code()];
          }
          if (st.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
            ADD_FAILURE() << "job " << name << " refused: " << st.error_message();
            break;
          }
          if (give_up) break;
          std::this_thread::sleep_for(milliseconds(10 + static_cast<int>(rng() % 20)));
        }
      }
      --submitters_left;
    });
  }

  // ---- the sampler: two launches of one job, or two jobs on one GPU, alive together ----
  watchers.emplace_back([&] {
    while (!stop_watchers) {
      const std::vector<JobProc> procs = ScanJobs(rig.tag);
      std::map<uint64_t, std::vector<const JobProc*>> by_job;
      std::map<std::string, std::vector<const JobProc*>> by_gpu;
      for (const JobProc& p : procs) {
        by_job[p.job].push_back(&p);
        for (const std::string& g : SplitComma(p.gpus)) by_gpu[p.node + ":" + g].push_back(&p);
      }
      std::lock_guard lock(mu);
      ++samples;
      max_alive = std::max(max_alive, procs.size());
      for (const auto& [job, ps] : by_job) {
        for (const JobProc* p : ps) {
          launches_seen[job].insert(p->launch);
          nodes_seen[job].insert(p->node);
        }
        for (const JobProc* a : ps) {
          for (const JobProc* b : ps) {
            if (a->launch < b->launch && StillSame(*a) && StillSame(*b) && ++twice && violations.size() < 20)
              violations.push_back("job " + std::to_string(job) + " runs twice: launch " + std::to_string(a->launch) +
                                   " (pid " + std::to_string(a->pid) + " on " + a->node + ") and launch " +
                                   std::to_string(b->launch) + " (pid " + std::to_string(b->pid) + " on " + b->node +
                                   ")");
          }
        }
      }
      for (const auto& [gpu, ps] : by_gpu) {
        for (const JobProc* a : ps) {
          for (const JobProc* b : ps) {
            if (a->job < b->job && StillSame(*a) && StillSame(*b) && ++gpu_shared && violations.size() < 20)
              violations.push_back("GPU " + gpu + " used by job " + std::to_string(a->job) + " (pid " +
                                   std::to_string(a->pid) + ") and job " + std::to_string(b->job) + " (pid " +
                                   std::to_string(b->pid) + ")");
          }
        }
      }
      std::this_thread::sleep_for(milliseconds(40));
    }
  });

  // ---- the daemon's allocations: never one GPU to two jobs ----
  watchers.emplace_back([&] {
    auto stub = v1::Jobs::NewStub(rig.Channel());
    while (!stop_watchers) {
      if (auto jobs = ListActive(*stub)) {
        const std::string overlap = OverlappingGpus(*jobs);
        std::lock_guard lock(mu);
        ++alloc_checks;
        if (!overlap.empty()) ++gpu_double_allocated;
        if (!overlap.empty() && violations.size() < 20) violations.push_back("daemon: " + overlap);
      }
      std::this_thread::sleep_for(milliseconds(250));
    }
  });

  // ---- the prober: how long each restarted daemon takes to answer ----
  watchers.emplace_back([&] {
    int measured = -1;  // the life whose restart time is recorded
    while (!stop_watchers) {
      const int l = life.load();
      const int64_t started = life_started_ns.load();
      if (l != measured) {
        // A fresh channel each time: a reused one would add its reconnect backoff.
        auto stub = v1::Cluster::NewStub(grpc::CreateChannel("unix:" + rig.socket, grpc::InsecureChannelCredentials()));
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(200));
        v1::GetStatsResponse r;
        if (stub->GetStats(&ctx, v1::GetStatsRequest(), &r).ok() && life.load() == l) {
          const double ms = static_cast<double>(Clock::now().time_since_epoch().count() - started) / 1e6;
          std::lock_guard lock(mu);
          restart_ms.push_back(ms);
          measured = l;
        }
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
  });

  // ---- the killer (this thread: children die with the thread that forked them) ----
  std::mt19937_64 rng(seed);
  int kills = 0, long_lives = 0;
  constexpr int kMinKills = 8;  // short lives go on after the submissions until there were this many
  while (submitters_left > 0 || kills < kMinKills) {
    const bool long_life = submitters_left > 0 && rng() % 3 == 0;
    const int life_ms = long_life ? 1500 + static_cast<int>(rng() % 1501) : 100 + static_cast<int>(rng() % 301);
    const auto until = Clock::now() + milliseconds(life_ms);
    while (Clock::now() < until && (submitters_left > 0 || !long_life)) std::this_thread::sleep_for(milliseconds(5));
    if (submitters_left == 0 && kills >= kMinKills) break;
    rig.KillDaemon();
    ++kills;
    life_started_ns = Clock::now().time_since_epoch().count();
    ++life;
    long_lives += long_life ? 1 : 0;
    ASSERT_NO_FATAL_FAILURE(rig.StartDaemon());
  }
  for (std::thread& t : submitters) t.join();
  // The last restart: everything below is checked against what the store recovered.
  rig.KillDaemon();
  ++kills;
  life_started_ns = Clock::now().time_since_epoch().count();
  ++life;
  ASSERT_NO_FATAL_FAILURE(rig.StartDaemon());
  const double submit_s = Since(submit_start);

  auto channel = rig.Channel();
  auto jobs = v1::Jobs::NewStub(channel);
  auto cluster = v1::Cluster::NewStub(channel);
  const auto serving = [&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(500));
    v1::GetStatsResponse r;
    return cluster->GetStats(&ctx, v1::GetStatsRequest(), &r).ok();
  };
  for (const auto end = Clock::now() + std::chrono::seconds(15); !serving() && Clock::now() < end;)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(serving()) << "phalanxd does not answer after the last restart; log:\n"
                         << Tail(rig.dir + "/phalanxd.log");

  // Agents come back on their own (backoff up to 30 s after many failed attempts); one that is
  // still away after 3 s is restarted (its parts keep running and are re-adopted).
  const auto nodes_up = [&](std::vector<int>* missing) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::ListNodesResponse r;
    if (!cluster->ListNodes(&ctx, v1::ListNodesRequest(), &r).ok()) return false;
    if (missing) missing->clear();
    bool all = true;
    for (const v1::Node& n : r.nodes()) {
      const bool ok = n.agent_connected() && n.state() == v1::NODE_STATE_UP;
      if (!ok && missing) missing->push_back(std::atoi(n.name().c_str() + 4));
      all = all && ok;
    }
    return all;
  };
  int agent_restarts = 0;
  for (const auto end = Clock::now() + std::chrono::seconds(3); !nodes_up(nullptr) && Clock::now() < end;)
    std::this_thread::sleep_for(milliseconds(50));
  if (std::vector<int> missing; !nodes_up(&missing)) {
    for (int n : missing) {
      rig.StopAgent(n);
      ASSERT_NO_FATAL_FAILURE(rig.StartAgent(n));
      ++agent_restarts;
    }
    for (const auto end = Clock::now() + std::chrono::seconds(10); !nodes_up(nullptr) && Clock::now() < end;)
      std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(nodes_up(nullptr)) << "agents did not come back; agent log:\n" << Tail(rig.dir + "/agent-node0.log");

  // ---- every acknowledged job, with its spec ----
  ASSERT_EQ(acks.size(), total);
  std::set<uint64_t> acked_ids, acked_lost_daemon, acked_lost_store;  // lost: acknowledged, then missing
  for (const Ack& a : acks) {
    EXPECT_TRUE(acked_ids.insert(a.id).second) << "job id " << a.id << " acknowledged twice";
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(a.id);
    req.set_include_env(true);
    v1::Job got;
    const grpc::Status st = jobs->Get(&ctx, req, &got);
    if (!st.ok()) {
      ADD_FAILURE() << "acknowledged job " << a.id << " (" << a.spec.name() << "): " << st.error_message();
      acked_lost_daemon.insert(a.id);
      continue;
    }
    // phalanxd stores the partition it put the job in: the default one when none was asked.
    v1::JobSpec expected = a.spec;
    if (expected.partitions().empty()) expected.add_partitions("default");
    const std::string diff = Diff(expected, got.spec());
    EXPECT_TRUE(diff.empty()) << "job " << a.id << " spec changed:\n" << diff;
  }
  std::map<v1::JobState, int> by_state;
  std::map<std::string, int> failed_reasons;
  std::vector<std::string> failed_jobs;  // every job that ended failed, with where it was seen
  size_t stored_unacked = 0;
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    req.set_include_finished(true);
    v1::ListJobsResponse resp;
    ASSERT_TRUE(jobs->List(&ctx, req, &resp).ok());
    std::set<std::string> names;
    for (const v1::Job& j : resp.jobs()) {
      ++by_state[j.state()];
      if (j.state() == v1::JOB_STATE_FAILED) {
        std::lock_guard lock(mu);
        const std::string why = j.reason().substr(0, j.reason().find(':'));
        const std::string node = NodeOfFailure(j.reason());
        const bool seen = launches_seen.contains(j.id());
        // No node named: any sighting counts.
        const bool ran_there = node.empty() ? seen : seen && nodes_seen[j.id()].contains(node);
        ++failed_reasons[why + (ran_there ? " (its process was seen running there)"
                                : seen    ? " (seen running on another node only)"
                                          : " (never seen running)")];
        failed_jobs.push_back("job " + std::to_string(j.id()) + " (" + j.spec().name() + ", nodes seen:" + [&] {
          std::string n;
          for (const std::string& x : nodes_seen[j.id()]) n += " " + x;
          return n.empty() ? std::string(" none") : n;
        }() + "): " + j.reason());
      }
      EXPECT_TRUE(names.insert(j.spec().name()).second) << "name " << j.spec().name() << " stored twice";
      EXPECT_TRUE(attempted.contains(j.spec().name()))
          << "job " << j.id() << " (" << j.spec().name() << ") was never submitted";
      if (!acked_ids.contains(j.id())) ++stored_unacked;
    }
    for (uint64_t id : acked_ids) {
      const bool listed =
          std::any_of(resp.jobs().begin(), resp.jobs().end(), [id](const v1::Job& j) { return j.id() == id; });
      EXPECT_TRUE(listed) << "acknowledged job " << id << " not listed";
      if (!listed) acked_lost_daemon.insert(id);
    }
  }

  // ---- quiescent check: running jobs <-> live processes ----
  std::this_thread::sleep_for(milliseconds(2000));  // let the last daemon start some jobs
  for (const auto end = Clock::now() + std::chrono::seconds(5); Clock::now() < end;) {
    if (auto a = ListActive(*jobs); a && !a->empty()) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  for (int n = 0; n < kNodes; ++n) {
    grpc::ClientContext ctx;
    v1::NodeRequest req;
    req.set_node("node" + std::to_string(n));
    req.set_reason("crash test: quiescent check");
    v1::Node resp;
    ASSERT_TRUE(cluster->DrainNode(&ctx, req, &resp).ok());
  }
  std::this_thread::sleep_for(milliseconds(300));  // launches decided before the drain arrive
  for (int round = 0; round < 4; ++round) {
    for (const JobProc& p : ScanJobs(rig.tag)) {
      if (p.state != 'T') kill(p.pid, SIGSTOP);
    }
    std::this_thread::sleep_for(milliseconds(150));
  }
  std::this_thread::sleep_for(milliseconds(2500));  // exits, heartbeats and kills settle
  // A launch that arrived after the freeze: stop it too and let its state settle.
  for (int round = 0; round < 10; ++round) {
    bool late = false;
    for (const JobProc& p : ScanJobs(rig.tag)) {
      if (p.state != 'T') {
        kill(p.pid, SIGSTOP);
        late = true;
      }
    }
    if (!late) break;
    std::this_thread::sleep_for(milliseconds(1500));
  }
  stop_watchers = true;
  for (std::thread& t : watchers) t.join();
  auto active = ListActive(*jobs);
  ASSERT_TRUE(active.has_value());
  const std::vector<JobProc> procs = ScanJobs(rig.tag);
  EXPECT_EQ(OverlappingGpus(*active), "");
  std::map<uint64_t, std::vector<const JobProc*>> procs_of;
  for (const JobProc& p : procs) procs_of[p.job].push_back(&p);
  for (const v1::Job& j : *active) {
    std::map<std::string, std::set<std::string>> want;  // node -> local GPU indices
    for (const v1::GpuRef& g : j.gpus()) want[g.node()].insert(std::to_string(g.index()));
    std::map<std::string, std::set<std::string>> have;
    std::set<uint64_t> launch_ids;
    for (const JobProc* p : procs_of[j.id()]) {
      launch_ids.insert(p->launch);
      EXPECT_TRUE(have.emplace(p->node, std::set<std::string>()).second)
          << "job " << j.id() << " has two processes on " << p->node;
      for (const std::string& g : SplitComma(p->gpus)) have[p->node].insert(g);
    }
    EXPECT_EQ(launch_ids.size(), 1u) << "running job " << j.id() << " (" << j.spec().name() << ") has "
                                     << launch_ids.size() << " live launches";
    EXPECT_EQ(have, want) << "job " << j.id() << ": processes on other GPUs than allocated";
  }
  for (const auto& [job, ps] : procs_of) {
    EXPECT_TRUE(std::any_of(active->begin(), active->end(), [job](const v1::Job& j) { return j.id() == job; }))
        << "job " << job << " has a live process (pid " << ps[0]->pid << ", launch " << ps[0]->launch
        << ") but phalanxd does not run it";
  }
  const size_t running_at_check = active->size();
  for (const JobProc& p : procs) kill(p.pid, SIGKILL);

  // ---- stop, then the store itself ----
  kill(rig.daemon, SIGTERM);
  int status = 0;
  for (const auto end = Clock::now() + std::chrono::seconds(15); Clock::now() < end;) {
    if (waitpid(rig.daemon, &status, WNOHANG) == rig.daemon) {
      rig.daemon = -1;
      break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(rig.daemon, -1) << "phalanxd did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "; log:\n"
                                                             << Tail(rig.dir + "/phalanxd.log");
  for (int n = 0; n < kNodes; ++n) rig.StopAgent(n);

  phalanx::store::StoreOptions so;
  so.create_if_missing = false;
  auto store = phalanx::store::Store::Open(rig.db, so);
  ASSERT_TRUE(store) << store.error().ToString();
  auto integrity = (*store)->CheckIntegrity();
  EXPECT_TRUE(integrity) << integrity.error().ToString();
  auto state = (*store)->LoadAll();
  ASSERT_TRUE(state) << state.error().ToString();
  std::map<uint64_t, const phalanx::JobRecord*> stored;
  for (const phalanx::JobRecord& j : state->jobs) stored[j.spec.id] = &j;
  for (const Ack& a : acks) {
    auto it = stored.find(a.id);
    if (it == stored.end()) {
      ADD_FAILURE() << "acknowledged job " << a.id << " is not in the store";
      acked_lost_store.insert(a.id);
      continue;
    }
    EXPECT_EQ(it->second->spec.name, a.spec.name());
    EXPECT_EQ(it->second->spec.shape.gpus, a.spec.gpus());
    EXPECT_EQ(it->second->spec.walltime, a.spec.walltime_s());
    auto blob = (*store)->LoadLaunchInfo(a.id);
    ASSERT_TRUE(blob && blob->has_value()) << "job " << a.id << ": no launch info";
    v1::Job info;
    ASSERT_TRUE(info.ParseFromString(**blob)) << "job " << a.id << ": launch info does not decode";
    const std::string diff = Diff(a.spec, info.spec());
    EXPECT_TRUE(diff.empty()) << "job " << a.id << " stored launch spec differs:\n" << diff;
  }

  for (const std::string& v : violations) ADD_FAILURE() << v;
  size_t relaunched = 0, launches = 0;
  for (const auto& [job, ls] : launches_seen) {
    launches += ls.size();
    relaunched += ls.size() > 1 ? 1 : 0;
  }
  // Lives 0 .. kills-1 were killed; the last one (kills) was stopped with SIGTERM.
  const int acked_kills =
      static_cast<int>(std::count_if(lives_with_acks.begin(), lives_with_acks.end(), [&](int l) { return l < kills; }));
  std::printf(
      "kills: %d (%d long lives, %d of a daemon that had acknowledged submissions), acknowledged: %zu, failed "
      "attempts: %d, "
      "stored but unacknowledged: %zu\n"
      "job states at the end: pending %d, running %d, completed %d, failed %d, cancelled %d, killed %d\n"
      "launches seen alive: %zu (jobs seen: %zu, with 2+ launches over time: %zu), most processes at once: %zu, "
      "samples: %zu, allocation checks: %zu\n"
      "running at the quiescent check: %zu, agent restarts: %d; submission phase %.1f s, total %.1f s\n",
      kills, long_lives, acked_kills, acks.size(),
      [&] {
    int n = 0;
    for (const auto& [code, c] : failures) n += c;
    return n;
      }(),
      stored_unacked, by_state[v1::JOB_STATE_PENDING], by_state[v1::JOB_STATE_RUNNING],
      by_state[v1::JOB_STATE_COMPLETED], by_state[v1::JOB_STATE_FAILED], by_state[v1::JOB_STATE_CANCELLED],
      by_state[v1::JOB_STATE_KILLED], launches, launches_seen.size(), relaunched, max_alive, samples, alloc_checks,
      running_at_check, agent_restarts, submit_s, Since(t0));
  for (const auto& [code, c] : failures) std::printf("  failed submissions with status %d: %d\n", code, c);
  for (const auto& [why, c] : failed_reasons) std::printf("  failed jobs, %s: %d\n", why.c_str(), c);
  std::printf("acknowledged jobs lost: %zu in the daemon, %zu in the store; jobs that ended failed: %zu\n",
              acked_lost_daemon.size(), acked_lost_store.size(), failed_jobs.size());
  std::printf(
      "double allocations: %zu in the daemon's allocations, %zu GPUs used by two jobs' processes, %zu jobs "
      "running twice\n",
      gpu_double_allocated, gpu_shared, twice);
  {
    std::lock_guard lock(mu);
    std::vector<double> r = restart_ms;
    std::sort(r.begin(), r.end());
    const auto at = [&](double q) {
      return r.empty() ? 0.0 : r[std::min(r.size() - 1, static_cast<size_t>(q * r.size()))];
    };
    std::printf("restart to serving: %zu of %d starts measured (ms): median %.0f, p99 %.0f, max %.0f\n", r.size(),
                kills + 1, at(0.5), at(0.99), r.empty() ? 0.0 : r.back());
    for (size_t i = 0; i < r.size(); ++i) std::printf("%s%.0f", i == 0 ? "restart samples (ms): " : " ", r[i]);
    if (!r.empty()) std::printf("\n");
  }
  EXPECT_GE(acked_kills, 5) << "too few kills of a daemon that had acknowledged submissions (" << kills
                            << " kills in all): the kills did not overlap the submissions";
  std::string failed_list;
  for (size_t i = 0; i < failed_jobs.size() && i < 20; ++i) failed_list += "\n  " + failed_jobs[i];
  // An agent that forgot an ended part once its exit was written (not stored) failed 1-5 jobs a
  // run here: a daemon killed between the write and its commit never learnt the exit. A launch
  // decided but never delivered (the kill came between the commit and the send) failed its job
  // until such a job was requeued instead (the CI failover run of 2026-12-04 lost one that way).
  EXPECT_TRUE(failed_jobs.empty()) << failed_jobs.size()
                                   << " jobs ran `sleep` (exit 0) or never ran, and ended failed:" << failed_list;
  EXPECT_GT(launches, 0u) << "no job ever ran: the agents never got work";
}

}  // namespace
}  // namespace phalanx::crash_test
