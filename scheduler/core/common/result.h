// Errors as values for the whole code base.
//
// An Error names *where* (a file:line, a field, a request), *what*, and which kind of failure it
// is (ErrorCode), so callers branch on the code, never on the message. Core and adapters return
// Result<T> = std::expected<T, Error>; nothing throws across module boundaries.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace phalanx {

// The kinds of failure, named as gRPC's status codes (the daemon maps them one to one).
enum class ErrorCode : uint8_t {
  kInvalidArgument,     // malformed input: a file, a field, a value (the default)
  kNotFound,            // an unknown job, node, class, account, file
  kFailedPrecondition,  // a valid request the current state forbids (e.g. cancel a finished job)
  kAlreadyExists,       // a duplicate id or name
  kResourceExhausted,   // a limit reached (pending jobs per user, file or topology size)
  kPermissionDenied,    // the caller may not do this
  kInternal,            // an I/O, store or invariant failure that is not the caller's doing
};

// "INVALID_ARGUMENT", "NOT_FOUND", ... (gRPC's spelling).
constexpr std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound: return "NOT_FOUND";
    case ErrorCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case ErrorCode::kAlreadyExists: return "ALREADY_EXISTS";
    case ErrorCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case ErrorCode::kPermissionDenied: return "PERMISSION_DENIED";
    case ErrorCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

struct Error {
  std::string where;    // "topology.conf:12", "request.gpus", ... (may be empty)
  std::string message;  // what is wrong, with the offending value
  ErrorCode code = ErrorCode::kInvalidArgument;

  std::string ToString() const { return where.empty() ? message : where + ": " + message; }
};

template <typename T>
using Result = std::expected<T, Error>;

// Shorthand for `return Fail("file:3", "unknown switch 'x'");` in functions returning Result<T>:
// an invalid argument. The overload with a code names another kind of failure.
inline std::unexpected<Error> Fail(std::string where, std::string message) {
  return std::unexpected<Error>(Error{std::move(where), std::move(message)});
}
inline std::unexpected<Error> Fail(ErrorCode code, std::string where, std::string message) {
  return std::unexpected<Error>(Error{std::move(where), std::move(message), code});
}

// Result<void> reads better as Status.
using Status = Result<void>;

}  // namespace phalanx

// PHX_RETURN_IF_ERROR(expr): evaluates `expr` (a Result<T> or Status, or a variable holding
// one) once; when it holds an Error, returns that Error (code, where and message unchanged) from
// the enclosing function, which returns a Result<U> or Status.
//   PHX_RETURN_IF_ERROR(store.Apply(batch));
//   auto spec = ReadSpec(text);
//   PHX_RETURN_IF_ERROR(spec);
#define PHX_RETURN_IF_ERROR(expr)                                               \
  do {                                                                          \
    if (auto&& phx_result_ = (expr); !phx_result_) {                            \
      return std::unexpected<::phalanx::Error>(std::move(phx_result_).error()); \
    }                                                                           \
  } while (false)
