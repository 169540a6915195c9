// The checkpoint file protocol between a job and its agent.
//
// Every part gets PHALANX_CHECKPOINT_FILE, an empty file in its job dir, owned by the job's
// user. To report a checkpoint the job changes it: touches it or, better, writes one line
//     EPOCH [PATH]
// (`phalanx-agent checkpoint-done --epoch N --path P` does that atomically). The agent polls
// the file (inode, size, mtime) and reports each change as a CheckpointReport; EPOCH 0 or an
// empty file means "the next epoch" (the daemon numbers it).
//
// The agent reads the file as root: it opens it with O_NOFOLLOW|O_NONBLOCK, accepts only a
// regular file owned by the job's uid, reads at most 4 KiB and uses only the first line.
// Thread-safety: pure functions and system calls; thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::agent {

struct CheckpointMark {
  uint64_t epoch = 0;  // 0: the next one
  std::string path;
};

// First line "EPOCH [PATH]"; an empty or blank file is epoch 0. Fails on a non-numeric epoch.
Result<CheckpointMark> ParseCheckpointContent(std::string_view text);
std::string FormatCheckpointContent(const CheckpointMark& mark);

struct CheckpointProbe {
  std::string signature;  // "ino:size:mtime_ns"; changes whenever the job reports
  std::string content;    // at most 4 KiB
};

// nullopt when the file is missing, not a regular file, or not owned by `owner`.
std::optional<CheckpointProbe> ProbeCheckpointFile(const std::string& path, uid_t owner);

// Replaces `path` with the mark (temp file in the same directory, then rename). Fails naming
// the path and errno.
Status WriteCheckpointFile(const std::string& path, const CheckpointMark& mark);

}  // namespace phalanx::agent
