#include "duration.h"

#include <charconv>
#include <cstdio>
#include <optional>
#include <vector>

namespace phalanx::cli {
namespace {

constexpr int64_t kMaxSeconds = 365LL * 86400;

// A run of decimal digits (at most 9, so nothing overflows) -> its value; nullopt otherwise.
std::optional<int64_t> Number(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> SplitColons(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ':') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// The Slurm forms; nullopt when `text` is not one of them.
std::optional<int64_t> ParseSlurm(std::string_view text) {
  int64_t days = 0;
  bool has_days = false;
  std::string_view rest = text;
  if (const size_t dash = text.find('-'); dash != std::string_view::npos) {
    auto d = Number(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    has_days = true;
    rest = text.substr(dash + 1);
  }
  const std::vector<std::string_view> parts = SplitColons(rest);
  if (parts.size() > 3) return std::nullopt;
  std::vector<int64_t> v;
  for (std::string_view p : parts) {
    auto n = Number(p);
    if (!n) return std::nullopt;
    v.push_back(*n);
  }
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] >= 60) return std::nullopt;
  }
  if (has_days) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    if (v[0] >= 24) return std::nullopt;
    const int64_t h = v[0], m = v.size() > 1 ? v[1] : 0, s = v.size() > 2 ? v[2] : 0;
    return ((days * 24 + h) * 60 + m) * 60 + s;
  }
  switch (v.size()) {
    case 1: return v[0] * 60;                           // MM
    case 2: return v[0] * 60 + v[1];                    // MM:SS
    default: return (v[0] * 60 + v[1]) * 60 + v[2];     // HH:MM:SS
  }
}

// "90s", "30m", "2h", "1d".
std::optional<int64_t> ParseWithUnit(std::string_view text) {
  if (text.size() < 2) return std::nullopt;
  int64_t unit = 0;
  switch (text.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return std::nullopt;
  }
  auto n = Number(text.substr(0, text.size() - 1));
  if (!n) return std::nullopt;
  return *n * unit;
}

}  // namespace

Result<int64_t> ParseDuration(std::string_view text, bool allow_zero) {
  std::optional<int64_t> v = ParseWithUnit(text);
  if (!v) v = ParseSlurm(text);
  if (!v) {
    return Fail("", "'" + std::string(text) +
                        "' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or 90s/30m/2h/1d)");
  }
  if (*v == 0 && !allow_zero) return Fail("", "'" + std::string(text) + "' is a zero duration");
  if (*v > kMaxSeconds) return Fail("", "'" + std::string(text) + "' is longer than 365 days");
  return *v;
}

std::string FormatDuration(int64_t seconds) {
  if (seconds < 0) seconds = 0;
  const int64_t d = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60, s = seconds % 60;
  char buf[48];
  if (d > 0) {
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(d), static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  } else if (h > 0) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(h), static_cast<long long>(m),
                  static_cast<long long>(s));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(m), static_cast<long long>(s));
  }
  return buf;
}

}  // namespace phalanx::cli
