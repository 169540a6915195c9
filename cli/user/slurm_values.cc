#include "slurm_values.h"

#include <algorithm>
#include <utility>

#include "options.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

std::string Q(std::string_view s) { return "'" + std::string(s) + "'"; }

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int Num(std::string_view s) {
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// "HH:MM[:SS]" -> seconds into a day; -1 when malformed.
int64_t ClockTime(std::string_view s) {
  const std::vector<std::string_view> parts = Split(s, ':');
  if (parts.size() < 2 || parts.size() > 3) return -1;
  for (std::string_view p : parts) {
    if (!AllDigits(p) || p.size() > 2) return -1;
  }
  const int h = Num(parts[0]), m = Num(parts[1]), sec = parts.size() == 3 ? Num(parts[2]) : 0;
  if (h > 23 || m > 59 || sec > 59) return -1;
  return int64_t{h} * 3600 + m * 60 + sec;
}

constexpr std::string_view kForms =
    " (now, now+N[seconds|minutes|hours|days|weeks], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], midnight, noon, "
    "teatime, today, tomorrow)";

// Local midnight of the day `days` after the one holding `t`, plus `seconds`.
int64_t DayAt(const BeginClock& c, int64_t t, int days, int64_t seconds) {
  std::tm tm = c.to_local(t);
  tm.tm_mday += days;
  tm.tm_hour = static_cast<int>(seconds / 3600);
  tm.tm_min = static_cast<int>(seconds / 60 % 60);
  tm.tm_sec = static_cast<int>(seconds % 60);
  tm.tm_isdst = -1;
  return c.from_local(tm);
}

// A time of day: today, or tomorrow when it has passed (as sbatch).
int64_t NextAt(const BeginClock& c, int64_t seconds) {
  const int64_t today = DayAt(c, c.now, 0, seconds);
  return today >= c.now ? today : DayAt(c, c.now, 1, seconds);
}

}  // namespace

Result<int64_t> ParseBeginTime(std::string_view text, const BeginClock& c) {
  const std::string bad = Q(text) + " is not a time" + std::string(kForms);
  std::string lower(Trim(text));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char ch) { return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch; });
  if (lower.empty()) return Fail("", bad);
  if (lower == "now") return c.now;
  if (lower.starts_with("now+")) {
    std::string_view rest = std::string_view(lower).substr(4);
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 0 || digits > 9) return Fail("", bad);
    const int64_t n = Num(rest.substr(0, digits));
    const std::string_view unit = rest.substr(digits);
    static constexpr std::pair<std::string_view, int64_t> kUnits[] = {
        {"", 1},      {"s", 1},       {"sec", 1},      {"second", 1}, {"seconds", 1},   {"m", 60},
        {"min", 60},  {"minute", 60}, {"minutes", 60}, {"h", 3600},   {"hour", 3600},   {"hours", 3600},
        {"d", 86400}, {"day", 86400}, {"days", 86400}, {"w", 604800}, {"week", 604800}, {"weeks", 604800}};
    for (const auto& [name, seconds] : kUnits) {
      if (name == unit) return c.now + n * seconds;
    }
    return Fail("", Q(text) + ": unknown unit " + Q(unit) + " (seconds, minutes, hours, days or weeks)");
  }
  if (lower == "midnight") return DayAt(c, c.now, 1, 0);
  if (lower == "today") return DayAt(c, c.now, 0, 0);
  if (lower == "tomorrow") return DayAt(c, c.now, 1, 0);
  if (lower == "noon") return NextAt(c, 12 * 3600);
  if (lower == "fika") return NextAt(c, 15 * 3600);
  if (lower == "teatime") return NextAt(c, 16 * 3600);
  if (const int64_t s = ClockTime(lower); s >= 0) return NextAt(c, s);
  // YYYY-MM-DD[THH:MM[:SS]]
  const size_t t = lower.find('t');
  const std::string_view date = std::string_view(lower).substr(0, t);
  const std::vector<std::string_view> ymd = Split(date, '-');
  if (ymd.size() != 3 || ymd[0].size() != 4 || !AllDigits(ymd[0]) || !AllDigits(ymd[1]) || !AllDigits(ymd[2]) ||
      ymd[1].size() > 2 || ymd[2].size() > 2) {
    return Fail("", bad);
  }
  const int y = Num(ymd[0]), mo = Num(ymd[1]), d = Num(ymd[2]);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || y < 1970) return Fail("", bad);
  int64_t secs = 0;
  if (t != std::string::npos) {
    secs = ClockTime(std::string_view(lower).substr(t + 1));
    if (secs < 0) return Fail("", bad);
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = static_cast<int>(secs / 3600);
  tm.tm_min = static_cast<int>(secs / 60 % 60);
  tm.tm_sec = static_cast<int>(secs % 60);
  tm.tm_isdst = -1;
  const std::tm asked = tm;
  const int64_t when = c.from_local(tm);
  const std::tm back = c.to_local(when);
  if (back.tm_mday != asked.tm_mday || back.tm_mon != asked.tm_mon) return Fail("", Q(text) + ": no such date");
  return when;
}

Result<uint64_t> ParseMemoryMb(std::string_view text) {
  const std::string bad = Q(text) + " is not a size (N[K|M|G|T], megabytes without a unit)";
  std::string_view digits = text;
  uint64_t scale_kb = 1024;  // megabytes
  if (!text.empty() && !(text.back() >= '0' && text.back() <= '9')) {
    switch (text.back()) {
      case 'K':
      case 'k': scale_kb = 1; break;
      case 'M':
      case 'm': scale_kb = 1024; break;
      case 'G':
      case 'g': scale_kb = 1024 * 1024; break;
      case 'T':
      case 't': scale_kb = uint64_t{1024} * 1024 * 1024; break;
      default: return Fail("", bad);
    }
    digits.remove_suffix(1);
  }
  auto n = ParseCount(digits, 0, uint64_t{1} << 40);
  if (!n) return Fail("", bad);
  const uint64_t kb = *n * scale_kb;
  if (*n != 0 && kb / *n != scale_kb) return Fail("", Q(text) + " is too large");
  return (kb + 1023) / 1024;
}

Result<GresGpus> ParseGresGpus(std::string_view text) {
  GresGpus out;
  bool seen = false;
  for (std::string_view item : Split(text, ',')) {
    const std::vector<std::string_view> parts = Split(item, ':');
    if (parts[0] != "gpu") {
      return Fail(
          "", Q(item) + ": only gpu[:TYPE]:N is supported (" + Q(parts[0]) + " is not a resource Phalanx schedules)");
    }
    if (seen) return Fail("", Q(text) + ": gpu is given twice");
    seen = true;
    std::string_view count = parts.size() >= 2 ? parts.back() : "1";
    if (parts.size() == 2 && !AllDigits(parts[1])) {  // gpu:TYPE, one GPU
      out.type = std::string(parts[1]);
      count = "1";
    } else if (parts.size() == 3) {
      out.type = std::string(parts[1]);
    } else if (parts.size() > 3) {
      return Fail("", Q(item) + " is not gpu[:TYPE]:N");
    }
    auto n = ParseCount(count, 1, uint64_t{1} << 20);
    if (!n) return Fail("", Q(item) + ": " + Q(count) + " is not a GPU count");
    out.count = static_cast<uint32_t>(*n);
    for (char ch : out.type) {
      const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                      ch == '-' || ch == '.';
      if (!ok) return Fail("", Q(item) + ": " + Q(out.type) + " is not a GPU type");
    }
  }
  return out;
}

std::string AddFeature(std::string_view constraint, std::string_view feature) {
  if (Trim(constraint).empty()) return std::string(feature);
  std::string out;
  for (std::string_view alt : Split(constraint, '|')) {
    if (!out.empty()) out += '|';
    out += std::string(Trim(alt)) + "&" + std::string(feature);
  }
  return out;
}

}  // namespace phalanx::cli
