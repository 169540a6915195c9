#include "agent/daemon_link.h"

#include <fstream>
#include <random>
#include <sstream>

#include "util/log.h"
#include "util/strings.h"

namespace phalanx::agent {
namespace {

Result<std::string> ReadWhole(const std::string& path, const std::string& flag) {
  std::ifstream in(path);
  if (!in) return Fail(flag, "cannot read '" + path + "'");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string StatusText(const grpc::Status& s) {
  static constexpr const char* kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  const int code = s.error_code();
  std::string out = code >= 0 && code <= 16 ? kNames[code] : "code " + std::to_string(code);
  if (!s.error_message().empty()) out += ": " + s.error_message();
  return out;
}

}  // namespace

Result<std::unique_ptr<DaemonLink>> DaemonLink::Create(LinkOptions options, Callbacks callbacks) {
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!options.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    PHX_ASSIGN_OR_RETURN(auto ca, ReadWhole(options.tls_ca, "--tls-ca"));
    ssl.pem_root_certs = ca;
    if (!options.tls_cert.empty()) {
      PHX_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadWhole(options.tls_cert, "--tls-cert"));
      PHX_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadWhole(options.tls_key, "--tls-key"));
    }
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  return std::unique_ptr<DaemonLink>(new DaemonLink(std::move(options), std::move(callbacks), std::move(creds)));
}

DaemonLink::DaemonLink(LinkOptions options, Callbacks callbacks, std::shared_ptr<grpc::ChannelCredentials> creds)
    : options_(std::move(options)), callbacks_(std::move(callbacks)) {
  grpc::ChannelArguments args;
  if (options_.keepalive.count() > 0) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options_.keepalive.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  // Our own backoff decides when to retry; keep gRPC's reconnects close to it.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(options_.backoff_initial.count()));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(options_.backoff_initial.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options_.backoff_max.count()));
  for (std::string_view t : Split(options_.target, ',')) {
    targets_.emplace_back(Trim(t));
    channels_.push_back(grpc::CreateCustomChannel(targets_.back(), creds, args));
    stubs_.push_back(v1::Agents::NewStub(channels_.back()));
  }
}

DaemonLink::~DaemonLink() { Stop(); }

void DaemonLink::Start() {
  std::lock_guard lock(mu_);
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { Run(); });
}

void DaemonLink::Stop() {
  std::shared_ptr<ConnectStream> stream;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (register_ctx_ != nullptr) register_ctx_->TryCancel();
    stream = stream_;
    cv_.notify_all();
  }
  if (stream) stream->Cancel();
  if (thread_.joinable()) thread_.join();
}

uint64_t DaemonLink::Send(v1::AgentReport report, uint64_t token) {
  std::shared_ptr<ConnectStream> stream;
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    if (!stream_) return 0;
    stream = stream_;
    generation = generation_;
    report.set_session(session_);
  }
  return stream->Send(std::move(report), token) ? generation : 0;
}

void DaemonLink::DropStream(const std::string& why) {
  std::shared_ptr<ConnectStream> stream;
  {
    std::lock_guard lock(mu_);
    stream = stream_;
  }
  if (!stream) return;
  Log(LogLevel::kWarn, "daemon " + current_target() + ": " + why + "; dropping the stream");
  stream->Cancel();
}

std::chrono::milliseconds CappedBackoff(std::chrono::milliseconds backoff, std::chrono::milliseconds cap,
                                        std::chrono::milliseconds initial) {
  return cap.count() > 0 ? std::min(backoff, std::max(cap, initial)) : backoff;
}

void DaemonLink::SetRetryCap(std::chrono::milliseconds cap) {
  std::lock_guard lock(mu_);
  retry_cap_ = cap;
}

std::string DaemonLink::current_target() {
  std::lock_guard lock(mu_);
  return targets_[current_];
}

void DaemonLink::Run() {
  std::minstd_rand rng(std::random_device{}());
  std::chrono::milliseconds backoff = options_.backoff_initial;
  size_t tried = 0;      // addresses tried since the last full round
  bool standby = false;  // a standby answered in this round
  for (;;) {
    bool welcomed = false;
    const std::string ended = Session(&welcomed);
    std::unique_lock lock(mu_);
    if (stopping_) return;
    if (welcomed) {
      backoff = options_.backoff_initial;
      tried = 0;
      standby = false;
    }
    standby = standby || ended.find("UNAVAILABLE: standby") != std::string::npos;
    const std::string from = targets_[current_];
    if (++tried < targets_.size()) {  // the next address at once
      current_ = (current_ + 1) % targets_.size();
      Log(LogLevel::kWarn, "daemon " + from + ": " + ended + "; trying " + targets_[current_]);
      continue;
    }
    tried = 0;
    current_ = (current_ + 1) % targets_.size();
    const std::chrono::milliseconds base = CappedBackoff(backoff, retry_cap_, options_.backoff_initial);
    const auto wait = std::chrono::milliseconds(
        static_cast<int64_t>(static_cast<double>(base.count()) * std::uniform_real_distribution(0.8, 1.2)(rng)));
    Log(LogLevel::kWarn, "daemon " + from + ": " + ended + "; retrying " + targets_[current_] + " in " +
                             std::to_string(wait.count()) + " ms");
    cv_.wait_for(lock, wait, [this] { return stopping_; });
    if (stopping_) return;
    if (!standby) backoff = std::min(backoff * 2, options_.backoff_max);
    standby = false;
  }
}

std::string DaemonLink::Session(bool* welcomed) {
  std::string token;
  if (!options_.token_file.empty()) {
    auto text = ReadWhole(options_.token_file, "--token-file");
    if (!text) return text.error().ToString();
    token = *text;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  }
  const v1::RegisterRequest hello = callbacks_.hello();
  v1::RegisterResponse response;
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + options_.register_timeout);
  {
    std::lock_guard lock(mu_);
    if (stopping_) return "stopping";
    register_ctx_ = &ctx;
  }
  v1::Agents::Stub* stub = nullptr;
  std::string target;
  {
    std::lock_guard lock(mu_);
    stub = stubs_[current_].get();
    target = targets_[current_];
    // Our backoff decides when to try; gRPC's own (grown while this address was down, e.g. a
    // phalanxd killed and restarted as a standby that now leads) must not delay the attempt.
    grpc::experimental::ChannelResetConnectionBackoff(channels_[current_].get());
  }
  const grpc::Status status = stub->Register(&ctx, hello, &response);
  {
    std::lock_guard lock(mu_);
    register_ctx_ = nullptr;
  }
  if (!status.ok()) return "Register failed: " + StatusText(status);
  callbacks_.registered(response);

  v1::AgentReport first;
  first.set_session(response.session());
  *first.mutable_hello() = hello;
  auto stream = ConnectStream::Open(stub, token, std::move(first), callbacks_.command, callbacks_.delivered);
  uint64_t generation = 0;
  bool stopping = false;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_;
    stream_ = stream;
    session_ = response.session();
    generation = ++generation_;
  }
  if (stopping) stream->Cancel();
  Log(LogLevel::kInfo, "registered with " + target + " (session " + response.session() + ")");
  callbacks_.connected(generation);
  const grpc::Status ended = stream->Wait();
  {
    std::lock_guard lock(mu_);
    stream_.reset();
  }
  *welcomed = stream->received_any();
  return "stream ended: " + StatusText(ended);
}

}  // namespace phalanx::agent
