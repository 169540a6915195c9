// phalanxd under a local user's flood (issue 12.1), over its real Unix socket: one uid opens a
// thousand idle connections and loops on requests (a forked flood_client running as uid 60001)
// while another uid's `gq`-like requests (60002, one new connection each) are all answered
// within a stated bound, and the log stays a few lines. Also: the request rate refusal names
// its limit, idle connections are closed, refused agent calls are logged (rate-limited).
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "daemon_harness.h"

namespace phalanx::service::testing {
namespace {

// The flood client's "key=value ..." first line.
std::map<std::string, double> Fields(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text.substr(0, text.find('\n')));
  for (std::string kv; in >> kv;) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = std::stod(kv.substr(eq + 1));
  }
  return out;
}

// flood_client as `uid` (gid the same), its stdout on *out_fd.
pid_t SpawnAs(uint32_t uid, const std::vector<std::string>& args, int* out_fd) {
  int out[2];
  if (pipe(out) != 0) return -1;
  std::vector<const char*> argv{FLOOD_CLIENT};
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    if (setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0) _exit(3);
    execv(FLOOD_CLIENT, const_cast<char* const*>(argv.data()));
    _exit(4);
  }
  close(out[1]);
  *out_fd = out[0];
  return pid;
}

// Reads the child's output to the end; "exit status N" is appended when it did not exit 0.
std::string Collect(pid_t pid, int fd) {
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text += "\nexit status " + std::to_string(status);
  return text;
}

// Counts what phalanxd logs while alive.
class LogCounter {
 public:
  LogCounter() {
    SetLogSink([this](LogLevel, const std::string& line) {
      ++lines_;
      bytes_ += line.size() + 1;
      std::lock_guard<std::mutex> lock(mu_);
      if (text_.size() < 20000) text_ += line + "\n";
    });
  }
  ~LogCounter() { SetLogSink({}); }
  size_t lines() const { return lines_; }
  size_t bytes() const { return bytes_; }
  std::string text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

 private:
  std::atomic<size_t> lines_{0}, bytes_{0};
  std::mutex mu_;
  std::string text_;
};

int RawConnect(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

grpc::Status ListJobs(v1::Jobs::Stub& stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::ListJobsRequest req;
  v1::ListJobsResponse resp;
  return stub.List(&ctx, req, &resp);
}

TEST(DaemonFlood, OneUsersFloodIsRefusedWhileAnotherUsersRequestsAreAnsweredWithin2s) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become uid 60001 and 60002";
  Harness h;
  UserLimits& lim = h.config.user_limits;
  lim.max_connections_per_uid = 16;
  lim.requests_per_second = 20;
  lim.request_burst = 20;
  h.config.log_level = LogLevel::kInfo;
  h.config.http_listen = "127.0.0.1:0";
  LogCounter log;
  h.Start();
  for (int i = 0; i < 3; ++i) h.SubmitOk(Harness::Spec(1, "queued"));
  const size_t lines_before = log.lines();

  // uid 60001: 4 request loops on their own connections, then 1,000 idle connections, 3 s.
  int flood_fd = -1;
  const pid_t flood = SpawnAs(60001, {"flood", h.config.socket_path, "1000", "3", "4"}, &flood_fd);
  ASSERT_GT(flood, 0);
  ASSERT_TRUE(WaitFor([&] {
    const auto s = h.daemon->user_socket_stats();
    return s.refused_connections >= 900 && s.refused_requests > 0;
  })) << "the flood did not get going";
  // uid 60002 meanwhile: 20 `gq`s one after another.
  int probe_fd = -1;
  const pid_t probe = SpawnAs(60002, {"probe", h.config.socket_path, "20"}, &probe_fd);
  ASSERT_GT(probe, 0);
  const std::string probed = Collect(probe, probe_fd);
#ifdef PHALANX_HAVE_HTTP
  EXPECT_EQ(HttpGet(h.daemon->http_port(), "/healthz").first, 200) << "/healthz answers during the flood";
#endif
  const std::string flooded = Collect(flood, flood_fd);
  const auto p = Fields(probed);
  const auto f = Fields(flooded);
  SCOPED_TRACE("probe: " + probed + "\nflood: " + flooded);
  std::cout << "uid 60002: " << probed << "uid 60001: " << flooded;

  EXPECT_EQ(p.at("ok"), 20) << "every request of the other user is answered";
  EXPECT_LT(p.at("max_ms"), 2000) << "the stated bound (typically a few ms)";

  // The flooder: its idle connections beyond 16 closed at once, its request loop refused with
  // the limit named.
  EXPECT_LE(f.at("idle_open"), 16 - 4);
  EXPECT_GE(f.at("idle_closed"), 1000 - 12);
  EXPECT_GT(f.at("exhausted"), 0);
  EXPECT_LT(f.at("ok"), 20 + 20 * 4 + 10) << "the burst, then about 20/s";
  EXPECT_NE(flooded.find("user_limits.requests_per_second"), std::string::npos);
  const auto stats = h.daemon->user_socket_stats();
  EXPECT_GE(stats.refused_connections, 988u);

  // The log: a few lines per kind of refusal, not one per refusal.
  const size_t flood_lines = log.lines() - lines_before;
  EXPECT_LE(flood_lines, 12u) << log.text();
  EXPECT_NE(log.text().find("max_connections_per_uid"), std::string::npos) << log.text();
  h.Stop();
}

TEST(DaemonFlood, ARequestOverTheUidsRateIsRefusedWithTheLimitNamed) {
  Harness h;
  h.config.user_limits.exempt_uids = {};  // root (this test) is limited too
  h.config.user_limits.requests_per_second = 0.5;
  h.config.user_limits.request_burst = 5;
  h.Start();
  int ok = 0;
  grpc::Status refused;
  for (int i = 0; i < 8; ++i) {
    const grpc::Status st = ListJobs(*h.jobs);
    if (st.ok()) ++ok;
    else refused = st;
  }
  EXPECT_EQ(ok, 5);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("uid 0 is over its request rate (0.5/s, burst 5"), std::string::npos)
      << refused.error_message();
}

TEST(DaemonFlood, IdleConnectionsAreClosedAfterTheIdleTimeout) {
  Harness h;
  h.config.user_limits.exempt_uids = {};
  h.config.user_limits.idle_timeout_s = 1;
  h.Start();
  // A connection that never makes a call: shut down by the listener's sweep.
  const auto t0 = std::chrono::steady_clock::now();
  const int raw = RawConnect(h.config.socket_path);
  ASSERT_GE(raw, 0);
  pollfd pfd{raw, POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 10000), 1) << "not closed within 10 s";
  char buf[256];
  ssize_t n;
  while ((n = read(raw, buf, sizeof buf)) > 0) {  // gRPC's SETTINGS frame, then the end
  }
  EXPECT_EQ(n, 0);
  close(raw);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 0.9);
  // A connection that made a call and then went quiet: closed by gRPC's idle timer.
  ASSERT_TRUE(ListJobs(*h.jobs).ok());
  EXPECT_EQ(h.daemon->user_socket_stats().open, 1u);
  EXPECT_TRUE(WaitFor([&] { return h.daemon->user_socket_stats().open == 0; }, std::chrono::seconds(10)))
      << "still open";
  // The client reconnects when it needs to.
  EXPECT_TRUE(ListJobs(*h.jobs).ok());
}

TEST(DaemonFlood, RefusedAgentCallsAreLoggedWithThePeerAndRateLimited) {
  Harness h;
  LogCounter log;
  h.Start();
  FakeAgent bad(h.AgentTarget(), "node0", "wrong-token");
  for (int i = 0; i < 200; ++i) EXPECT_EQ(bad.Register().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  const std::string text = log.text();
  size_t count = 0;
  for (size_t pos = 0; (pos = text.find("invalid agent token", pos)) != std::string::npos; ++pos) ++count;
  EXPECT_GE(count, 1u) << text;
  EXPECT_LE(count, 3u) << text;
  EXPECT_NE(text.find("agents: call from ipv4:127.0.0.1:"), std::string::npos) << text;
}

}  // namespace
}  // namespace phalanx::service::testing
