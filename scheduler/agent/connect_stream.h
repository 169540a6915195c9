// ConnectStream: one Agents.Connect call, as a gRPC callback-API reactor
// (grpc::ClientBidiReactor). Reports queue up and are written one at a time; commands are
// handed to `on_command` as they arrive; `on_delivered(token)` says a report was written to
// the transport (token 0: nobody asked).
//
// Lifetime: the owner must Wait() (after Cancel() to hurry it) before dropping the stream, and
// drop it on its own thread. (The stream deliberately does not keep itself alive until OnDone:
// its ClientContext may hold the last reference to the channel, and gRPC 1.51 crashes when a
// channel dies on one of its own callback threads, grpc/grpc#32584.) A hold keeps the call
// open for Send from other threads until the stream closes (the read fails, a write fails, or
// Cancel); after that Send returns false.
// Thread-safety: Send, Cancel, Wait are thread-safe. Callbacks run on gRPC threads, possibly
// inline in Send; they must not block on this stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>

#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::agent {

class ConnectStream final : public grpc::ClientBidiReactor<v1::AgentReport, v1::DaemonCommand> {
 public:
  using OnCommand = std::function<void(v1::DaemonCommand)>;
  using OnDelivered = std::function<void(uint64_t token)>;

  ~ConnectStream() override;  // requires Wait() to have returned

  // Starts the call with `first` (the hello) as the first message. `token` is the agent's
  // bearer token ("" sends none).
  static std::shared_ptr<ConnectStream> Open(v1::Agents::Stub* stub, const std::string& token, v1::AgentReport first,
                                             OnCommand on_command, OnDelivered on_delivered);

  // Queues a report; false once the stream is closed.
  bool Send(v1::AgentReport report, uint64_t token);
  void Cancel();
  // Blocks until the call is over; returns its status.
  grpc::Status Wait();
  // True once a command arrived (the daemon accepted us).
  bool received_any() const;

 private:
  ConnectStream(OnCommand on_command, OnDelivered on_delivered);
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;
  void Close();

  grpc::ClientContext ctx_;
  OnCommand on_command_;
  OnDelivered on_delivered_;
  v1::DaemonCommand in_;  // the outstanding read

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<v1::AgentReport, uint64_t>> out_;  // guarded by mu_; front is being written
  bool writing_ = false;        // guarded by mu_: a StartWrite is outstanding (or about to be)
  bool closed_ = false;         // guarded by mu_
  bool hold_released_ = false;  // guarded by mu_
  bool done_ = false;           // guarded by mu_
  bool received_ = false;       // guarded by mu_
  grpc::Status status_;         // guarded by mu_
};

}  // namespace phalanx::agent
