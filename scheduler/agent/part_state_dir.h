// PartStateDir: the agent's durable state, one directory per node (default
// /var/lib/phalanx-agent/<node>):
//
//   <root>/                 0711 root   (traversable, so a job can reach its own job dir)
//   <root>/parts/           0700 root   <launch>.part (PartRecord), <launch>.exit (the keeper's
//                                       wait status), <launch>.launch (a launch that waits for
//                                       its GPUs, as the agent received it), temp files
//   <root>/jobs/            0711 root
//   <root>/jobs/<launch>/   0700 job's user: "script" (0500) and "checkpoint" (0600, the
//                                       PHALANX_CHECKPOINT_FILE)
//
// Records are written atomically (temp file, fsync, rename). A part's files are removed only
// after its PartExited was handed to the daemon (Remove).
// Thread-safety: thread-compatible; the agent uses it from its loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/part_record.h"
#include "core/common/result.h"

namespace phalanx::agent {

struct LaunchFiles {
  std::string job_dir;    // created by the launcher, owned by the job's user
  std::string exit_file;  // written by the keeper
  std::string exit_tmp;
};

class PartStateDir {
 public:
  // Creates the directories (and their parents) with the modes above. Fails naming the path.
  static Result<PartStateDir> Open(std::string root);

  const std::string& root() const { return root_; }
  LaunchFiles FilesFor(LaunchId launch) const;

  Status Save(const PartRecord& record) const;
  // Every parsable record; unparsable ones are returned in `errors` (and left on disk).
  std::vector<PartRecord> LoadAll(std::vector<Error>* errors) const;
  // The keeper's wait status, nullopt while the part runs (or when the file is unreadable).
  // `orphan_grace_ms`, when given, is set to the grace after which the keeper took the job down
  // because no agent was there (exit file "STATUS agent-gone GRACE_MS"), else to -1.
  std::optional<int> ReadExitStatus(LaunchId launch, int64_t* orphan_grace_ms = nullptr) const;

  // <root>/agent.lock: a running agent holds an exclusive flock on it (LockAgent); keepers probe
  // it to tell "agent restarting" from "agent gone" (child_program.h).
  std::string AgentLockPath() const { return root_ + "/agent.lock"; }
  // Takes that lock, retrying for up to `wait` (keepers hold a shared probe for microseconds).
  // Returns the descriptor to keep open for the agent's lifetime; fails naming the file when
  // another agent holds it.
  Result<int> LockAgent(std::chrono::milliseconds wait) const;
  // Deletes the record (first), the pending launch, the exit file and the job dir with all it
  // holds (RemoveJobDir: what could not be removed is reported in the Status).
  Status Remove(LaunchId launch) const;

  // A launch that waits (for GPUs still held by an earlier part), kept as an opaque blob so that
  // a restarted agent can queue it again. Written atomically; removed once the part starts or
  // is dropped. LoadPending returns every readable one (by launch id, ascending).
  Status SavePending(LaunchId launch, std::string_view blob) const;
  std::vector<std::pair<LaunchId, std::string>> LoadPending() const;
  void RemovePending(LaunchId launch) const;

 private:
  explicit PartStateDir(std::string root) : root_(std::move(root)) {}
  std::string RecordPath(LaunchId launch) const;
  std::string PendingPath(LaunchId launch) const;
  Status WriteAtomically(const std::string& path, const std::string& tmp, std::string_view text) const;

  std::string root_;
};

// Deletes `dir` and everything in it, subdirectories included (a job may leave a tree behind),
// without following symlinks: entries are removed relative to open directory descriptors, and
// a symlink is removed, never followed. At most kMaxJobDirDepth levels below `dir`; what could
// not be removed is named in the error (the dir itself then stays).
inline constexpr int kMaxJobDirDepth = 64;
Status RemoveJobDir(const std::string& dir);

}  // namespace phalanx::agent
