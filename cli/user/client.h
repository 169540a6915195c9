// phalanx_client: what every user command shares: where phalanxd listens (server_config.h: the
// local socket or a TCP address list), a channel with a
// deadline per call, gRPC status -> one readable line, JSON output (hand-written strings are
// quoted with util/json.h's JsonQuote), the caller's user name, and the exit codes.
//
// Exit codes of gsub, gq, gcancel and ginfo: 0 success; 1 the daemon refused or could not be
// reached (the message is the gRPC status message); 2 a usage error (a bad option or value, a bad
// script), found before any call.
// Thread-safety: Connection is as thread-safe as the gRPC stubs it holds (calls may run
// concurrently); the free functions are pure except CurrentUser (reads the passwd database).
#pragma once

#include <chrono>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "options.h"
#include "phalanx/v1/phalanx.grpc.pb.h"
#include "server_config.h"

namespace phalanx::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitServer = 1;
inline constexpr int kExitUsage = 2;

inline constexpr std::string_view kDefaultSocket = "/run/phalanx/phalanxd.sock";
inline constexpr std::chrono::seconds kDefaultDeadline{30};

// The socket path: `flag` (--socket) if not empty, else `env` ($PHALANX_SOCKET) if set and not
// empty, else kDefaultSocket. A relative path is made absolute against `cwd`.
std::string ResolveSocket(std::string_view flag, const char* env, std::string_view cwd);

// The per-call deadline: $PHALANX_TIMEOUT (whole seconds, 1..3600) if `env` is valid, else
// kDefaultDeadline.
std::chrono::seconds ResolveDeadline(const char* env);

// What the channel's MUNGE interceptor saw last (over TCP): why it could not make a credential.
struct CredentialState;

// A channel to phalanxd at "unix:" + socket path, or over TCP (the Endpoint's servers) with a
// MUNGE credential on every call (proto/call_auth.h) and TLS when the Endpoint carries a CA
// (tls_ca_pem, read by Connect()). With one address or the socket, creating a Connection does
// no I/O; gRPC connects on the first call, which fails fast (UNAVAILABLE) when nothing listens.
// With several addresses, it tries each in order (connecting, up to 5 s each, less when one
// refuses at once) and keeps the first that answers (the last tried when none does, so that
// the call's error names it).
class Connection {
 public:
  Connection(std::string socket_path, std::chrono::seconds deadline);
  Connection(const Endpoint& endpoint, std::chrono::seconds deadline);

  v1::Jobs::Stub& jobs() { return *jobs_; }
  v1::Cluster::Stub& cluster() { return *cluster_; }
  const std::string& target() const { return target_; }

  // Prepares a ClientContext for one call: the deadline.
  void Prepare(grpc::ClientContext& context) const;

  // One line for a failed call: "cannot reach phalanxd at unix:/run/... (...)" for UNAVAILABLE,
  // "phalanxd at unix:/... did not answer within 30 s" for DEADLINE_EXCEEDED, otherwise the
  // status message (or the code's name when the message is empty).
  std::string Describe(const grpc::Status& status) const;

  // "job 42: not found": Describe() prefixed by the job, without repeating "job 42" when the
  // daemon's message already starts with it. Errors about the daemon itself (UNAVAILABLE,
  // DEADLINE_EXCEEDED) are not prefixed.
  std::string DescribeJob(uint64_t job_id, const grpc::Status& status) const;

 private:
  std::string target_;
  std::chrono::seconds deadline_;
  bool tcp_ = false;
  std::string tried_;  // the addresses tried before target_ (several servers), for messages
  std::shared_ptr<CredentialState> credentials_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Jobs::Stub> jobs_;
  std::unique_ptr<v1::Cluster::Stub> cluster_;
};

// The Connection that --server / --socket, the environment and the client configuration file
// choose (server_config.h); null after printing "<program>: <error>" (exit with kExitUsage).
std::unique_ptr<Connection> Connect(std::string_view program, std::string_view server_flag,
                                    std::string_view socket_flag);

// "not found", "permission denied", ... for a status code.
std::string_view CodeWords(grpc::StatusCode code);
// "NOT_FOUND", ... (for JSON output).
std::string_view CodeName(grpc::StatusCode code);

// Protobuf JSON of a message on one line: proto field names (job_id), enums by name, fields
// with default values included; 64-bit integers are strings, as protobuf JSON writes them.
std::string ToJson(const google::protobuf::Message& message);

// The caller's user name (the passwd entry of getuid()), or the uid as text.
std::string CurrentUser();

// Whether `name` is a user of this machine (a passwd entry), as squeue and scancel check -u.
bool UserExists(const std::string& name);

// The current directory, or "/" when it cannot be read.
std::string CurrentDir();

// Writes "<program>: <message>\n" to stderr, the message Printable (util/printable.h).
void PrintError(std::string_view program, std::string_view message);

// A user command's start: `args` read against `specs` (options and positionals interleaved). A bad
// option prints "<program>: <error>" and gives kExitUsage; --help prints `usage`, the options and
// `more_help`, and gives kExitOk. The caller returns that code as it is.
std::expected<ParsedOptions, int> ParseCommand(std::string_view program, std::span<const std::string> args,
                                               std::span<const OptionSpec> specs, std::string_view usage,
                                               std::string_view more_help = {});

}  // namespace phalanx::cli
