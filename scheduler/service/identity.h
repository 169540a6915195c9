// Identity: who is calling, for each gRPC call.
//  - Users (Jobs, Cluster): the Unix socket peer's credentials (SO_PEERCRED, recorded by
//    UnixListener under "fd:N"), the user name from the password database and the group
//    names (getgrouplist), admin when uid 0, listed in `admins` or a member of one of
//    `admin_groups`. Names and groups are cached per (uid, gid) for a minute. Calls that did
//    not come through the Unix socket are refused (UNAUTHENTICATED), unless they came over
//    TCP with a MUNGE credential the CallAuthenticator accepted (users_tcp, its uid and gid
//    then stand for SO_PEERCRED's; pid 0). Each uid's calls, on either path, go
//    through its token bucket (UidRateLimiter, user_limits.requests_per_second /
//    request_burst): a call without a token is answered RESOURCE_EXHAUSTED naming the limit,
//    and logged a few times per 10 s per uid.
//  - Agents: over TCP, the shared token ("authorization: Bearer <token>", compared in
//    constant time) and/or TLS client certificates (checked by gRPC); over the Unix socket,
//    only root (a local agent). A refused agent call is logged with the peer's address (a few
//    times per 10 s per address and reason, then counted).
// Thread-safety: safe from any thread (gRPC handler threads).
#pragma once

#include <grpcpp/server_context.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "service/call_authenticator.h"
#include "service/caller.h"
#include "service/unix_listener.h"
#include "service/user_limits.h"
#include "util/rate_limited_log.h"
#include "util/thread_annotations.h"

namespace phalanx::service {

// Equal strings, in time independent of where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// "ipv4:10.0.0.5:41234" -> "10.0.0.5", "ipv6:[fe80::1]:5" -> "fe80::1"; "" for other peers.
std::string PeerHost(const std::string& peer);

class Identity {
 public:
  // `rate`: per-uid request limits; null: none.
  Identity(const PeerRegistry* peers, std::set<std::string> admins, std::set<std::string> admin_groups = {},
           UidRateLimiter* rate = nullptr)
      : peers_(peers), admins_(std::move(admins)), admin_groups_(std::move(admin_groups)), rate_(rate) {}

  // Users over TCP (users_tcp): calls that did not come through the Unix socket take their
  // uid and gid from `auth`'s verdict. Set before serving.
  void set_user_auth(const CallAuthenticator* auth) { user_auth_ = auth; }

  // The user behind a call on the Unix socket (or over TCP with an accepted MUNGE credential);
  // UNAUTHENTICATED otherwise, RESOURCE_EXHAUSTED
  // when the uid is over its request rate.
  grpc::Status User(const grpc::CallbackServerContext& ctx, Caller* out) const PHALANX_EXCLUDES(mu_);

  // An agent's call: OK when it came through the Unix socket as root, or over TCP with the
  // token (when one is configured) on a connection gRPC authenticated (TLS, when configured).
  void set_agent_token(std::string token) { token_ = std::move(token); }
  grpc::Status Agent(const grpc::CallbackServerContext& ctx) const;

 private:
  grpc::Status AgentCheck(const grpc::CallbackServerContext& ctx) const;

  struct Names {
    std::string user;
    std::vector<std::string> groups;
    std::chrono::steady_clock::time_point at;
  };
  // The user's and groups' names of (uid, gid), from the cache when fresh.
  Names Resolve(uint32_t uid, uint32_t gid) const PHALANX_EXCLUDES(mu_);

  const PeerRegistry* const peers_;
  const std::set<std::string> admins_;
  const std::set<std::string> admin_groups_;
  UidRateLimiter* const rate_;
  std::string token_;                             // set before serving
  const CallAuthenticator* user_auth_ = nullptr;  // set before serving
  mutable RateLimitedLog log_;
  mutable Mutex mu_;
  mutable std::map<std::pair<uint32_t, uint32_t>, Names> names_ PHALANX_GUARDED_BY(mu_);
};

}  // namespace phalanx::service
