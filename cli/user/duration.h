// Durations as Slurm users write them (-t/--time), and as squeue prints them.
//
// ParseDuration accepts Slurm's forms (util/duration.h: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM,
// D-HH:MM:SS; "90" = 1 h 30 min as sbatch -t 90, "0-05" = 5 hours) and one number with a unit:
// s, m, h or d ("90s", "30m", "2h", "1d"). Fails (message quoting the text) on an empty text,
// anything else, a value of 0 unless `allow_zero`, or more than 365 days.
// FormatDuration prints seconds the way squeue prints TIME: "M:SS", "H:MM:SS", "D-HH:MM:SS";
// a negative value prints as "0:00".
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::cli {

Result<int64_t> ParseDuration(std::string_view text, bool allow_zero = false);

std::string FormatDuration(int64_t seconds);

}  // namespace phalanx::cli
