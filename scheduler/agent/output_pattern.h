// Slurm-style output file patterns for a part's stdout/stderr (`gsub -o`):
//   %j job id   %x job name   %u user   %N node name   %n node rank   %% a '%'
//   %A the array's id (not a task: the job id)   %a the task's index (not a task: 4294967294,
//   Slurm's NO_VAL, as sbatch writes it)
// Any other "%c" is kept as written. The result is a path; a relative one is relative to the
// job's working directory (the launcher opens it after chdir, as the user).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/ids.h"

namespace phalanx::agent {

struct PatternFields {
  JobId job_id = kNoJob;
  std::string_view job_name;
  std::string_view user;
  std::string_view node;
  uint32_t node_rank = 0;
  JobId array_job_id = kNoJob;  // kNoJob: not an array task
  uint32_t array_task_id = 0;
};

inline constexpr std::string_view kDefaultOutputPattern = "phalanx-%j.out";

std::string ExpandOutputPattern(std::string_view pattern, const PatternFields& fields);

}  // namespace phalanx::agent
