// JSON string literals for every JSON Phalanx writes by hand (the HTTP API's errors, `phalanx
// topology --json`, the simulator's reports, the users' commands' --json output).
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace phalanx {

// `text` as a JSON string literal, quotes included: `"` and `\` escaped, \n \r \t \b \f by
// their short escapes, other control bytes as \u00XX; invalid UTF-8 replaced by U+FFFD
// (util/utf8.h), so the result is always valid JSON.
std::string JsonQuote(std::string_view text);

}  // namespace phalanx
