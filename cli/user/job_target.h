// Job ids as scancel takes them: "1234" (a job, or a whole array), "1234_7" (one task of
// array 1234), "1234_[1-3,5]" (some tasks: util/job_array.h's index forms, no %N).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx::cli {

struct JobTarget {
  uint64_t id = 0;                    // a job id or an array's id
  std::optional<uint32_t> task = {};  // set: this task of array `id`

  std::string ToString() const;  // "1234" or "1234_7"
};

// Fails quoting the text: "'12_x' is not a job id (ID, ID_TASK or ID_[TASKS])".
Result<std::vector<JobTarget>> ParseJobTargets(std::string_view text);

}  // namespace phalanx::cli
