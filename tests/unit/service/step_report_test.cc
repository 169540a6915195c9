// Step reports from Slurm compute nodes (service/step_report.h, step_report_server.h): the
// payload the SPANK plugin writes (plugins/spank/report.h) parses back, bad payloads are refused
// naming the line, and the server over a real Unix socket and a real munged (a private key and
// socket) gives the handler the credential's uid and answers the plugin's client: ok, the
// handler's refusal, a forged credential, a replayed one, a payload that is not a report.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "call_auth.h"
#include "report.h"
#include "service/step_report.h"
#include "service/step_report_server.h"
#include "signed_report.h"

namespace phalanx::service {
namespace {

std::string Format(const char* kind, unsigned job, const char* step, const char* node, long long epoch,
                   const char* path) {
  char buf[8192];
  EXPECT_EQ(phx_report_format(buf, sizeof buf, kind, job, step, node, epoch, path), 0);
  return buf;
}

TEST(StepReport, ThePluginsPayloadParsesBack) {
  auto start = ParseStepReport(Format("start", 42, "batch", "n3", -1, nullptr));
  ASSERT_TRUE(start) << start.error().ToString();
  EXPECT_EQ(start->kind, StepReport::Kind::kStart);
  EXPECT_EQ(start->slurm_job, 42u);
  EXPECT_EQ(start->step, "batch");
  EXPECT_EQ(start->node, "n3");
  auto end = ParseStepReport(Format("end", 4294967295u, "0", nullptr, 7, "/ignored"));  // no epoch/path on an end
  ASSERT_TRUE(end) << end.error().ToString();
  EXPECT_EQ(end->kind, StepReport::Kind::kEnd);
  EXPECT_EQ(end->slurm_job, 4294967295u);
  EXPECT_EQ(end->node, "");
  auto ckpt = ParseStepReport(Format("checkpoint", 9, nullptr, "n1", 3, "/ckpt/step 3"));
  ASSERT_TRUE(ckpt) << ckpt.error().ToString();
  EXPECT_EQ(ckpt->kind, StepReport::Kind::kCheckpoint);
  EXPECT_EQ(ckpt->epoch, 3u);
  EXPECT_EQ(ckpt->path, "/ckpt/step 3");
  auto next = ParseStepReport(Format("checkpoint", 9, nullptr, nullptr, -1, nullptr));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->epoch, 0u);  // phalanxd numbers it
  char small[16];
  EXPECT_EQ(phx_report_format(small, sizeof small, "start", 1, nullptr, nullptr, -1, nullptr), -1);
  char buf[256];
  EXPECT_EQ(phx_report_format(buf, sizeof buf, "checkpoint", 1, nullptr, nullptr, 1, "a\nkind=end"), -1);
}

TEST(StepReport, BadPayloadsNameTheLine) {
  const struct {
    std::string payload, error;
  } cases[] = {
      {"", "report line 1: not a step report (expected 'phalanx-step-report/1')"},
      {"phalanx-step-report/2\nkind=start\njob=1\n", "report line 1: not a step report"},
      {"phalanx-step-report/1\njob=1\n", "report: no kind= line"},
      {"phalanx-step-report/1\nkind=start\n", "report: no job= line"},
      {"phalanx-step-report/1\nkind=stop\njob=1\n",
       "report line 2: kind='stop': not a kind (start, end or checkpoint)"},
      {"phalanx-step-report/1\nkind=start\njob=0\n", "report line 3: job='0': not a Slurm job id"},
      {"phalanx-step-report/1\nkind=start\njob=4294967296\n", "report line 3: job='4294967296': not a Slurm job id"},
      {"phalanx-step-report/1\nkind=start\njob=1\njob=2\n", "report line 4: key 'job' given twice"},
      {"phalanx-step-report/1\nkind=start\njob=1\nuser=root\n", "report line 4: unknown key 'user'"},
      {"phalanx-step-report/1\nkind=start\njob=1\nnoequals\n", "report line 4: 'noequals' is not key=value"},
      {"phalanx-step-report/1\nkind=start\njob=1\nnode=n\x01\n", "report line 4: node='n\\x01': control characters"},
      {"phalanx-step-report/1\nkind=start\njob=1\nepoch=3\n", "report: epoch= and path= belong to a checkpoint"},
      {"phalanx-step-report/1\nkind=checkpoint\njob=1\nepoch=-1\n", "report line 4: epoch='-1': not a number"},
  };
  for (const auto& c : cases) {
    auto r = ParseStepReport(c.payload);
    ASSERT_FALSE(r) << c.payload;
    EXPECT_NE(r.error().ToString().find(c.error), std::string::npos) << r.error().ToString() << "\nwanted: " << c.error;
  }
}

// munged on a private key and socket, stopped at the end.
class PrivateMunged {
 public:
  explicit PrivateMunged(const std::string& dir) : pid_file_(dir + "/munged.pid"), socket_(dir + "/munge.sock") {
    const std::string key = dir + "/munge.key";
    {
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string bytes(1024, '\0');
      random.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      std::ofstream(key, std::ios::binary) << bytes;
    }
    chmod(key.c_str(), 0600);
    const std::string cmd = "munged --force --key-file=" + key + " --socket=" + socket_ + " --pid-file=" + pid_file_ +
                            " --log-file=" + dir + "/munged.log --seed-file=" + dir + "/munged.seed";
    started_ = std::system(cmd.c_str()) == 0;  // munged forks into the background once its socket is up
  }
  ~PrivateMunged() { Stop(); }
  // Stops munged; before its directory (with the pid file) is removed, or it would outlive the test.
  // Waits (at most 5 s) until it is gone: while it exits it removes its pid file and socket, which
  // raced with the directory's removal ("cannot remove all: No such file or directory").
  void Stop() {
    std::ifstream in(pid_file_);
    pid_t pid = 0;
    if (in >> pid && pid > 0 && kill(pid, SIGTERM) == 0) {
      for (int i = 0; i < 500 && Alive(pid); ++i) usleep(10'000);
    }
    pid_file_.clear();
  }
  bool started() const { return started_; }
  const std::string& socket() const { return socket_; }

 private:
  // Running: it exists and is not a zombie (munged is not our child; PID 1 may reap it late).
  static bool Alive(pid_t pid) {
    if (kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
  }
  std::string pid_file_, socket_;
  bool started_ = false;
};

class StepReportServerTest : public ::testing::Test {
 protected:
  static std::string MakeDir() {
    std::string tmpl = "/tmp/phx-step-report-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    return tmpl;
  }
  void SetUp() override {
    if (!auth::HaveMunge()) GTEST_SKIP() << "built without libmunge";
    ASSERT_TRUE(munged_.started()) << "munged did not start (config/install-deps.sh installs munge)";
    StepReportServer::Options o;
    o.socket = dir_ + "/report.sock";
    o.munge_socket = munged_.socket();
    server_ = std::make_unique<StepReportServer>(
        io_, o, [this](const StepReport& r, const Caller& who, std::function<void(Status)> done) {
          seen_.push_back({r, who});  // io thread only
          if (r.slurm_job == 13) return done(Fail(ErrorCode::kPermissionDenied, "Slurm job 13", "not yours"));
          done({});
        });
    ASSERT_TRUE(server_->Start());
    io_thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (server_) OnIo([this] { server_->Stop(); });
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
    server_.reset();
    munged_.Stop();
    std::filesystem::remove_all(dir_);
  }
  void OnIo(const std::function<void()>& fn) {
    std::promise<void> p;
    boost::asio::post(io_, [&] {
      fn();
      p.set_value();
    });
    p.get_future().wait();
  }
  int Send(const std::string& line, std::string* why) {
    char w[512] = "";
    const int rc = phx_report_send((dir_ + "/report.sock").c_str(), 5000, line.c_str(), w, sizeof w);
    *why = w;
    return rc;
  }
  std::string Cred(const std::string& payload) {
    auto c = auth::MungeEncode(munged_.socket(), payload);
    EXPECT_TRUE(c) << c.error().message;
    return c ? *c : "";
  }

  std::string dir_ = MakeDir();
  PrivateMunged munged_{dir_};
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{io_.get_executor()};
  std::unique_ptr<StepReportServer> server_;
  std::thread io_thread_;
  std::vector<std::pair<StepReport, Caller>> seen_;
};

TEST_F(StepReportServerTest, TheCredentialsUidReachesTheHandler) {
  char why[256] = "";
  const std::string payload = Format("checkpoint", 77, "batch", "n2", 4, "/ckpt/4");
  ASSERT_EQ(phx_report_signed((dir_ + "/report.sock").c_str(), munged_.socket().c_str(), 5000, payload.c_str(), why,
                              sizeof why),
            0)
      << why;
  OnIo([this] {
    ASSERT_EQ(seen_.size(), 1u);
    EXPECT_EQ(seen_[0].first.kind, StepReport::Kind::kCheckpoint);
    EXPECT_EQ(seen_[0].first.slurm_job, 77u);
    EXPECT_EQ(seen_[0].first.epoch, 4u);
    EXPECT_EQ(seen_[0].first.path, "/ckpt/4");
    EXPECT_EQ(seen_[0].second.uid, getuid());
    EXPECT_EQ(seen_[0].second.admin, getuid() == 0);
    EXPECT_EQ(server_->accepted(), 1u);
  });
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/report.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);  // every job's user connects; identity is the credential's
}

TEST_F(StepReportServerTest, RefusalsAreAnswered) {
  std::string why;
  // The handler's refusal.
  EXPECT_EQ(Send(Cred(Format("start", 13, "0", "n1", -1, nullptr)), &why), 1);
  EXPECT_EQ(why, "Slurm job 13: not yours");
  // Forged: made by a munged with another key; and text that is no credential at all.
  std::filesystem::create_directory(dir_ + "/other");
  {
    PrivateMunged other(dir_ + "/other");
    ASSERT_TRUE(other.started());
    auto forged = auth::MungeEncode(other.socket(), Format("checkpoint", 5, nullptr, nullptr, -1, nullptr));
    ASSERT_TRUE(forged) << forged.error().message;
    EXPECT_EQ(Send(*forged, &why), 1);
    EXPECT_NE(why.find("MUNGE credential: invalid"), std::string::npos) << why;
  }
  EXPECT_EQ(Send("MUNGE:AwQFAAB7forgedforgedforgedforgedforgedforgedforged:", &why), 1);
  EXPECT_NE(why.find("MUNGE credential: invalid"), std::string::npos) << why;
  // Replayed: the same credential twice.
  const std::string once = Cred(Format("end", 5, "batch", "n1", -1, nullptr));
  EXPECT_EQ(Send(once, &why), 0) << why;
  EXPECT_EQ(Send(once, &why), 1);
  EXPECT_NE(why.find("MUNGE credential: replayed"), std::string::npos) << why;
  // A valid credential whose payload is not a report.
  EXPECT_EQ(Send(Cred("hello"), &why), 1);
  EXPECT_NE(why.find("not a step report"), std::string::npos) << why;
  OnIo([this] {
    EXPECT_EQ(seen_.size(), 2u);  // job 13 and the first job 5; the others never reached it
    EXPECT_EQ(server_->accepted(), 1u);
    EXPECT_EQ(server_->refused(), 5u);
  });
}

// Compute nodes on other hosts: the same reports over TCP (slurm.report_listen).
TEST_F(StepReportServerTest, OverTcp) {
  StepReportServer::Options o;
  o.listen = "127.0.0.1:0";
  o.munge_socket = munged_.socket();
  std::atomic<uint32_t> job{0};
  StepReportServer tcp(io_, o, [&job](const StepReport& r, const Caller&, std::function<void(Status)> done) {
    job = r.slurm_job;
    done({});
  });
  ASSERT_TRUE(tcp.Start());
  ASSERT_GT(tcp.tcp_port(), 0);
  const std::string target = "127.0.0.1:" + std::to_string(tcp.tcp_port());
  char why[256] = "";
  const std::string payload = Format("start", 31, "0", "n9", -1, nullptr);
  EXPECT_EQ(phx_report_signed(target.c_str(), munged_.socket().c_str(), 5000, payload.c_str(), why, sizeof why), 0)
      << why;
  EXPECT_EQ(job.load(), 31u);
  std::string w;
  char buf[256] = "";
  EXPECT_EQ(phx_report_send(target.c_str(), 5000, "MUNGE:forged:", buf, sizeof buf), 1);
  EXPECT_NE(std::string(buf).find("MUNGE credential: invalid"), std::string::npos) << buf;
  OnIo([&tcp] { tcp.Stop(); });
  StepReportServer::Options bad;
  bad.listen = "head-node:6820";
  StepReportServer named(io_, bad,
                         [](const StepReport&, const Caller&, std::function<void(Status)> done) { done({}); });
  auto st = named.Start();
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().ToString(),
            "slurm.report_listen head-node:6820: not ADDRESS:PORT with a numeric address (0.0.0.0:6820, [::]:6820)");
}

TEST_F(StepReportServerTest, ALiveServerIsNotReplaced) {
  StepReportServer::Options o;
  o.socket = dir_ + "/report.sock";
  StepReportServer second(io_, o, [](const StepReport&, const Caller&, std::function<void(Status)> done) { done({}); });
  auto st = second.Start();
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().ToString().find("another server already listens there"), std::string::npos)
      << st.error().ToString();
}

}  // namespace
}  // namespace phalanx::service
