// Small string helpers shared by the readers, the CLIs and the daemon.
//
// Whitespace is the C locale's isspace: space, \t, \n, \v, \f, \r. Views returned point into
// the argument (keep it alive). ASCII only: case mapping leaves other bytes as they are.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace phalanx {

// `s` without leading and trailing whitespace.
std::string_view Trim(std::string_view s);
// `s` without leading whitespace.
std::string_view TrimLeft(std::string_view s);

// Every field between `sep`s, empty ones included: "a,,b" -> {"a", "", "b"}, "" -> {""}.
std::vector<std::string_view> Split(std::string_view s, char sep);
// The non-empty fields between `sep`s: "a,,b," -> {"a", "b"}, "" -> {}.
std::vector<std::string_view> SplitNonEmpty(std::string_view s, char sep);
// The words between runs of whitespace: " a  b\t" -> {"a", "b"}.
std::vector<std::string_view> SplitWhitespace(std::string_view s);

std::string ToUpper(std::string_view s);
std::string ToLower(std::string_view s);
// Equal, or a prefix, ignoring ASCII case.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix);

// `s` in single quotes, as error messages quote values: 'dgx01'. Nothing is escaped.
std::string Quote(std::string_view s);

// The file name in `path` without its directories and its last extension: "cfg/dgx01.xml" ->
// "dgx01" (a name's leading dot starts no extension: ".hidden" stays); `if_empty` when that is "".
std::string FileStem(std::string_view path, std::string_view if_empty = "");

// `s` safe as HTML text or a double-quoted attribute value: < > & " as entities.
std::string HtmlEscape(std::string_view s);

}  // namespace phalanx
