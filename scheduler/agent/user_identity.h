// Who a job part runs as. Resolved in the agent before fork (NSS lookups are not safe in a
// forked child of a threaded process), applied in the child with setgroups/setgid/setuid.
//
// Policy:
//   1. uid 0 is refused unless allow_root_jobs.
//   2. An agent running as root switches to uid/gid with the user's supplementary groups
//      (getgrouplist of the passwd name and gid); the uid must have a passwd entry here.
//   3. An agent not running as root can only start parts as its own uid (no switch).
// Thread-safety: thread-safe (getpwuid_r, getgrouplist).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx::agent {

struct JobIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;           // passwd name (falls back to the requested name, then the uid)
  std::string home;           // passwd home ("/" when unknown)
  std::string shell;          // passwd shell ("/bin/sh" when unknown)
  std::vector<gid_t> groups;  // supplementary groups (when switching)
  bool switch_user = false;   // the child must setgroups/setgid/setuid
};

struct IdentityPolicy {
  bool allow_root_jobs = false;
};

// Fails: uid 0 without allow_root_jobs; a uid other than the agent's when the agent is not
// root; a uid without a passwd entry when the agent must switch to it.
Result<JobIdentity> ResolveJobIdentity(uid_t uid, gid_t gid, std::string_view requested_name,
                                       const IdentityPolicy& policy, uid_t agent_euid);

}  // namespace phalanx::agent
