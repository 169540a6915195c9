#include "service/http/escape.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace phalanx::http {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    unsigned char b1 = byte(1);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;  // overlong
    if (b0 == 0xED && b1 > 0x9F) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    unsigned char b1 = byte(1);
    if (b0 == 0xF0 && b1 < 0x90) return 0;  // overlong
    if (b0 == 0xF4 && b1 > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;  // continuation byte, 0xC0/0xC1 or 0xF5..0xFF
}

// Appends `text` to `out` with invalid UTF-8 replaced, calling `escape(out, c)` for each ASCII
// byte (it appends the byte or its escape).
template <typename Escape>
void AppendUtf8(std::string& out, std::string_view text, Escape escape) {
  size_t i = 0;
  while (i < text.size()) {
    size_t n = Utf8SequenceLength(text.substr(i));
    if (n == 0) {
      out += kReplacement;
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

}  // namespace

std::string SanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendUtf8(out, text, [](std::string& o, char c) { o.push_back(c); });
  return out;
}

std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  AppendUtf8(out, text, [](std::string& o, char c) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\b': o += "\\b"; break;
      case '\f': o += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          o += buf;
        } else {
          o.push_back(c);
        }
    }
  });
  out.push_back('"');
  return out;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  AppendUtf8(out, value, [](std::string& o, char c) {
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
  AppendUtf8(out, help, [](std::string& o, char c) {
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
  std::from_chars(text.data() + e + (text[e + 1] == '+' ? 2 : 1), text.data() + text.size(),
                  exponent);
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
