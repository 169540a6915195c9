#include "fake_daemon.h"

#include <chrono>

namespace phalanx::agent::testing {

FakeDaemon::FakeDaemon(std::string token, int port, std::shared_ptr<grpc::ServerCredentials> creds)
    : token_(std::move(token)) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), creds ? creds : grpc::InsecureServerCredentials(),
                           &port_);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
}

FakeDaemon::~FakeDaemon() { Shutdown(); }

void FakeDaemon::Shutdown() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    server_->Wait();
    server_.reset();
  }
}

bool FakeDaemon::Authorized(grpc::ServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  const bool ok = it != md.end() && std::string(it->second.data(), it->second.size()) == "Bearer " + token_;
  if (!ok) {
    std::lock_guard lock(mu_);
    ++unauthenticated_;
  }
  return ok;
}

grpc::Status FakeDaemon::Register(grpc::ServerContext* ctx, const v1::RegisterRequest* request,
                                  v1::RegisterResponse* response) {
  if (!Authorized(ctx)) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad or missing agent token");
  std::lock_guard lock(mu_);
  registers_.push_back(*request);
  response->set_session("session-" + std::to_string(registers_.size()));
  for (uint64_t job : kill_jobs_) response->add_kill_jobs(job);
  response->set_stores_exits(stores_exits_);
  return grpc::Status::OK;
}

grpc::Status FakeDaemon::Connect(grpc::ServerContext* ctx,
                                 grpc::ServerReaderWriter<v1::DaemonCommand, v1::AgentReport>* stream) {
  if (!Authorized(ctx)) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad or missing agent token");
  v1::AgentReport report;
  if (!stream->Read(&report) || !report.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first report must be a hello");
  }
  v1::DaemonCommand welcome;
  {
    std::lock_guard lock(mu_);
    reports_.push_back(report);
    welcome.mutable_welcome()->set_session(report.session());
    for (uint64_t job : kill_jobs_) welcome.mutable_welcome()->add_kill_jobs(job);
    welcome.mutable_welcome()->set_stores_exits(stores_exits_);
  }
  {
    std::lock_guard lock(write_mu_);
    stream->Write(welcome);
    stream_ = stream;
  }
  {
    // Counted once Send() can reach the stream: tests wait for streams() == N, then Send.
    std::lock_guard lock(mu_);
    ++streams_;
  }
  while (stream->Read(&report)) {
    std::lock_guard lock(mu_);
    reports_.push_back(report);
  }
  std::lock_guard lock(write_mu_);
  stream_ = nullptr;
  return grpc::Status::OK;
}

void FakeDaemon::SetKillJobs(std::vector<uint64_t> jobs) {
  std::lock_guard lock(mu_);
  kill_jobs_ = std::move(jobs);
}

void FakeDaemon::SetStoresExits(bool stores) {
  std::lock_guard lock(mu_);
  stores_exits_ = stores;
}

bool FakeDaemon::Send(const v1::DaemonCommand& command) {
  std::lock_guard lock(write_mu_);
  return stream_ != nullptr && stream_->Write(command);
}

int FakeDaemon::unauthenticated() const {
  std::lock_guard lock(mu_);
  return unauthenticated_;
}

int FakeDaemon::streams() const {
  std::lock_guard lock(mu_);
  return streams_;
}

std::vector<v1::RegisterRequest> FakeDaemon::registers() const {
  std::lock_guard lock(mu_);
  return registers_;
}

std::vector<v1::AgentReport> FakeDaemon::reports() const {
  std::lock_guard lock(mu_);
  return reports_;
}

std::optional<v1::PartExited> FakeDaemon::Exited(uint64_t launch_id) const {
  std::lock_guard lock(mu_);
  for (const auto& r : reports_) {
    if (r.has_exited() && r.exited().launch_id() == launch_id) return r.exited();
  }
  return std::nullopt;
}

std::optional<v1::CheckpointReport> FakeDaemon::Checkpoint(uint64_t job_id) const {
  std::lock_guard lock(mu_);
  for (const auto& r : reports_) {
    if (r.has_checkpoint() && r.checkpoint().job_id() == job_id) return r.checkpoint();
  }
  return std::nullopt;
}

bool FakeDaemon::HeartbeatListed(uint64_t launch_id) const {
  std::lock_guard lock(mu_);
  for (const auto& r : reports_) {
    if (!r.has_heartbeat()) continue;
    for (const auto& part : r.heartbeat().running()) {
      if (part.launch_id() == launch_id) return true;
    }
  }
  return false;
}

}  // namespace phalanx::agent::testing
