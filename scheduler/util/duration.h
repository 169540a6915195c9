// Slurm's time format (sbatch --time, sacct's Elapsed and Timelimit) -> seconds.
//
//   MM            minutes                 ("90" = 1 h 30 min, as sbatch -t 90)
//   MM:SS         minutes and seconds
//   HH:MM:SS
//   D-HH          days and hours          ("0-05" = 5 hours, "1-12" = 36 hours)
//   D-HH:MM
//   D-HH:MM:SS
// Every field is decimal digits (at most 9, so nothing overflows); fields after the first must
// be < 60, the hours of a D- form < 24. Words such as UNLIMITED are not durations: their meaning
// is the caller's (the sacct reader reads them as "no limit known").
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx {

// Fails with "'<text>' is not a Slurm duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or
// D-HH:MM:SS)" on anything but the forms above (an empty text, spaces, signs, fractions).
Result<int64_t> ParseSlurmDuration(std::string_view text);

// Seconds the way squeue and sinfo print a time: "M:SS", "H:MM:SS", "D-HH:MM:SS"; a negative
// value prints as "0:00".
std::string FormatSlurmDuration(int64_t seconds);

}  // namespace phalanx
