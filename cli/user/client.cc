#include "client.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <mutex>
#include <vector>

#include <google/protobuf/message_lite.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/client_interceptor.h>

#include "call_auth.h"
#include "options.h"
#include "util/file_read.h"
#include "util/printable.h"

namespace phalanx::cli {

std::string ResolveSocket(std::string_view flag, const char* env, std::string_view cwd) {
  std::string path(flag);
  if (path.empty() && env != nullptr) path = env;
  if (path.empty()) path = kDefaultSocket;
  if (!path.starts_with('/')) path = std::string(cwd) + (cwd.ends_with('/') ? "" : "/") + path;
  return path;
}

std::unique_ptr<Connection> Connect(std::string_view program, std::string_view server_flag,
                                    std::string_view socket_flag) {
  auto endpoint = ResolveEndpointFromEnv(server_flag, socket_flag);
  if (!endpoint) {
    PrintError(program, endpoint.error().ToString());
    return nullptr;
  }
  if (!endpoint->tls_ca.empty()) {
    // Read here, so that a CA that cannot be read is an error (empty roots would make gRPC trust
    // the system's CAs instead).
    auto ca = ReadFileBounded(endpoint->tls_ca, 1 << 20);
    if (!ca || ca->empty()) {
      PrintError(program, "tls_ca: " + (ca ? endpoint->tls_ca + ": empty" : ca.error().ToString()));
      return nullptr;
    }
    endpoint->tls_ca_pem = std::move(*ca);
  }
  return std::make_unique<Connection>(*endpoint, ResolveDeadline(std::getenv("PHALANX_TIMEOUT")));
}

std::chrono::seconds ResolveDeadline(const char* env) {
  if (env == nullptr) return kDefaultDeadline;
  auto n = ParseCount(env, 1, 3600);
  return n ? std::chrono::seconds(*n) : kDefaultDeadline;
}

struct CredentialState {
  std::string munge_socket;
  std::mutex mu;
  std::string error;  // the last credential that could not be made, and why
};

namespace {

// Puts a MUNGE credential bound to the call (its method and request) in the metadata.
class MungeInterceptor final : public grpc::experimental::Interceptor {
 public:
  MungeInterceptor(grpc::experimental::ClientRpcInfo* info, std::shared_ptr<CredentialState> state)
      : info_(info), state_(std::move(state)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    using grpc::experimental::InterceptionHookPoints;
    if (m->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      // Unary and server-streaming calls send the request in the same batch, not yet serialized.
      const void* message =
          m->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE) ? m->GetSendMessage() : nullptr;
      if (message == nullptr) {
        std::lock_guard lock(state_->mu);
        state_->error = "no request to bind a MUNGE credential to";
      } else {
        // The stubs of phalanx.v1 send generated messages.
        const auto& request = *static_cast<const google::protobuf::MessageLite*>(message);
        auto cred = auth::MungeEncode(state_->munge_socket, auth::CallPayload(info_->method(), request));
        if (cred) {
          m->GetSendInitialMetadata()->emplace(auth::kMungeMetadata, *cred);
        } else {
          std::lock_guard lock(state_->mu);
          state_->error = cred.error().message;
        }
      }
    }
    m->Proceed();
  }

 private:
  grpc::experimental::ClientRpcInfo* const info_;
  const std::shared_ptr<CredentialState> state_;
};

class MungeInterceptorFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit MungeInterceptorFactory(std::shared_ptr<CredentialState> state) : state_(std::move(state)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo* info) override {
    return new MungeInterceptor(info, state_);
  }

 private:
  const std::shared_ptr<CredentialState> state_;
};

std::shared_ptr<grpc::Channel> TcpChannel(const std::string& address,
                                          const std::shared_ptr<grpc::ChannelCredentials>& creds,
                                          const std::shared_ptr<CredentialState>& state) {
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<MungeInterceptorFactory>(state));
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, creds, grpc::ChannelArguments(),
                                                                 std::move(interceptors));
}

// Whether a connection to the channel's address comes up before `deadline`: false as soon as an
// attempt fails (connection refused, no route), without waiting for gRPC's reconnect backoff.
bool Answers(grpc::Channel& channel, std::chrono::system_clock::time_point deadline) {
  grpc_connectivity_state state = channel.GetState(true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) return false;
    if (!channel.WaitForStateChange(state, deadline)) return false;
    state = channel.GetState(true);
  }
  return true;
}

// A standby phalanxd (docs/deployment.md, "High availability") answers every call with
// UNAVAILABLE "standby: ...". gRPC's health check, which carries no Phalanx data and needs no
// MUNGE credential, tells it from the leader: the leader's health service answers it, a
// standby refuses it like any call. `*why`: the standby's text.
bool IsStandby(const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& creds,
               std::chrono::system_clock::time_point deadline, std::string* why) {
  auto channel = grpc::CreateChannel(address, creds);
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline);
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1), response;  // an empty HealthCheckRequest: any service
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status st) { done.set_value(std::move(st)); });
  const grpc::Status st = done.get_future().get();
  if (st.error_code() != grpc::StatusCode::UNAVAILABLE || !st.error_message().starts_with("standby")) return false;
  *why = st.error_message();
  return true;
}

}  // namespace

Connection::Connection(std::string socket_path, std::chrono::seconds deadline)
    : target_("unix:" + std::move(socket_path)), deadline_(deadline) {
  channel_ = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
  jobs_ = v1::Jobs::NewStub(channel_);
  cluster_ = v1::Cluster::NewStub(channel_);
}

Connection::Connection(const Endpoint& endpoint, std::chrono::seconds deadline) : deadline_(deadline) {
  if (endpoint.servers.empty()) {
    target_ = "unix:" + endpoint.socket_path;
    channel_ = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
  } else {
    tcp_ = true;
    credentials_ = std::make_shared<CredentialState>();
    credentials_->munge_socket = endpoint.munge_socket;
    std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
    if (!endpoint.tls_ca_pem.empty()) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = endpoint.tls_ca_pem;
      creds = grpc::SslCredentials(ssl);
    }
    const auto probe = std::min<std::chrono::seconds>(deadline_, std::chrono::seconds(5));
    for (size_t i = 0; i < endpoint.servers.size(); ++i) {
      target_ = endpoint.servers[i];
      channel_ = TcpChannel(target_, creds, credentials_);
      if (endpoint.servers.size() == 1) break;
      const auto until = std::chrono::system_clock::now() + probe;
      std::string standby;
      if (Answers(*channel_, until) && !IsStandby(target_, creds, until, &standby)) break;
      if (i + 1 < endpoint.servers.size())
        tried_ += (tried_.empty() ? "" : ", ") + target_ + (standby.empty() ? "" : " (" + standby + ")");
    }
  }
  jobs_ = v1::Jobs::NewStub(channel_);
  cluster_ = v1::Cluster::NewStub(channel_);
}

void Connection::Prepare(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() + deadline_);
}

std::string Connection::Describe(const grpc::Status& status) const {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE: {
      // gRPC says "failed to connect to all addresses; last error: UNKNOWN: unix:/x.sock: No such
      // file or directory": keep what it says after the target, when it names it.
      std::string why = status.error_message();
      if (const size_t at = why.rfind(target_ + ": "); at != std::string::npos) why.erase(0, at + target_.size() + 2);
      if (why.empty()) why = "unavailable";
      if (tcp_)
        return "cannot reach phalanxd at " + target_ + (tried_.empty() ? "" : " (nor at " + tried_ + ")") + ": " + why +
               " (--server, $PHALANX_SERVER or /etc/phalanx/phalanx.conf choose the daemon)";
      return "cannot reach phalanxd at " + target_ + ": " + why +
             " (is phalanxd running? --socket or $PHALANX_SOCKET choose the socket)";
    }
    case grpc::StatusCode::UNAUTHENTICATED:
      if (credentials_) {
        std::lock_guard lock(credentials_->mu);
        if (!credentials_->error.empty())
          return "cannot get a MUNGE credential to reach phalanxd at " + target_ + ": " + credentials_->error;
      }
      return status.error_message().empty() ? std::string(CodeWords(status.error_code())) : status.error_message();
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "phalanxd at " + target_ + " did not answer within " + std::to_string(deadline_.count()) +
             " s ($PHALANX_TIMEOUT sets the limit)";
    default:
      return status.error_message().empty() ? std::string(CodeWords(status.error_code())) : status.error_message();
  }
}

std::string Connection::DescribeJob(uint64_t job_id, const grpc::Status& status) const {
  std::string message = Describe(status);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return message;  // about the daemon, not the job
  }
  const std::string prefix = "job " + std::to_string(job_id);
  if (message.starts_with(prefix + ": ")) {
    message.erase(0, prefix.size() + 2);
  } else if (message.starts_with(prefix + " ")) {
    message.erase(0, prefix.size() + 1);
  }
  return prefix + ": " + message;
}

std::string_view CodeWords(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "ok";
    case grpc::StatusCode::CANCELLED: return "cancelled";
    case grpc::StatusCode::INVALID_ARGUMENT: return "invalid argument";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "deadline exceeded";
    case grpc::StatusCode::NOT_FOUND: return "not found";
    case grpc::StatusCode::ALREADY_EXISTS: return "already exists";
    case grpc::StatusCode::PERMISSION_DENIED: return "permission denied";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "resource exhausted";
    case grpc::StatusCode::FAILED_PRECONDITION: return "failed precondition";
    case grpc::StatusCode::ABORTED: return "aborted";
    case grpc::StatusCode::OUT_OF_RANGE: return "out of range";
    case grpc::StatusCode::UNIMPLEMENTED: return "not implemented by this phalanxd";
    case grpc::StatusCode::INTERNAL: return "internal error";
    case grpc::StatusCode::UNAVAILABLE: return "unavailable";
    case grpc::StatusCode::DATA_LOSS: return "data loss";
    case grpc::StatusCode::UNAUTHENTICATED: return "unauthenticated";
    default: return "unknown error";
  }
}

std::string_view CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  return out;
}

std::string CurrentUser() {
  const uid_t uid = getuid();
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{};
  passwd* result = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr) return pw.pw_name;
  return std::to_string(uid);
}

bool UserExists(const std::string& name) {
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(size > 0 ? static_cast<size_t>(size) : 16384);
  passwd pw{};
  passwd* result = nullptr;
  return getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr;
}

std::string CurrentDir() {
  std::vector<char> buf(4096);
  if (getcwd(buf.data(), buf.size()) == nullptr) return "/";
  return buf.data();
}

void PrintError(std::string_view program, std::string_view message_text) {
  const std::string message = Printable(message_text);  // the daemon's text may quote a user's value
  std::fprintf(stderr, "%.*s: %.*s\n", static_cast<int>(program.size()), program.data(),
               static_cast<int>(message.size()), message.data());
}

std::expected<ParsedOptions, int> ParseCommand(std::string_view program, std::span<const std::string> args,
                                               std::span<const OptionSpec> specs, std::string_view usage,
                                               std::string_view more_help) {
  auto o = ParseOptions(args, specs, Positionals::kInterleaved);
  if (!o) {
    PrintError(program, o.error().ToString());
    return std::unexpected(kExitUsage);
  }
  if (o->Has("help")) {
    // fwrite's buffer must not be null even for zero bytes (an empty string_view's data() may be).
    const auto put = [](std::string_view text) {
      if (!text.empty()) std::fwrite(text.data(), 1, text.size(), stdout);
    };
    put(usage);
    std::fputs(OptionsHelp(specs).c_str(), stdout);
    put(more_help);
    return std::unexpected(kExitOk);
  }
  return std::move(*o);
}

}  // namespace phalanx::cli
