#include "util/duration.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

// A run of at most 9 decimal digits -> its value; nullopt otherwise (signs included).
std::optional<int64_t> Field(std::string_view s) {
  if (s.size() > 9 || s.starts_with('-')) return std::nullopt;
  return ParseNumber<int64_t>(s);
}

std::optional<int64_t> Seconds(std::string_view text) {
  int64_t days = 0;
  bool has_days = false;
  std::string_view rest = text;
  if (const size_t dash = text.find('-'); dash != std::string_view::npos) {
    const auto d = Field(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    has_days = true;
    rest = text.substr(dash + 1);
  }
  const std::vector<std::string_view> parts = Split(rest, ':');
  if (parts.size() > 3) return std::nullopt;
  std::vector<int64_t> v;
  for (std::string_view p : parts) {
    const auto n = Field(p);
    if (!n) return std::nullopt;
    v.push_back(*n);
  }
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] >= 60) return std::nullopt;
  }
  if (has_days) {  // D-HH, D-HH:MM, D-HH:MM:SS
    if (v[0] >= 24) return std::nullopt;
    const int64_t h = v[0], m = v.size() > 1 ? v[1] : 0, s = v.size() > 2 ? v[2] : 0;
    return ((days * 24 + h) * 60 + m) * 60 + s;
  }
  switch (v.size()) {
    case 1: return v[0] * 60;                        // MM
    case 2: return v[0] * 60 + v[1];                 // MM:SS
    default: return (v[0] * 60 + v[1]) * 60 + v[2];  // HH:MM:SS
  }
}

}  // namespace

Result<int64_t> ParseSlurmDuration(std::string_view text) {
  if (auto s = Seconds(text)) return *s;
  return Fail("", Quote(text) + " is not a Slurm duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)");
}

std::string FormatSlurmDuration(int64_t seconds) {
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

}  // namespace phalanx
