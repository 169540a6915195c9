// UTF-8 well-formedness for the text formats Phalanx writes (JSON, Prometheus): every byte that
// is not part of well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
// U+10FFFF) becomes U+FFFD, one replacement per bad byte.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace phalanx {

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";  // U+FFFD

// Length (1..4) of the well-formed UTF-8 sequence at the start of `s` (non-empty), or 0 when
// it does not start with one.
size_t Utf8SequenceLength(std::string_view s);

// Appends `text` to `out` with invalid bytes replaced, calling `escape(out, c)` for each ASCII
// byte (it appends the byte or its escape); longer sequences are copied as they are.
template <typename EscapeAscii>
void AppendSanitizedUtf8(std::string& out, std::string_view text, EscapeAscii escape) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = Utf8SequenceLength(text.substr(i));
    if (n == 0) {
      out += kUtf8Replacement;
      ++i;
    } else if (n == 1) {
      escape(out, text[i]);
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
}

// `text` with invalid bytes replaced.
std::string SanitizeUtf8(std::string_view text);

}  // namespace phalanx
