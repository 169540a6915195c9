// Values of gsub's Slurm options, as sbatch reads them: --begin times, --mem sizes, --gres GPU
// requests, --open-mode, --signal's "B:" prefix. Errors are messages for OptionValue::Bad (the
// flag and the "script:line" are added by the caller).
// Thread-safety: pure functions (the clock and the time zone come in through BeginClock).
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::cli {

// What --begin needs to know of the present: now, and local calendar time both ways (gsub:
// localtime_r and mktime; tests: UTC).
struct BeginClock {
  int64_t now = 0;
  std::function<std::tm(int64_t)> to_local;
  std::function<int64_t(std::tm)> from_local;  // tm_isdst = -1: the zone decides
};

// sbatch's --begin forms, in unix seconds:
//   now, now+N (seconds) or now+N{seconds,minutes,hours,days,weeks} (also s/min/h/d/w, singular)
//   HH:MM[:SS]                       today, or tomorrow when that time has passed
//   YYYY-MM-DD[THH:MM[:SS]]          local time
// (sbatch's MM/DD[/YY] and MMDDYY forms are not supported: an error.)
//   midnight, noon, fika (15:00), teatime (16:00), today, tomorrow
// Fails naming the value and the forms.
Result<int64_t> ParseBeginTime(std::string_view text, const BeginClock& clock);

// A size in megabytes: N[K|M|G|T] (no suffix: megabytes, as sbatch); K rounds up.
Result<uint64_t> ParseMemoryMb(std::string_view text);

// --gres=gpu[:TYPE]:N[,...]: the GPU count and type (empty: any). Other resources than gpu are
// an error naming them; so is a TYPE that is not a feature name.
struct GresGpus {
  uint32_t count = 0;
  std::string type;
};
Result<GresGpus> ParseGresGpus(std::string_view text);

// A constraint with `feature` added to every alternative: ("a|b", "h100") -> "a&h100|b&h100".
std::string AddFeature(std::string_view constraint, std::string_view feature);

}  // namespace phalanx::cli
