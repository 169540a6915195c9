// Crash safety: a child process submits jobs as fast as it can and writes each acknowledged id
// to a pipe; the parent SIGKILLs it at a random moment, reopens the store, and checks that
// every acknowledged id is there and that the file passes PRAGMA integrity_check. Rounds reuse
// the file, so each child also recovers the previous child's hot WAL; some kills land during
// that open. On PostgreSQL the same rounds kill the client mid-transaction (the server rolls
// its transaction back). Seeded: PHALANX_CRASH_SEED=N reproduces a run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapters/store/group_committer.h"
#include "adapters/store/store.h"
#include "store_test_util.h"

namespace phalanx::store {
namespace {

// Writes all of `text` to `fd` (a pipe); an id line is shorter than PIPE_BUF, so atomic.
void WriteAll(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n <= 0) _exit(3);  // the parent is gone
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// The child: never returns. mode 0: Store::SubmitJob in one thread; mode 1: 4 threads through a
// GroupCommitter; mode 2: batches of several jobs.
[[noreturn]] void Child(const std::string& path, StoreOptions options, int fd, int mode, uint32_t seed) {
  options.sync = seed % 2 ? SyncMode::kFull : SyncMode::kNormal;
  auto store = Store::Open(path, options);
  if (!store) {
    WriteAll(fd, "E " + store.error().ToString() + "\n");
    _exit(2);
  }
  std::mt19937 rng(seed);
  const auto spec = [](uint64_t n) {
    JobSpec s;
    s.name = "crash-" + std::to_string(n);
    s.user = "u";
    s.shape.gpus = 8;
    return s;
  };
  if (mode == 1) {
    GroupCommitter committer(store->get());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (uint64_t i = 0;; ++i) {
          auto id = committer.SubmitJob(spec(i * 4 + static_cast<uint64_t>(t)), 1);
          if (!id) _exit(4);
          WriteAll(fd, std::to_string(*id) + "\n");
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  for (uint64_t i = 0;; ++i) {
    Batch b;
    const int n = mode == 2 ? 1 + static_cast<int>(rng() % 16) : 1;
    for (int k = 0; k < n; ++k) b.SubmitJob(spec(i), 1);
    auto r = (*store)->Apply(b);
    if (!r) _exit(4);
    std::string lines;
    for (JobId id : r->submitted) lines += std::to_string(id) + "\n";
    WriteAll(fd, lines);
  }
}

// Reads whatever is available from `fd` within `ms`, appending complete ids to `acked`.
// Returns false at EOF.
bool Drain(int fd, int ms, std::string& partial, std::set<JobId>& acked, std::string& child_error) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return true;
  char buf[65536];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n <= 0) return false;
  partial.append(buf, static_cast<size_t>(n));
  size_t nl;
  while ((nl = partial.find('\n')) != std::string::npos) {
    const std::string line = partial.substr(0, nl);
    partial.erase(0, nl + 1);
    if (line.starts_with("E ")) {
      child_error = line;
    } else {
      acked.insert(std::stoull(line));
    }
  }
  return true;
}

class StoreCrashTest : public testing::StoreBackendTest {};
INSTANTIATE_BOTH_BACKENDS(StoreCrashTest);

TEST_P(StoreCrashTest, KilledWriterLosesNoAcknowledgedSubmission) {
  uint32_t seed = 20240611;
  if (const char* env = std::getenv("PHALANX_CRASH_SEED")) seed = static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
  SCOPED_TRACE("PHALANX_CRASH_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::string path = Target("crash.db");
  std::set<JobId> acked;  // across all rounds
  constexpr int kRounds = 12;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int mode = round % 3;
    const bool early = round % 4 == 3;  // kill during open / WAL recovery
    const int delay_ms = early ? static_cast<int>(rng() % 4) : 5 + static_cast<int>(rng() % 150);
    const uint32_t child_seed = rng();
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      Child(path, Options(), fds[1], mode, child_seed);
    }
    close(fds[1]);
    std::string partial, child_error;
    const size_t before = acked.size();
    bool open = true;
    if (!early) {
      // Wait for the first acknowledgement (the child is past opening), then let it run.
      while (open && acked.size() == before && child_error.empty())
        open = Drain(fds[0], 1000, partial, acked, child_error);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay_ms);
    while (open && std::chrono::steady_clock::now() < deadline) open = Drain(fds[0], 1, partial, acked, child_error);
    kill(pid, SIGKILL);
    while (open) open = Drain(fds[0], 1000, partial, acked, child_error);  // acks already in the pipe count
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(child_error.empty()) << child_error;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child exited on its own, status " << status;

    auto store = Store::Open(path, Options());
    ASSERT_TRUE(store) << store.error().ToString();
    auto integrity = (*store)->CheckIntegrity();
    ASSERT_TRUE(integrity) << integrity.error().ToString();
    auto all = (*store)->LoadAll();
    ASSERT_TRUE(all) << all.error().ToString();
    std::set<JobId> present;
    for (const JobRecord& j : all->jobs) {
      present.insert(j.spec.id);
      ASSERT_TRUE(j.spec.name.starts_with("crash-")) << j.spec.name;
    }
    size_t lost = 0;
    for (JobId id : acked) lost += !present.count(id);
    EXPECT_EQ(lost, 0u) << "acknowledged jobs missing after kill -9";
    if (!present.empty()) {
      EXPECT_GT(all->next_job_id, *present.rbegin());
    }
    std::printf("  round %2d mode %d kill after %3d ms%s: %zu acknowledged so far, %zu in the store\n", round, mode,
                delay_ms, early ? " (early)" : "", acked.size(), present.size());
  }
  EXPECT_GT(acked.size(), 100u);
}

}  // namespace
}  // namespace phalanx::store
