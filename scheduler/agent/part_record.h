// PartRecord: what the agent remembers about one launched part, one small text file per part
// in the state dir, so that a restarted agent re-adopts parts that are still running and
// reports the ones that ended while it was away (see part_state_dir.h).
//
// Format: one "key value" per line; unknown keys are ignored (newer agents may add some),
// values run to the end of the line. Required: job_id, launch_id, pid, keeper_pid.
// Thread-safety: plain value, pure functions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/launch_spec.h"
#include "core/common/result.h"

namespace phalanx::agent {

struct PartRecord {
  JobId job_id = kNoJob;
  LaunchId launch_id = 0;
  pid_t pid = 0;           // the job's leader; its process group id is the same
  uint64_t pid_start = 0;  // ProcStartTicks(pid) at launch (0: it had already ended)
  pid_t keeper_pid = 0;
  uint64_t keeper_start = 0;  // ProcStartTicks(keeper_pid) at launch
  std::string boot_id;        // a record from an earlier boot names dead processes
  int64_t start_time_ms = 0;  // Unix ms
  int64_t walltime_ms = 0;    // 0: none; the deadline is start_time_ms + walltime_ms
  int checkpoint_signal = 0;  // 0: SIGUSR1
  uid_t uid = 0;
  std::string checkpoint_file;
  std::string stop_reason;      // set when the agent began stopping it ("walltime", "killed")
  std::string checkpoint_seen;  // signature of the last reported checkpoint file state
  int64_t suspended_at_ms = 0;  // Unix ms it was suspended (SIGSTOP) at; 0: not suspended. Its
                                // walltime clock is stopped meanwhile (Resume extends walltime_ms)
  std::vector<uint32_t> gpus;   // the part's local GPU indices ("gpus 0,3"; a record written
                                // before this key existed holds none: it blocks no launch)
};

std::string FormatPartRecord(const PartRecord& record);

// Fails naming the key: a missing required key or a malformed number.
Result<PartRecord> ParsePartRecord(std::string_view text, std::string_view where);

}  // namespace phalanx::agent
