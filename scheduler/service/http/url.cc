#include "service/http/url.h"

#include <utility>

namespace phalanx::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else if (c != '%') {
      out.push_back(c);
    } else {
      int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
      int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return Fail("", "bad percent-escape '" + std::string(text.substr(i, 3)) + "' in '" + std::string(text) + "'");
      }
      if (hi == 0 && lo == 0) {
        return Fail("", "%00 (a NUL byte) is not allowed in '" + std::string(text) + "'");
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
  }
  return out;
}

Result<Query> ParseQuery(std::string_view query) {
  Query out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (piece.empty()) continue;
    size_t eq = piece.find('=');
    PHX_ASSIGN_OR_RETURN(auto key, PercentDecode(piece.substr(0, eq), true));
    std::string value;
    if (eq != std::string_view::npos) {
      PHX_ASSIGN_OR_RETURN(auto decoded, PercentDecode(piece.substr(eq + 1), true));
      value = std::move(decoded);
    }
    out.emplace(std::move(key), std::move(value));
  }
  return out;
}

SplitTarget Split(std::string_view target) {
  target = target.substr(0, target.find('#'));
  size_t q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

}  // namespace phalanx::http
