// Bandwidth text -> GB/s per direction, the one unit of the topology model.
//
// Accepted: a number with a unit: "400Gb/s", "400Gbps", "400 Gbit/s", "50GB/s", "50GBps",
// "100Mb/s", "1.6Tb/s", "900GB/s"; InfiniBand names "EDR" (100 Gb/s), "HDR" (200), "NDR" (400),
// "XDR" (800), optionally with a lane multiplier: "2xNDR". A bare number is accepted only when
// `default_unit` is given ("Gb/s" or "GB/s"). Anything else fails with the text and `where`.
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "core/common/result.h"

namespace phalanx {

Result<double> ParseBandwidth(std::string_view text, std::string_view where, std::string_view default_unit = {});

}  // namespace phalanx
