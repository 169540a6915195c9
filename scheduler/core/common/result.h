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

// The two propagation macros, after absl's RETURN_IF_ERROR / ASSIGN_OR_RETURN. Each returns the
// Error it finds unchanged (code, where and message) from the enclosing function (or lambda),
// which returns a Result<U> or Status; a site that converts the error or adds context writes
// its own `return`.
//
// PHX_RETURN_IF_ERROR(expr): evaluates `expr` (a Result<T> or Status, or a variable holding
// one) once; when it holds an Error, returns that Error. A value in it is dropped.
//   PHX_RETURN_IF_ERROR(store.Apply(batch));
//   auto spec = ReadSpec(text);
//   PHX_RETURN_IF_ERROR(spec);
#define PHX_RETURN_IF_ERROR(...)                                                \
  do {                                                                          \
    if (auto&& phx_result_ = (__VA_ARGS__); !phx_result_) {                     \
      return std::unexpected<::phalanx::Error>(std::move(phx_result_).error()); \
    }                                                                           \
  } while (false)

// PHX_ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a Result<T>) once into a hidden local; when
// it holds an Error, returns that Error; otherwise moves the value into `lhs`, which is a new
// variable (`auto n`, `const auto& spec`, `std::string text`) or an existing one (`job.gpus`).
// It expands to more than one statement, so it needs a block of its own (not the sole statement
// of an `if` without braces), and at most one per line (the hidden name is made from
// __LINE__). `lhs` must not contain a comma outside parentheses; `expr` may.
//   PHX_ASSIGN_OR_RETURN(auto n, ParseNumber<int>(text));     // n is an int
//   PHX_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(path, options));
#define PHX_ASSIGN_OR_RETURN(lhs, ...) PHX_ASSIGN_OR_RETURN_IMPL_(PHX_CONCAT_(phx_assign_, __LINE__), lhs, __VA_ARGS__)

#define PHX_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, ...)                             \
  auto tmp = (__VA_ARGS__);                                                   \
  if (!tmp) return std::unexpected<::phalanx::Error>(std::move(tmp).error()); \
  lhs = std::move(*tmp)

#define PHX_CONCAT_(a, b) PHX_CONCAT_IMPL_(a, b)
#define PHX_CONCAT_IMPL_(a, b) a##b
