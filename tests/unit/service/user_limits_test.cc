// The users' socket limits without a daemon: token buckets per uid (time passed in), and the
// PeerRegistry's per-uid connection counting, sweeping of closed connections and idle shutdown
// over real sockets (socketpair).
#include "service/user_limits.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/un.h>

#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon_harness.h"
#include "service/unix_listener.h"

namespace phalanx::service {
namespace {

TEST(TokenBucket, SpendsTheBurstThenRefillsAtTheRate) {
  TokenBucket b(/*rate=*/10, /*burst=*/3, /*now=*/0);
  EXPECT_TRUE(b.Take(0));
  EXPECT_TRUE(b.Take(0));
  EXPECT_TRUE(b.Take(0));
  EXPECT_FALSE(b.Take(0));
  EXPECT_FALSE(b.Take(0.05)) << "half a token";
  EXPECT_TRUE(b.Take(0.1));
  EXPECT_FALSE(b.Take(0.1));
  EXPECT_TRUE(b.Full(100)) << "refills up to the burst";
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.Take(100));
  EXPECT_FALSE(b.Take(100)) << "never more than the burst, however long the pause";
}

TEST(UidRateLimiter, OneUidOverItsRateDoesNotTakeAnotherUidsTokens) {
  UidRateLimiter limiter(/*rate=*/5, /*burst=*/10, /*exempt=*/{0});
  int flood_ok = 0;
  for (int i = 0; i < 1000; ++i) flood_ok += limiter.Allow(60001, 1.0 + i * 0.001) ? 1 : 0;
  // 10 at once, then 5/s over the 1 s of the flood.
  EXPECT_GE(flood_ok, 14);
  EXPECT_LE(flood_ok, 16);
  EXPECT_EQ(limiter.refused(), static_cast<uint64_t>(1000 - flood_ok));
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.Allow(60002, 2.0)) << "another uid has its own bucket";
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(limiter.Allow(0, 2.0)) << "root is exempt";
  UidRateLimiter off(0, 0, {});
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(off.Allow(60001, 0));
}

struct Pair {
  int server = -1, client = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    server = fds[0];
    client = fds[1];
  }
  ino_t inode() const {
    struct stat st {};
    fstat(server, &st);
    return st.st_ino;
  }
  void Close() {
    if (server >= 0) close(server);
    if (client >= 0) close(client);
    server = client = -1;
  }
};

TEST(PeerRegistry, CountsConnectionsPerUidAndRefusesOverTheLimits) {
  UserLimits limits;
  limits.max_connections = 5;
  limits.max_connections_per_uid = 3;
  PeerRegistry peers;
  std::vector<Pair> pairs(8);
  using A = PeerRegistry::Admission;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(peers.Admit(pairs[i].server, {60001, 100, 1}, pairs[i].inode(), 0, limits), A::kAdmitted);
  EXPECT_EQ(peers.Admit(pairs[3].server, {60001, 100, 1}, pairs[3].inode(), 0, limits), A::kUidFull);
  EXPECT_EQ(peers.open(60001), 3u);
  EXPECT_EQ(peers.Admit(pairs[3].server, {60002, 100, 2}, pairs[3].inode(), 0, limits), A::kAdmitted);
  EXPECT_EQ(peers.Admit(pairs[4].server, {60003, 100, 3}, pairs[4].inode(), 0, limits), A::kAdmitted);
  EXPECT_EQ(peers.Admit(pairs[5].server, {60004, 100, 4}, pairs[5].inode(), 0, limits), A::kAllFull);
  EXPECT_EQ(peers.Admit(pairs[5].server, {0, 0, 5}, pairs[5].inode(), 0, limits), A::kAdmitted) << "root is exempt";
  EXPECT_EQ(peers.open(), 6u);

  // Connections gRPC closed stop counting once swept.
  const int closed_fd = pairs[0].server;
  pairs[0].Close();
  EXPECT_EQ(peers.open(60001), 3u);
  EXPECT_EQ(peers.Sweep(1, 0, limits).closed, 1u);
  EXPECT_EQ(peers.open(60001), 2u);
  EXPECT_FALSE(peers.Lookup("fd:" + std::to_string(closed_fd)));
  EXPECT_EQ(peers.Admit(pairs[6].server, {60001, 100, 1}, pairs[6].inode(), 1, limits), A::kAllFull)
      << "root's connection counts towards max_connections";
  pairs[3].Close();
  EXPECT_EQ(peers.Sweep(1, 0, limits).closed, 1u);
  EXPECT_EQ(peers.Admit(pairs[6].server, {60001, 100, 1}, pairs[6].inode(), 1, limits), A::kAdmitted);
  for (auto& p : pairs) p.Close();
}

TEST(PeerRegistry, ConnectionsThatMadeNoCallAreShutDownAfterTheIdleTimeout) {
  UserLimits limits;
  PeerRegistry peers;
  Pair quiet, busy, root;
  peers.Admit(quiet.server, {60001, 100, 1}, quiet.inode(), 10, limits);
  peers.Admit(busy.server, {60001, 100, 1}, busy.inode(), 10, limits);
  peers.Admit(root.server, {0, 0, 1}, root.inode(), 10, limits);
  ASSERT_TRUE(peers.Lookup("fd:" + std::to_string(busy.server))) << "a call marks the connection";
  EXPECT_EQ(peers.Sweep(14.9, 5, limits).idle, 0u) << "not idle long enough";
  EXPECT_EQ(peers.Sweep(15, 5, limits).idle, 1u);
  char c;
  EXPECT_EQ(read(quiet.client, &c, 1), 0) << "the quiet client sees its connection end";
  EXPECT_EQ(peers.open(60001), 1u);
  EXPECT_EQ(peers.open(0), 1u) << "root is exempt from the idle timeout";
  EXPECT_EQ(send(busy.client, "x", 1, MSG_DONTWAIT), 1) << "the busy connection is left alone";
  quiet.Close();
  busy.Close();
  root.Close();
}

int HighestOpenFd() {
  int highest = -1;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') highest = std::max(highest, std::atoi(e->d_name));
  }
  closedir(d);
  return highest;
}

// Out of descriptors, accept(2) fails with EMFILE while the connection waits, so poll() says
// "ready" forever: the listener must neither spin nor write a log line per attempt (the issue:
// 8.9 million lines in 28 s), and it serves again once descriptors are free.
TEST(UnixListener, OutOfDescriptorsItDropsTheWaitingConnectionAndBacksOffInsteadOfSpinning) {
  testing::TempDir dir;
  const std::string path = dir.File("s.sock");
  PeerRegistry peers;
  std::mutex mu;
  std::vector<int> held;  // the listener's connections, kept open to use up descriptors
  std::mutex log_mu;
  std::vector<std::string> lines;
  SetLogSink([&](LogLevel, const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu);
    lines.push_back(line);
  });
  UnixListener listener(path, &peers);
  ASSERT_TRUE(listener.Start([&](int fd) {
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(fd);
  }));
  std::vector<int> clients;
  for (int i = 0; i < 40; ++i) clients.push_back(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());

  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(HighestOpenFd() + 1);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  // Fill the holes below the limit, then leave room for exactly 4 more descriptors.
  std::vector<int> filler;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
  for (int i = 0; i < 4 && !filler.empty(); ++i) {
    close(filler.back());
    filler.pop_back();
  }
  int connected = 0;
  for (int c : clients) connected += connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 1 : 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // what it does while out of fds
  const uint64_t attempts = listener.out_of_fds();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);

  EXPECT_EQ(connected, 40);
  size_t held_n = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    held_n = held.size();
  }
  EXPECT_LE(held_n, 4u);
  EXPECT_GE(attempts, 1u);
  EXPECT_LE(attempts, 30u) << "backs off (10 ms doubling to 1 s), does not spin";
  size_t emfile_lines = 0;
  {
    std::lock_guard<std::mutex> lock(log_mu);
    for (const auto& l : lines) emfile_lines += l.find("Too many open files") != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(emfile_lines, 1u);
  EXPECT_LE(emfile_lines, 3u);
  // Each failed attempt closed one waiting connection (its client sees the end).
  int ended = 0;
  for (int c : clients) {
    char b;
    ended += recv(c, &b, 1, MSG_DONTWAIT) == 0 ? 1 : 0;
  }
  EXPECT_GE(ended, 1);
  EXPECT_LE(static_cast<uint64_t>(ended), attempts);

  // Descriptors free again (the limit back where it was; the filler is still open): the
  // connections still waiting are served. The held connections stay open until the listener has
  // stopped, as gRPC's do: only their owner closes them, and the sweep must not race with it.
  const uint64_t before = listener.accepted();
  EXPECT_TRUE(testing::WaitFor([&] { return listener.accepted() > before; }, std::chrono::seconds(5)));
  listener.Stop();
  SetLogSink({});
  for (int c : clients) close(c);
  std::lock_guard<std::mutex> lock(mu);
  for (int fd : held) close(fd);
  for (int fd : filler) close(fd);
}

}  // namespace
}  // namespace phalanx::service
