// DaemonLink: the agent's connection to phalanxd (Agents service), kept up by one thread:
//
//   loop: read the token file -> Register(hello) -> Connect stream (hello first) -> wait until
//         the stream ends -> the next address of the list -> back off once every address was
//         tried (initial, doubling to max, +-20% jitter; reset once the daemon sent anything;
//         not doubled while a standby phalanxd answered, since a takeover is near; never above
//         the retry cap, see SetRetryCap) -> again
//
// Several phalanxd (a leader and standbys, docs/deployment.md "High availability"): `target` is
// an address list "host:port,host:port"; a standby refuses Register with UNAVAILABLE "standby:
// ...", so the link moves on to the next address until it finds the leader. DropStream() ends
// the current stream (the agent calls it when the daemon stops answering heartbeats: a
// SIGSTOP'd or partitioned leader keeps its TCP connections open).
//
// Auth: every call carries "authorization: Bearer <token>" when a token file is set (re-read on
// each attempt, so a rotated token is picked up); TLS (grpc::SslCredentials with the CA, and
// the client cert/key for mutual TLS) when tls_ca is set, else plaintext TCP. gRPC keepalive
// pings detect a vanished daemon host.
//
// The stream's first message is AgentReport{hello}; every report carries the session from
// RegisterResponse. Send() hands a report to the current stream and returns its generation
// (1, 2, ... one per stream; 0 when there is none); callbacks.connected(generation) says a new
// stream is up, so the owner can resend what earlier streams may have lost.
// Thread-safety: Send/Start/Stop are thread-safe. Callbacks run on the link thread (hello,
// registered, connected) or gRPC threads (command, delivered) and must not block on the link.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "agent/connect_stream.h"
#include "core/common/result.h"
#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::agent {

struct LinkOptions {
  std::string target;      // "host:port[,host:port...]": tried in order, from the last that answered
  std::string token_file;  // "" : no token
  std::string tls_ca, tls_cert, tls_key;
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30'000};
  std::chrono::milliseconds register_timeout{10'000};
  // gRPC keepalive pings (0: none). phalanxd's gRPC server, by default, accepts a ping every
  // 5 minutes while it sends nothing; faster pings need its permission (docs/agent.md).
  std::chrono::milliseconds keepalive{300'000};
};

// The wait before the next round of attempts, before jitter: the grown `backoff`, at most `cap`
// (0: no cap) but never below `initial`.
std::chrono::milliseconds CappedBackoff(std::chrono::milliseconds backoff, std::chrono::milliseconds cap,
                                        std::chrono::milliseconds initial);

class DaemonLink {
 public:
  struct Callbacks {
    std::function<v1::RegisterRequest()> hello;
    std::function<void(const v1::RegisterResponse&)> registered;
    std::function<void(uint64_t generation)> connected;
    std::function<void(v1::DaemonCommand)> command;
    std::function<void(uint64_t token)> delivered;
  };

  // Reads the TLS files (fails naming an unreadable one); starts nothing.
  static Result<std::unique_ptr<DaemonLink>> Create(LinkOptions options, Callbacks callbacks);
  ~DaemonLink();  // Stop()

  void Start();
  void Stop();  // cancels the call in flight and joins the thread
  uint64_t Send(v1::AgentReport report, uint64_t token);
  // Ends the current stream (the link then tries the next address); `why` is logged.
  void DropStream(const std::string& why);
  // The address of the current (or last) attempt.
  std::string current_target();
  // The longest wait between two rounds of attempts, whatever the backoff has grown to (0: none).
  // The agent sets a quarter of its fence limit, so that a daemon back well before the fence is
  // reached before the fence stops the node's parts.
  void SetRetryCap(std::chrono::milliseconds cap);

 private:
  DaemonLink(LinkOptions options, Callbacks callbacks, std::shared_ptr<grpc::ChannelCredentials> creds);
  void Run();
  // One Register + Connect; returns how it ended. `*welcomed`: the daemon sent something.
  std::string Session(bool* welcomed);

  LinkOptions options_;
  Callbacks callbacks_;
  std::vector<std::string> targets_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::Agents::Stub>> stubs_;
  size_t current_ = 0;  // guarded by mu_ (written by the link thread only)
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                        // guarded by mu_
  grpc::ClientContext* register_ctx_ = nullptr;  // guarded by mu_: the Register in flight
  std::shared_ptr<ConnectStream> stream_;        // guarded by mu_
  std::string session_;                          // guarded by mu_
  uint64_t generation_ = 0;                      // guarded by mu_
  std::chrono::milliseconds retry_cap_{0};       // guarded by mu_
};

}  // namespace phalanx::agent
