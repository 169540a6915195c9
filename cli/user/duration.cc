#include "duration.h"

#include <cstdio>
#include <optional>

#include "util/duration.h"
#include "util/job_fields.h"
#include "util/numbers.h"

namespace phalanx::cli {
namespace {

constexpr int64_t kMaxSeconds = kMaxJobSeconds;  // util/job_fields.h: 365 days, the daemon's bound too

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
  const std::string_view digits = text.substr(0, text.size() - 1);
  if (digits.size() > 9 || digits.starts_with('-')) return std::nullopt;  // no overflow, no sign
  const auto n = ParseNumber<int64_t>(digits);
  if (!n) return std::nullopt;
  return *n * unit;
}

}  // namespace

Result<int64_t> ParseDuration(std::string_view text, bool allow_zero) {
  std::optional<int64_t> v = ParseWithUnit(text);
  if (!v) {
    if (auto slurm = ParseSlurmDuration(text)) v = *slurm;
  }
  if (!v) {
    return Fail("", "'" + std::string(text) +
                        "' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or 90s/30m/2h/1d)");
  }
  if (*v == 0 && !allow_zero) return Fail("", "'" + std::string(text) + "' is a zero duration");
  if (*v > kMaxSeconds) return Fail("", "'" + std::string(text) + "' is longer than 365 days");
  return *v;
}

std::string FormatDuration(int64_t seconds) { return FormatSlurmDuration(seconds); }

}  // namespace phalanx::cli
