// Launcher: starts one job part (pure POSIX, no gRPC, no event loop).
//
// Launch() prepares everything in the agent (identity, job dir with the script and the
// checkpoint file, environment, output paths, the PATH search), then forks the keeper, which
// forks the job (see child_program.h for the process tree and the report pipe). It returns
// once the job's program was exec'd, or with the step that failed:
//   "chdir /x: No such file or directory", "exec trian.py: No such file or directory",
//   "open stdout /ro/out-7.txt: Permission denied", "uid 0: refusing to run a job as root ..."
// after cleaning up (the keeper is reaped, the job dir and exit file removed).
//
// A launched part is one process group (pgid = pid) in the keeper's session. Its end is
// observed through the keeper: the keeper's pidfd becomes readable and LaunchFiles::exit_file
// holds the job's wait status (PartStateDir::ReadExitStatus). The caller reaps the keeper
// (waitpid) when it is its child.
// Thread-safety: Launch is safe to call from any thread (it keeps no state); it blocks for as
// long as the child takes to reach exec (milliseconds; longer on a hung working-dir mount).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "agent/launch_spec.h"
#include "agent/part_state_dir.h"
#include "agent/user_identity.h"
#include "core/common/result.h"

namespace phalanx::agent {

struct LauncherOptions {
  std::string node;  // this node's name (%N, PHALANX_NODE)
  IdentityPolicy identity;
  mode_t umask = 022;  // the job's umask when its LaunchSpec has none
  // Keepers watch for an agent holding this lock (PartStateDir::AgentLockPath) and take their
  // job down after `orphan_grace` without one (TERM, KILL after `orphan_kill_grace`); empty or a
  // zero grace: they do not watch (the job then runs on until an agent returns).
  std::string agent_lock = {};
  std::chrono::milliseconds orphan_grace{0};
  std::chrono::milliseconds orphan_kill_grace{30'000};
};

struct LaunchedPart {
  pid_t pid = 0;           // the job's leader = its process group id
  uint64_t pid_start = 0;  // ProcStartTicks(pid); 0 when the job ended at once
  pid_t keeper_pid = 0;
  uint64_t keeper_start = 0;  // ProcStartTicks(keeper_pid)
  int64_t start_time_ms = 0;  // Unix ms
  uid_t uid = 0;
  std::string checkpoint_file;
  std::string stdout_path;  // as expanded (relative to the working dir when relative)
  std::string stderr_path;  // empty: same as stdout
};

class Launcher {
 public:
  explicit Launcher(LauncherOptions options) : options_(std::move(options)) {}

  // A script runs as `/bin/sh <script> ARGV...` (or `<script> ARGV...` when it starts with #!),
  // so argv are its $1 $2 ...; without a script argv is the command.
  // Fails before forking on a bad spec (neither argv nor script, an empty program name, a NUL
  // in an argument, a relative working dir) or identity, or on job dir errors; after forking
  // with the failed child step.
  Result<LaunchedPart> Launch(const LaunchSpec& spec, const LaunchFiles& files) const;

  const LauncherOptions& options() const { return options_; }

 private:
  LauncherOptions options_;
};

}  // namespace phalanx::agent
