#include "client.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "options.h"
#include "util/printable.h"

namespace phalanx::cli {

std::string ResolveSocket(std::string_view flag, const char* env, std::string_view cwd) {
  std::string path(flag);
  if (path.empty() && env != nullptr) path = env;
  if (path.empty()) path = kDefaultSocket;
  if (!path.starts_with('/')) path = std::string(cwd) + (cwd.ends_with('/') ? "" : "/") + path;
  return path;
}

std::chrono::seconds ResolveDeadline(const char* env) {
  if (env == nullptr) return kDefaultDeadline;
  auto n = ParseCount(env, 1, 3600);
  return n ? std::chrono::seconds(*n) : kDefaultDeadline;
}

Connection::Connection(std::string socket_path, std::chrono::seconds deadline)
    : target_("unix:" + std::move(socket_path)), deadline_(deadline) {
  channel_ = grpc::CreateChannel(target_, grpc::InsecureChannelCredentials());
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
      return "cannot reach phalanxd at " + target_ + ": " + why +
             " (is phalanxd running? --socket or $PHALANX_SOCKET choose the socket)";
    }
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

}  // namespace phalanx::cli
