// `phalanx-agent checkpoint-done [--epoch N] [--path P]`: run inside a job to tell Phalanx that
// a checkpoint is complete. Writes "N P" to $PHALANX_CHECKPOINT_FILE (checkpoint_file.h); the
// node's agent reports it to the daemon. Without --epoch the daemon numbers it (epoch 0).
// The admin program can offer the same as `phalanx checkpoint-done` by calling
// RunCheckpointDone (this library has no gRPC) or by exec'ing phalanx-agent.
// Thread-safety: reads the environment given; writes stdout/stderr.
#pragma once

#include <span>
#include <string>

namespace phalanx::agent {

// Exit status: 0 done, 1 the file could not be written, 2 usage (bad flag, not in a job).
// `checkpoint_file` is getenv("PHALANX_CHECKPOINT_FILE") (nullptr when unset).
int RunCheckpointDone(std::span<const std::string> args, const char* checkpoint_file);

}  // namespace phalanx::agent
