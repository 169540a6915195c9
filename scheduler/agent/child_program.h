// ChildProgram: the two processes fork() creates for one job part, fully prepared in the agent
// so that the forked code only makes async-signal-safe system calls (the agent is threaded:
// after fork nothing may allocate, lock or look up users).
//
//   agent ── fork ──> keeper (root, own session, child subreaper, ignores TERM/INT/HUP/...)
//                       └── fork ──> job (own process group = its pid; drops to the user; execs)
//
// The keeper outlives an agent restart. It waits for the job, SIGKILLs what is left of the
// job's process group, reaps it, writes the job's wait status to `exit_file` (write to a temp
// file, fsync, rename) and exits. The agent watches the keeper, never the job. The keeper
// watches for an agent (its lock file, see agent_lock below): a job whose agent stays gone
// longer than the orphan grace is taken down, so it never runs unsupervised for long.
//
// Report pipe (O_CLOEXEC, so exec closes it): the keeper writes 'P' + the job's pid; either
// process writes 'E' + ChildStep + errno when a step fails (the job then exits 127). The agent
// reads until EOF: EOF without 'E' means the program was exec'd.
// Thread-safety: build and finalize on one thread; RunKeeper only in a freshly forked child.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace phalanx::agent {

enum class ChildStep : uint8_t {
  kSetsid,
  kForkJob,
  kSetpgid,
  kSetgroups,
  kSetgid,
  kSetuid,
  kChdir,
  kStdin,
  kStdout,
  kStderr,
  kExec,
};

struct ChildProgram {
  std::vector<std::string> exec_candidates;  // execve each until one works (the PATH search)
  std::string exec_name;                     // for messages: argv[0] as the user wrote it
  std::vector<std::string> argv;
  std::vector<std::string> envp;  // "KEY=VALUE"
  std::string working_dir;
  std::string stdout_path;
  std::string stderr_path;       // empty: stdout's file
  bool truncate_output = false;  // --open-mode=truncate: O_TRUNC (default: appended to)
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  mode_t umask = 022;
  std::string exit_file;
  std::string exit_tmp;
  // The agent's lock file (PartStateDir::AgentLockPath); empty: the keeper does not watch for
  // its agent. With a grace > 0, the keeper takes the job down (TERM, KILL after orphan_kill_ms)
  // once no agent held the lock for orphan_grace_ms, and says so in the exit file.
  std::string agent_lock;
  int64_t orphan_grace_ms = 0;
  int64_t orphan_kill_ms = 0;

  // Builds the char* arrays below; call once after the fields are set and before fork. The
  // object must not be copied or modified afterwards.
  void Finalize();

  // "chdir /x", "exec prog", ...: what the step did, for "launch failed: <this>: <strerror>".
  std::string Describe(ChildStep step) const;

  std::vector<char*> argv_ptrs;
  std::vector<char*> envp_ptrs;
  long max_fd = 1024;  // fallback when close_range is unavailable
};

// Runs in the child of fork(): becomes the keeper. Never returns.
[[noreturn]] void RunKeeper(const ChildProgram& program, int report_fd);

}  // namespace phalanx::agent
