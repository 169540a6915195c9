// The users' socket limits without a daemon: token buckets per uid (time passed in), and the
// PeerRegistry's per-uid connection counting, sweeping of closed connections and idle shutdown
// over real sockets (socketpair).
#include "service/user_limits.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

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

}  // namespace
}  // namespace phalanx::service
