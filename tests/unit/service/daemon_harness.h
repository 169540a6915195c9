// Test harness for phalanxd: an in-process Daemon (its own io thread, gRPC servers, the real
// Unix socket and a real SQLite file in a temporary directory), gRPC clients over the socket,
// and FakeAgent, an in-test agent speaking the Agents service over TCP with the token.
// Waiting is by polling a condition (WaitFor), never by fixed sleeps; a check that something did
// not happen comes after a FakeAgent::Barrier on the stream whose report it is about.
// Thread-safety: harness objects belong to the test thread; FakeAgent's reader thread only
// fills its command list (mutex-protected).
#pragma once

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "phalanx/v1/phalanx.grpc.pb.h"
#include "service/clock.h"
#include "service/daemon.h"
#include "util/log.h"

namespace phalanx::service::testing {

namespace v1 = ::phalanx::v1;

inline bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/phxd-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
    chmod(path_.c_str(), 0755);  // other users (nobody) reach the socket inside
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline constexpr const char* kToken = "s3cret-agent-token";
inline constexpr Time kT0 = 1'700'000'000;

// A daemon on the demo cluster (4 nodes x 8 GPUs: node0,node1 under leaf0; node2,node3 under
// leaf1) with an agent listener on 127.0.0.1 (a free port) and a token.
class Harness {
 public:
  explicit Harness(Time start = kT0) : clock(start) {
    SetLogLevel(LogLevel::kWarn);
    { std::ofstream(dir.File("token")) << kToken << "\n"; }
    config.socket_path = dir.File("run/phalanxd.sock");
    config.db_path = dir.File("state/phalanxd.db");
    config.topology = "gen:demo";
    config.agents.listen = "127.0.0.1:0";
    config.agents.token_file = dir.File("token");
    config.heartbeat_interval_s = 1;
    config.heartbeat_timeout_s = 30;
    config.agent_grace_s = 30;
    config.startup_grace_s = 30;
    config.pass_interval_s = 0.05;
    config.kill_grace_s = 5;
    config.fence = false;  // short graces; the fence has its own tests (config_test, integration)
    config.log_level = getenv("PHALANX_TEST_LOG") ? LogLevel::kDebug : LogLevel::kWarn;
  }
  ~Harness() { Stop(); }

  void Start(Daemon::Options o = {}) {
    o.clock = &clock;
    auto d = Daemon::Start(config, o);
    ASSERT_TRUE(d) << d.error().ToString();
    daemon = std::move(*d);
    channel = grpc::CreateChannel("unix:" + config.socket_path, grpc::InsecureChannelCredentials());
    jobs = v1::Jobs::NewStub(channel);
    cluster = v1::Cluster::NewStub(channel);
  }
  void Stop() {
    jobs.reset();
    cluster.reset();
    channel.reset();
    if (daemon) daemon->Stop();
    daemon.reset();
  }
  std::string AgentTarget() const { return "127.0.0.1:" + std::to_string(daemon->agent_port()); }

  // ---- client calls ----
  static v1::JobSpec Spec(uint32_t gpus, std::string name = "job") {
    v1::JobSpec s;
    s.set_name(std::move(name));
    s.set_gpus(gpus);
    s.add_command("/bin/true");
    (*s.mutable_env())["SECRET"] = "xyzzy";
    return s;
  }
  grpc::Status Submit(const v1::JobSpec& spec, uint64_t* id) {
    grpc::ClientContext ctx;
    v1::SubmitRequest req;
    *req.mutable_spec() = spec;
    v1::SubmitResponse resp;
    auto st = jobs->Submit(&ctx, req, &resp);
    *id = resp.job_id();
    return st;
  }
  uint64_t SubmitOk(const v1::JobSpec& spec) {
    uint64_t id = 0;
    auto st = Submit(spec, &id);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return id;
  }
  v1::Job Get(uint64_t id, bool env = false, grpc::Status* status = nullptr) {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(id);
    req.set_include_env(env);
    v1::Job job;
    auto st = jobs->Get(&ctx, req, &job);
    if (status) *status = st;
    return job;
  }
  v1::JobState State(uint64_t id) { return Get(id).state(); }
  bool WaitState(uint64_t id, v1::JobState s) {
    return WaitFor([&] { return State(id) == s; });
  }
  grpc::Status Cancel(uint64_t id) {
    grpc::ClientContext ctx;
    v1::CancelRequest req;
    req.set_job_id(id);
    v1::CancelResponse resp;
    return jobs->Cancel(&ctx, req, &resp);
  }

  TempDir dir;
  ManualClock clock;
  DaemonConfig config;
  std::unique_ptr<Daemon> daemon;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Jobs::Stub> jobs;
  std::unique_ptr<v1::Cluster::Stub> cluster;
};

// An agent for one node: Register, then a Connect stream (first report: the session and a
// heartbeat), a reader thread collecting the daemon's commands.
class FakeAgent {
 public:
  FakeAgent(const std::string& target, std::string node, std::string token = kToken,
            std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials())
      : node_(std::move(node)), token_(std::move(token)) {
    channel_ = grpc::CreateChannel(target, creds);
    stub_ = v1::Agents::NewStub(channel_);
  }
  ~FakeAgent() { Disconnect(); }

  // The registration without calling Register: for an agent that only says hello on Connect.
  void PrepareHello() {
    request_.set_node(node_);
    request_.set_address("10.0.0." + node_.substr(node_.size() - 1));
    session_.clear();
  }

  grpc::Status Register(std::vector<v1::RunningPart> running = {}, v1::RegisterResponse* out = nullptr) {
    grpc::ClientContext ctx;
    Auth(ctx);
    v1::RegisterRequest req;
    req.set_node(node_);
    req.set_address("10.0.0." + node_.substr(node_.size() - 1));
    req.set_version("fake");
    for (int i = 0; i < 8; ++i) req.add_gpus()->set_index(i);
    for (auto& r : running) *req.add_running() = r;
    request_ = req;
    v1::RegisterResponse resp;
    auto st = stub_->Register(&ctx, req, &resp);
    session_ = resp.session();
    if (out) *out = resp;
    return st;
  }

  // Opens the stream; true when the daemon's welcome arrived. The first report is what
  // phalanx-agent sends: the session from Register and, with `hello`, the registration again.
  bool Connect(bool hello = true) {
    ctx_ = std::make_unique<grpc::ClientContext>();
    Auth(*ctx_);
    stream_ = stub_->Connect(ctx_.get());
    v1::AgentReport first;
    first.set_session(session_);
    if (hello) *first.mutable_hello() = request_;
    else first.mutable_heartbeat()->set_time(0);
    (void)stream_->Write(first);  // a refused stream fails here or on the first read
    reader_ = std::thread([this] {
      v1::DaemonCommand c;
      while (stream_->Read(&c)) {
        std::lock_guard<std::mutex> lock(mu_);
        commands_.push_back(c);
      }
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = true;
    });
    const auto welcomed = [&] { return Count([](const v1::DaemonCommand& c) { return c.has_welcome(); }) > 0; };
    WaitFor([&] { return welcomed() || ended(); });
    return welcomed();
  }
  // Registers and connects.
  bool Join(std::vector<v1::RunningPart> running = {}) {
    auto st = Register(std::move(running));
    EXPECT_TRUE(st.ok()) << node_ << ": " << st.error_message();
    return st.ok() && Connect();
  }
  // Breaks the stream as a crash would.
  void Disconnect() {
    if (ctx_) ctx_->TryCancel();
    if (reader_.joinable()) reader_.join();
    if (stream_) (void)stream_->Finish();
    stream_.reset();
    ctx_.reset();
  }

  bool Report(const v1::AgentReport& r) {
    v1::AgentReport copy = r;
    copy.set_session(session_);
    std::lock_guard<std::mutex> lock(write_mu_);
    return stream_ && stream_->Write(copy);
  }
  bool Exit(uint64_t job, uint64_t launch, int code) {
    v1::AgentReport r;
    r.mutable_exited()->set_job_id(job);
    r.mutable_exited()->set_launch_id(launch);
    r.mutable_exited()->set_exit_code(code);
    r.mutable_exited()->set_reason(code == 0 ? "exited" : "failed");
    return Report(r);
  }
  bool Checkpoint(uint64_t job, uint64_t epoch, std::string path) {
    v1::AgentReport r;
    r.mutable_checkpoint()->set_job_id(job);
    r.mutable_checkpoint()->set_epoch(epoch);
    r.mutable_checkpoint()->set_path(std::move(path));
    return Report(r);
  }

  std::vector<v1::DaemonCommand> Commands() const {
    std::lock_guard<std::mutex> lock(mu_);
    return commands_;
  }
  size_t Count(const std::function<bool(const v1::DaemonCommand&)>& pred) const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& c : commands_) n += pred(c) ? 1 : 0;
    return n;
  }
  // The first launch of `job` (waits for it); nullopt on timeout.
  std::optional<v1::LaunchCommand> WaitLaunch(uint64_t job, size_t nth = 0) {
    std::optional<v1::LaunchCommand> out;
    WaitFor([&] {
      std::lock_guard<std::mutex> lock(mu_);
      size_t seen = 0;
      for (const auto& c : commands_) {
        if (c.has_launch() && c.launch().job_id() == job && seen++ == nth) {
          out = c.launch();
          return true;
        }
      }
      return false;
    });
    return out;
  }
  // ExitStored answers for the launch so far.
  size_t ExitsStored(uint64_t launch) const {
    return Count(
        [&](const v1::DaemonCommand& c) { return c.has_exit_stored() && c.exit_stored().launch_id() == launch; });
  }
  bool WaitExitStored(uint64_t launch, size_t n = 1) {
    return WaitFor([&] { return ExitsStored(launch) >= n; });
  }
  bool WaitKill(uint64_t job) {
    return WaitFor([&] {
      return Count([&](const v1::DaemonCommand& c) { return c.has_kill() && c.kill().job_id() == job; }) > 0;
    });
  }
  // A barrier on this agent's stream, for "nothing changed" checks: a heartbeat listing a part
  // of kBarrierJob (a job the daemon never ran), which the daemon answers on this stream with a
  // kill of that part. The daemon handles a stream's reports one after the other on its io
  // thread, and sends a stream's commands in order, so once that kill is here, every report
  // written before it has been handled, the commands sent while handling them are here, and what
  // the handling posted to the io thread runs before any call the test makes next.
  bool Barrier(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const uint64_t launch = ++barriers_;
    v1::AgentReport r;
    r.mutable_heartbeat()->set_time(0);
    v1::RunningPart* part = r.mutable_heartbeat()->add_running();
    part->set_job_id(kBarrierJob);
    part->set_launch_id(launch);
    if (!Report(r)) return false;
    const auto answer = [&](const v1::DaemonCommand& c) {
      return c.has_kill() && c.kill().job_id() == kBarrierJob && c.kill().launch_id() == launch;
    };
    return WaitFor([&] { return Count(answer) > 0; }, timeout);
  }
  static constexpr uint64_t kBarrierJob = 999'999'999;
  bool ended() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }
  const std::string& session() const { return session_; }
  const std::string& node() const { return node_; }

 private:
  void Auth(grpc::ClientContext& ctx) const {
    if (!token_.empty()) ctx.AddMetadata("authorization", "Bearer " + token_);
  }

  std::string node_, token_, session_;
  v1::RegisterRequest request_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Agents::Stub> stub_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentReport, v1::DaemonCommand>> stream_;
  std::thread reader_;
  std::mutex write_mu_;
  mutable std::mutex mu_;
  std::vector<v1::DaemonCommand> commands_;
  bool ended_ = false;
  uint64_t barriers_ = 0;  // the launch id of the last Barrier's part
};

// HTTP/1.0 GET on 127.0.0.1:port with the given header lines (each ending in CRLF): the status
// code and the body (0 and what came back when it is not an HTTP answer).
inline std::pair<int, std::string> HttpGet(int port, const std::string& path,
                                           const std::string& headers = "Host: localhost\r\n") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return {0, ""};
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\n" + headers + "\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t sp = text.find(' ');
  const size_t body = text.find("\r\n\r\n");
  if (sp == std::string::npos || body == std::string::npos) return {0, text};
  return {std::atoi(text.c_str() + sp + 1), text.substr(body + 4)};
}

}  // namespace phalanx::service::testing
