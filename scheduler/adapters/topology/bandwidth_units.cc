#include "adapters/topology/bandwidth_units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

// GB/s per one unit of `unit`, or nullopt. The SI prefix is case-insensitive (K/k, M/m, G/g,
// T/t); the b/B of bits/bytes is not, since it changes the value eightfold.
std::optional<double> UnitFactor(std::string_view unit) {
  if (unit.size() < 2) return std::nullopt;
  double prefix = 0;
  switch (std::tolower(static_cast<unsigned char>(unit.front()))) {
    case 'k': prefix = 1e-6; break;
    case 'm': prefix = 1e-3; break;
    case 'g': prefix = 1; break;
    case 't': prefix = 1e3; break;
    default: return std::nullopt;
  }
  const std::string_view rest = unit.substr(1);
  for (std::string_view bits : {"b/s", "bps", "bit/s", "bits/s"}) {
    if (rest == bits) return prefix / 8;
  }
  for (std::string_view bytes : {"B/s", "Bps", "byte/s", "Byte/s", "bytes/s", "Bytes/s"}) {
    if (rest == bytes) return prefix;
  }
  return std::nullopt;
}

// InfiniBand data-rate names for a 4x port, in GB/s per direction.
std::optional<double> InfinibandRate(std::string_view name) {
  if (EqualsIgnoreCase(name, "EDR")) return 100.0 / 8;
  if (EqualsIgnoreCase(name, "HDR")) return 200.0 / 8;
  if (EqualsIgnoreCase(name, "NDR")) return 400.0 / 8;
  if (EqualsIgnoreCase(name, "XDR")) return 800.0 / 8;
  return std::nullopt;
}

}  // namespace

Result<double> ParseBandwidth(std::string_view text, std::string_view where, std::string_view default_unit) {
  const std::string w(where);
  const std::string_view t = Trim(text);
  if (t.empty()) return Fail(w, "empty bandwidth (expected e.g. 400Gb/s, 50GB/s or NDR)");

  // "NDR", "2xNDR", "4 x HDR".
  if (auto rate = InfinibandRate(t)) return *rate;
  if (const size_t x = t.find_first_of("xX"); x != std::string_view::npos && x > 0) {
    const std::string_view count_text = Trim(t.substr(0, x));
    const std::string_view name = Trim(t.substr(x + 1));
    if (auto rate = InfinibandRate(name)) {
      const auto count = ParseNumber<int>(count_text);
      if (!count || *count < 1 || *count > 1024) {
        return Fail(
            w, "bad lane multiplier " + Quote(count_text) + " in bandwidth " + Quote(t) + " (expected e.g. 2xNDR)");
      }
      return *count * *rate;
    }
  }

  double value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || end == t.data()) {
    return Fail(w, "bad bandwidth " + Quote(t) + " (expected a number with a unit, e.g. 400Gb/s, 50GB/s, or NDR)");
  }
  if (!std::isfinite(value) || value <= 0) return Fail(w, "bandwidth must be a positive number, got " + Quote(t));
  const std::string_view unit = Trim(std::string_view(end, static_cast<size_t>(t.data() + t.size() - end)));
  if (unit.empty()) {
    if (default_unit.empty()) {
      return Fail(w, "bandwidth " + Quote(t) + " has no unit (write e.g. " + std::string(t) + "Gb/s or " +
                         std::string(t) + "GB/s)");
    }
    const auto factor = UnitFactor(default_unit);
    if (!factor) return Fail(w, "bad default bandwidth unit " + Quote(default_unit) + " (expected Gb/s or GB/s)");
    return value * *factor;
  }
  const auto factor = UnitFactor(unit);
  if (!factor) {
    return Fail(w, "unknown bandwidth unit " + Quote(unit) + " in " + Quote(t) +
                       " (known: Kb/s Mb/s Gb/s Tb/s, KB/s MB/s GB/s TB/s, Gbps, GBps, Gbit/s)");
  }
  const double gbs = value * *factor;
  if (!std::isfinite(gbs) || gbs <= 0) return Fail(w, "bandwidth " + Quote(t) + " is out of range");
  return gbs;
}

}  // namespace phalanx
