// Small helpers shared by the gRPC service classes: the one mapping from the code base's errors
// to gRPC statuses, running a unary call's work on the io thread (where the Controller lives)
// and finishing its reactor from there.
// Thread-safety: ToGrpcStatus is pure; OnIo is safe from any thread, `work` runs on the io thread.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>
#include <grpcpp/support/status.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <utility>

#include "core/common/result.h"
#include "service/reply.h"

namespace phalanx::service {

// ErrorCode -> gRPC status code, one to one (result.h names the codes after gRPC's).
constexpr grpc::StatusCode ToGrpcCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kFailedPrecondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case ErrorCode::kResourceExhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorCode::kPermissionDenied: return grpc::StatusCode::PERMISSION_DENIED;
    case ErrorCode::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

// The status clients see for an Error: its code, and "where: message" (Error::ToString).
inline grpc::Status ToGrpcStatus(const Error& e) { return grpc::Status(ToGrpcCode(e.code), e.ToString()); }
// ... and for a Controller reply's failure: UNAVAILABLE when phalanxd is not serving.
inline grpc::Status ToGrpcStatus(const CallError& e) {
  if (e.unavailable) return grpc::Status(grpc::StatusCode::UNAVAILABLE, e.error.message);
  return ToGrpcStatus(e.error);
}
inline grpc::Status ToGrpcStatus(const CallStatus& s) { return s ? grpc::Status::OK : ToGrpcStatus(s.error()); }

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
