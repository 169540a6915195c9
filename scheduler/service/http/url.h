// Request-target helpers (RFC 3986): percent-decoding and query-string parsing. Pure functions.
// Thread-safety: none needed (no state).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::http {

// Decoded query parameters. A key may repeat (`?state=pending&state=running`); values of one
// key keep their order in the target.
using Query = std::multimap<std::string, std::string, std::less<>>;

// Decodes %XX escapes; with `plus_is_space` (form/query encoding) '+' decodes to a space.
// Fails on a '%' not followed by two hex digits and on %00 (a NUL byte), naming the input.
Result<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// "a=1&b=x%20y&c" -> {a: "1", b: "x y", c: ""}. Empty pieces ("a=1&&b=2") are skipped. Fails
// when a key or value is badly escaped (the error names the piece).
Result<Query> ParseQuery(std::string_view query);

// Splits a request target at the first '?': {path, raw query}; a '#fragment' is dropped.
struct SplitTarget {
  std::string_view path;
  std::string_view query;
};
SplitTarget Split(std::string_view target);

}  // namespace phalanx::http
