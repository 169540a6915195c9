// CallAuthenticator: the identity of users calling over TCP (the `users_tcp:` listener,
// docs/daemon.md "Users over TCP"). A gRPC server interceptor reads each call's MUNGE credential
// (metadata `x-phalanx-munge`, proto/call_auth.h) and its request, decodes the credential through
// munged and checks that its payload names this method and this request; the verdict (a uid and
// gid as SO_PEERCRED gives them on the Unix socket, or the refusal) is kept for the call until
// it ends, and Identity::User takes it from there, so every permission rule applies unchanged.
//
// Refused, each UNAUTHENTICATED: no credential, more than one, a forged one (another MUNGE key,
// damaged), an expired or rewound one, a replayed one (munged decoded it before), one made for
// another call. munged not answering is UNAVAILABLE. Each refusal is logged with the peer's
// address through a RateLimitedLog (a few records per 10 s per address and reason, then counted).
//
// The interceptor runs for the methods of phalanx.v1.Jobs and phalanx.v1.Cluster only (their
// requests are protobuf messages); gRPC's own services on the port (health, reflection) carry no
// Phalanx data and are not authenticated.
// Thread-safety: safe from any thread (gRPC's threads).
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "service/unix_listener.h"
#include "util/rate_limited_log.h"
#include "util/thread_annotations.h"

namespace google::protobuf {
class MessageLite;
}

namespace phalanx::service {

class CallAuthenticator {
 public:
  struct Verdict {
    grpc::Status status;  // OK: `cred` is the caller
    PeerCred cred;
  };

  // `munge_socket`: munged's socket; empty: libmunge's default (/run/munge/munge.socket.2).
  explicit CallAuthenticator(std::string munge_socket) : socket_(std::move(munge_socket)) {}

  // One factory for ServerBuilder::experimental().SetInterceptorCreators.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeFactory();

  // The verdict of the call `ctx` belongs to; UNAUTHENTICATED when none was recorded.
  Verdict Of(const grpc::ServerContextBase& ctx) const PHALANX_EXCLUDES(mu_);

  // Decodes and checks one call's credential (`credential` null: none was sent; `request`
  // null: no request message). Logs a refusal. Public for the interceptor.
  Verdict Verify(const std::string& peer, std::string_view method, const std::string* credential, int credentials,
                 const google::protobuf::MessageLite* request);

  // Encodes and decodes a credential through munged: OK, or why TCP users will be refused.
  grpc::Status SelfCheck() const;

  uint64_t refused() const { return refused_; }
  uint64_t accepted() const { return accepted_; }

  // Used by the interceptor: a generation number per call, so that a call ending late never
  // erases the verdict of a newer call whose context got the same address.
  uint64_t NextGeneration() { return ++generation_; }
  void Record(const grpc::ServerContextBase* ctx, uint64_t generation, Verdict verdict) PHALANX_EXCLUDES(mu_);
  void Forget(const grpc::ServerContextBase* ctx, uint64_t generation) PHALANX_EXCLUDES(mu_);

 private:
  struct Entry {
    uint64_t generation = 0;
    Verdict verdict;
  };
  Verdict Refuse(const std::string& peer, std::string_view reason, grpc::Status status);

  const std::string socket_;
  RateLimitedLog log_;
  std::atomic<uint64_t> generation_{0}, refused_{0}, accepted_{0};
  mutable Mutex mu_;
  std::unordered_map<const grpc::ServerContextBase*, Entry> verdicts_ PHALANX_GUARDED_BY(mu_);
};

}  // namespace phalanx::service
