// Replies: how the Controller answers a call that may wait for a commit. A failure is either a
// core Error, whose code says which kind it is (NOT_FOUND, PERMISSION_DENIED, ... as the core or
// the Controller's own checks chose), or "phalanxd is not serving" (it is stopping, or its store
// failed), which clients see as UNAVAILABLE. The services turn both into gRPC statuses in one
// place (rpc_util.h's ToGrpcStatus).
// Thread-safety: plain values.
#pragma once

#include <expected>
#include <functional>
#include <string>
#include <utility>

#include "core/common/result.h"

namespace phalanx::service {

struct CallError {
  // Implicit, so that a core Status or Result converts (PHX_RETURN_IF_ERROR works too).
  CallError(Error e) : error(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  // phalanxd is not serving: `message` says why ("phalanxd is shutting down", ...).
  static CallError Unavailable(std::string message) {
    CallError e(Error{"", std::move(message), ErrorCode::kInternal});
    e.unavailable = true;
    return e;
  }

  Error error;
  bool unavailable = false;  // when set, `error.code` means nothing
};

template <typename T>
using CallResult = std::expected<T, CallError>;
using CallStatus = CallResult<void>;

// The callback a Controller call answers through, exactly once, on the io thread.
template <typename T>
using Reply = std::function<void(CallResult<T>)>;

}  // namespace phalanx::service
