// Numbers from text, over std::from_chars: the one parser family of the code base.
//
// The whole text must be one number: no spaces (callers Trim first where they allow them), no
// '+', nothing after it, no '-' for unsigned types; a value out of the type's range fails.
// Floating point accepts what from_chars's general format does (including "inf" and "nan":
// callers that need a finite value check std::isfinite).
//
// ParseNumber says only whether the text is a number; the Result forms name the field and the
// value the way the programs print them (Error::ToString):
//   ParseWholeNumber<int>("--gpus", "eight")  -> "--gpus: 'eight' is not a whole number"
//   ParseReal("share", "x")                   -> "share: 'x' is not a number"
// Thread-safety: pure functions.
#pragma once

#include <charconv>
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "core/common/result.h"

namespace phalanx {

// The value of `text`, or nullopt when `text` is not exactly one number of type T.
template <typename T>
  requires(std::integral<T> || std::floating_point<T>) && (!std::same_as<T, bool>)
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  const char* const end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;  // also the empty text
  return value;
}

// The same for parsers that fill a struct: stores the value in *out and returns true, or
// returns false and leaves *out as it was.
template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  const std::optional<T> v = ParseNumber<T>(text);
  if (v) *out = *v;
  return v.has_value();
}

// Error{where = field, message = "'<text>' is not a whole number"} when `text` is not one.
template <std::integral T>
Result<T> ParseWholeNumber(std::string_view field, std::string_view text) {
  if (auto v = ParseNumber<T>(text)) return *v;
  return Fail(std::string(field), "'" + std::string(text) + "' is not a whole number");
}

// Error{where = field, message = "'<text>' is not a number"} when `text` is not one.
inline Result<double> ParseReal(std::string_view field, std::string_view text) {
  if (auto v = ParseNumber<double>(text)) return *v;
  return Fail(std::string(field), "'" + std::string(text) + "' is not a number");
}

}  // namespace phalanx
