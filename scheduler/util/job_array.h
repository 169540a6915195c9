// Job arrays as Slurm's `--array`: the text form of a set of task indices and the limit of
// tasks running at once, e.g. "0-99%8", "1,3,5-7", "0-15:4" (0,4,8,12), "7".
//
//   ParseArraySpec("0-15:4%2", 1001) -> tasks {0,4,8,12}, max_running 2
// Every index must be below `max_size` (Slurm's MaxArraySize: with the default 1001 the
// largest index is 1000); the tasks come back ascending and without repeats. Errors name the
// item and the value: "'5-3': the range ends before it starts", "index 2000 is not below the
// array size limit 1001 (MaxArraySize)".
// FormatArrayTasks is the inverse for display: ascending runs as "a-b", others by commas
// ({0,1,2,5} -> "0-2,5"). ArrayShape gives Slurm's SLURM_ARRAY_TASK_COUNT/MIN/MAX/STEP.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx {

// The largest MaxArraySize Slurm accepts; gsub's bound before the daemon applies its own.
inline constexpr uint32_t kArraySizeCeiling = 4000001;

struct ArraySpec {
  std::vector<uint32_t> tasks;  // ascending, unique, at least one
  uint32_t max_running = 0;     // %N: at most N tasks running at once; 0: no limit
};

// Errors have an empty `where` (the caller names the option or field).
Result<ArraySpec> ParseArraySpec(std::string_view text, uint32_t max_size);

// "0-2,5" for {0,1,2,5}; `tasks` ascending.
std::string FormatArrayTasks(const std::vector<uint32_t>& tasks);

struct ArrayShape {
  uint32_t count = 0, min = 0, max = 0;
  uint32_t step = 1;  // the common difference when the tasks are evenly spaced, else 1
};
ArrayShape ShapeOfArray(const std::vector<uint32_t>& tasks);

}  // namespace phalanx
