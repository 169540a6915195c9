// Errors as values for the whole code base.
//
// An Error names *where* (a file:line, a field, a request) and *what*. Core and adapters return
// Result<T> = std::expected<T, Error>; nothing throws across module boundaries.
// Thread-safety: plain values.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace phalanx {

struct Error {
  std::string where;    // "topology.conf:12", "request.gpus", ... (may be empty)
  std::string message;  // what is wrong, with the offending value

  std::string ToString() const { return where.empty() ? message : where + ": " + message; }
};

template <typename T>
using Result = std::expected<T, Error>;

// Shorthand for `return Fail("file:3", "unknown switch 'x'");` in functions returning Result<T>.
inline std::unexpected<Error> Fail(std::string where, std::string message) {
  return std::unexpected<Error>(Error{std::move(where), std::move(message)});
}

// Result<void> reads better as Status.
using Status = Result<void>;

}  // namespace phalanx
