// Time in the core: integer seconds, always passed in by the caller (the daemon's clock, the
// simulator's clock, or a test). The core never reads a clock.
#pragma once

#include <cstdint>
#include <limits>

namespace phalanx {

using Time = int64_t;      // seconds since the Unix epoch (or since the start of a simulation)
using Duration = int64_t;  // seconds

// Far enough in the future to mean "never", small enough that Time + Duration never overflows.
inline constexpr Time kForever = std::numeric_limits<int64_t>::max() / 4;

}  // namespace phalanx
