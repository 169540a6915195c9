// StandbyGate: what a standby phalanxd serves while another phalanxd leads the store
// (docs/deployment.md, "High availability"). It listens where the leader-to-be will -- the
// users' Unix socket, users_tcp and agents.listen -- and ends every call at once with
// UNAVAILABLE "standby: the leader is HOLDER (epoch N); try the next address", so that user
// commands (their `server =` list) and agents (their --daemon list) move on to the leader.
// Nothing is read or written for a caller: a standby has no core and serves no job data.
// Stop() closes every listener (the daemon then binds the same addresses as the leader).
// Thread-safety: SetLeader from any thread; Start/Stop from one thread.
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "core/common/result.h"
#include "service/unix_listener.h"
#include "util/thread_annotations.h"

namespace phalanx::service {

class StandbyGate {
 public:
  struct Listen {
    std::string socket_path;  // "" : none
    std::string users_tcp;    // "host:port" or ""
    std::shared_ptr<grpc::ServerCredentials> users_tcp_creds;
    std::string agents;  // "host:port" or ""
    std::shared_ptr<grpc::ServerCredentials> agents_creds;
  };

  // Binds every address given; fails naming the one that cannot be bound.
  static Result<std::unique_ptr<StandbyGate>> Start(const Listen& listen);
  ~StandbyGate();  // Stop()

  // The text after "standby: " in every refusal.
  void SetLeader(const std::string& text) PHALANX_EXCLUDES(mu_);
  std::string refusal() const PHALANX_EXCLUDES(mu_);
  uint64_t refused() const;  // calls refused so far
  void Stop();

 private:
  class Refuser;
  StandbyGate();

  mutable Mutex mu_;
  std::string leader_ PHALANX_GUARDED_BY(mu_) = "the leader is not known yet";
  std::unique_ptr<Refuser> refuser_;
  PeerRegistry peers_;
  std::unique_ptr<grpc::Server> local_, users_tcp_, agents_;
  std::unique_ptr<UnixListener> listener_;
  bool stopped_ = false;
};

}  // namespace phalanx::service
