// phx_report_step (plugins/spank/report.h): a report never takes much longer than timeout_ms,
// whatever phalanxd does.
#include "report.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace {

class SpankReport : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/phx-report-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/phalanxd.sock";
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  // A listener that never accepts, with a backlog of `backlog`.
  void Listen(int backlog) {
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path_.c_str());
    ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(fd_, backlog), 0);
  }
  static double Millis(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
  }
  std::string dir_, path_;
  int fd_ = -1;
};

TEST_F(SpankReport, NoDaemonFailsAtOnceSayingWhy) {
  char why[128] = "";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(phx_report_step(path_.c_str(), 200, why, sizeof why), -1);
  EXPECT_LT(Millis(t0), 100);
  EXPECT_STREQ(why, "No such file or directory");
}

TEST_F(SpankReport, ListeningDaemonTakesIt) {
  Listen(4);
  char why[128] = "";
  EXPECT_EQ(phx_report_step(path_.c_str(), 200, why, sizeof why), 0) << why;
}

TEST_F(SpankReport, DaemonThatNeverAcceptsCostsAtMostTheTimeout) {
  Listen(0);
  // Fill the backlog: connections the daemon never accepts.
  int held[8];
  for (int& h : held) {
    h = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path_.c_str());
    (void)connect(h, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  char why[128] = "";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(phx_report_step(path_.c_str(), 100, why, sizeof why), -1);
  const double ms = Millis(t0);
  EXPECT_GE(ms, 90);
  EXPECT_LT(ms, 1000);
  EXPECT_NE(std::string(why).find("timed out after 100 ms"), std::string::npos) << why;
  for (int h : held) close(h);
}

TEST_F(SpankReport, TooLongPath) {
  char why[128] = "";
  EXPECT_EQ(phx_report_step(("/" + std::string(200, 'x')).c_str(), 100, why, sizeof why), -1);
  EXPECT_STREQ(why, "socket path too long");
}

// phx_report_send: a daemon that takes the connection but never answers costs at most the
// timeout; one that closes without a word is told apart.
TEST_F(SpankReport, SendToADaemonThatNeverAnswersCostsAtMostTheTimeout) {
  Listen(4);  // the kernel completes the connection in the backlog; nobody reads or answers
  char why[128] = "";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(phx_report_send(path_.c_str(), 100, "MUNGE:x:", why, sizeof why), -1);
  const double ms = Millis(t0);
  EXPECT_GE(ms, 90);
  EXPECT_LT(ms, 1000);
  EXPECT_STREQ(why, "timed out after 100 ms (no answer)");
}

TEST_F(SpankReport, SendToADaemonThatClosesSaysSo) {
  Listen(4);
  std::thread daemon([this] {
    const int c = accept(fd_, nullptr, nullptr);
    if (c >= 0) close(c);
  });
  char why[128] = "";
  EXPECT_EQ(phx_report_send(path_.c_str(), 2000, "MUNGE:x:", why, sizeof why), -1);
  daemon.join();
  EXPECT_TRUE(std::string(why) == "closed without an answer" || std::string(why).starts_with("recv: ") ||
              std::string(why).starts_with("send: "))
      << why;
}

TEST_F(SpankReport, SendReadsOkOrRefused) {
  Listen(4);
  for (const std::string answer : {"ok\n", "refused: job 5: it belongs to ada, not to bob\n", "what?\n"}) {
    std::string got;
    std::thread daemon([this, answer, &got] {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[256];
      ssize_t n;
      while ((n = read(c, buf, sizeof buf)) > 0) {
        got.append(buf, static_cast<size_t>(n));
        if (got.find('\n') != std::string::npos) break;
      }
      (void)!write(c, answer.data(), answer.size());
      close(c);
    });
    char why[128] = "";
    const int rc = phx_report_send(path_.c_str(), 2000, "MUNGE:cred:", why, sizeof why);
    daemon.join();
    EXPECT_EQ(got, "MUNGE:cred:\n");
    if (answer == "ok\n") {
      EXPECT_EQ(rc, 0) << why;
    } else if (answer.starts_with("refused")) {
      EXPECT_EQ(rc, 1);
      EXPECT_STREQ(why, "job 5: it belongs to ada, not to bob");
    } else {
      EXPECT_EQ(rc, -1);
      EXPECT_STREQ(why, "unexpected answer 'what?'");
    }
  }
}

}  // namespace
