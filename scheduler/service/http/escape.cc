#include "service/http/escape.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "util/utf8.h"

namespace phalanx::http {

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  AppendSanitizedUtf8(out, value, [](std::string& o, char c) {
    switch (c) {
      case '\\': o += "\\\\"; break;
      case '"': o += "\\\""; break;
      case '\n': o += "\\n"; break;
      default: o.push_back(c);
    }
  });
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  AppendSanitizedUtf8(out, help, [](std::string& o, char c) {
    switch (c) {
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      default: o.push_back(c);
    }
  });
  return out;
}

std::string FormatFloat(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Shortest round-trip digits in exponent form: "d[.ddd]e(+|-)XX", at least two exponent
  // digits, as Go writes them.
  auto sci = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view text(buf, sci.ptr - buf);
  int exponent = 0;
  size_t e = text.find('e');
  std::from_chars(text.data() + e + (text[e + 1] == '+' ? 2 : 1), text.data() + text.size(), exponent);
  if (exponent < -4 || exponent >= 6) return std::string(text);  // Go: eprec 6 when shortest
  auto fixed = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

std::string FormatValue(double value) {
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {  // 2^53
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(value));
    return std::string(buf, r.ptr);
  }
  return FormatFloat(value);
}

}  // namespace phalanx::http
