// Caller: who is asking, as the daemon established it (the Unix socket peer's credentials for
// users; an authenticated agent for the Agents service), and the permission rules:
//   - everyone may list and read jobs (without their environment),
//   - the owner, root and configured admins may cancel, hold, release, update, report
//     checkpoints and read the environment of a job,
//   - only root and admins may drain and resume nodes or raise a walltime.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "core/sched/job.h"

namespace phalanx::service {

struct Caller {
  uint32_t uid = 0;
  uint32_t gid = 0;
  int32_t pid = 0;
  std::string user;    // from the password database; "uid:N" when the uid has no entry
  bool admin = false;  // root or a configured admin
};

// May `who` act on (cancel, hold, release, update, read env of) a job owned by `owner`?
inline bool MayActOn(const Caller& who, const std::string& owner) { return who.admin || who.user == owner; }

}  // namespace phalanx::service
