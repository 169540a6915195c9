// Caller: who is asking, as the daemon established it (the Unix socket peer's credentials for
// users; an authenticated agent for the Agents service), and the permission rules:
//   - everyone may list and read jobs, but only the owner, root and admins see a job's script,
//     arguments, environment, working directory and output paths (PrivateData, api_views.h),
//   - the owner, root and configured admins may cancel, hold, release, update, report
//     checkpoints and read the environment of a job,
//   - only root and admins may drain and resume nodes or raise a walltime.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/sched/job.h"

namespace phalanx::service {

struct Caller {
  uint32_t uid = 0;
  uint32_t gid = 0;
  int32_t pid = 0;
  std::string user;    // from the password database; "uid:N" when the uid has no entry
  bool admin = false;  // root, a configured admin or a member of a configured admin group
  // Group names (the gid's and, for a user in the password database, its supplementary
  // groups; "gid:N" for a gid without a name), for access rules and admin groups.
  std::vector<std::string> groups = {};
};

// What other users (neither the owner nor an admin) see of a job: `private_data` in the
// configuration, after Slurm's PrivateData. The script, arguments, environment, working
// directory and output paths of a job are always private to its owner and admins.
struct PrivateData {
  bool jobs = false;   // others' jobs are not shown at all (not listed, not found, not watched)
  bool names = false;  // others' job names are hidden
  bool users = false;  // others' user names, uids, gids and accounts are hidden
};

enum class JobView {
  kFull,    // the owner or an admin: everything (the environment only when asked for)
  kPublic,  // someone else: the private fields redacted (api_views.h's FillJob)
  kHidden,  // someone else, with private_data jobs: nothing
};

inline JobView ViewOf(const PrivateData& p, const Caller& viewer, const std::string& owner) {
  if (viewer.admin || (!viewer.user.empty() && viewer.user == owner)) return JobView::kFull;
  return p.jobs ? JobView::kHidden : JobView::kPublic;
}

// May `who` act on (cancel, hold, release, update, read env of) a job owned by `owner`?
inline bool MayActOn(const Caller& who, const std::string& owner) { return who.admin || who.user == owner; }

}  // namespace phalanx::service
