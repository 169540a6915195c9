// Small helpers shared by the gRPC service classes: run a unary call's work on the io thread
// (where the Controller lives) and finish its reactor from there.
// Thread-safety: OnIo is safe from any thread; `work` runs on the io thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <grpcpp/support/server_callback.h>
#include <grpcpp/server_context.h>

#include <utility>

namespace phalanx::service {

// Posts `work(reactor)` to the io thread; `work` must call reactor->Finish exactly once.
template <typename Work>
grpc::ServerUnaryReactor* OnIo(grpc::CallbackServerContext* ctx, boost::asio::io_context& io, Work work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  boost::asio::post(io, [reactor, work = std::move(work)]() mutable { work(reactor); });
  return reactor;
}

// Finishes at once (e.g. an authentication failure).
inline grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* ctx, grpc::Status status) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

}  // namespace phalanx::service
