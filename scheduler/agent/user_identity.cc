#include "agent/user_identity.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace phalanx::agent {
namespace {

struct PasswdEntry {
  std::string name, home, shell;
};

// nullopt-like: found=false when there is no entry.
bool LookupUid(uid_t uid, PasswdEntry* out) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  while (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == ERANGE && buf.size() < (1u << 20)) {
    buf.resize(buf.size() * 2);
  }
  if (found == nullptr) return false;
  out->name = pw.pw_name;
  out->home = pw.pw_dir != nullptr ? pw.pw_dir : "";
  out->shell = pw.pw_shell != nullptr ? pw.pw_shell : "";
  return true;
}

std::vector<gid_t> GroupsOf(const std::string& name, gid_t gid) {
  int n = 32;
  std::vector<gid_t> groups(n);
  while (getgrouplist(name.c_str(), gid, groups.data(), &n) == -1 && n > static_cast<int>(groups.size())) {
    groups.resize(n);
  }
  groups.resize(std::max(n, 0));
  return groups;
}

}  // namespace

Result<JobIdentity> ResolveJobIdentity(uid_t uid, gid_t gid, std::string_view requested_name,
                                       const IdentityPolicy& policy, uid_t agent_euid) {
  const std::string where = "uid " + std::to_string(uid);
  if (uid == 0 && !policy.allow_root_jobs) {
    return Fail(where, "refusing to run a job as root (start the agent with --allow-root-jobs to permit it)");
  }
  JobIdentity id;
  id.uid = uid;
  id.gid = gid;
  id.switch_user = agent_euid == 0;
  if (!id.switch_user && uid != agent_euid) {
    return Fail(where, "the agent runs as uid " + std::to_string(agent_euid) +
                           " (not root) and can only start jobs as that uid");
  }
  PasswdEntry pw;
  if (LookupUid(uid, &pw)) {
    id.name = pw.name;
    id.home = pw.home.empty() ? "/" : pw.home;
    id.shell = pw.shell.empty() ? "/bin/sh" : pw.shell;
  } else if (id.switch_user && uid != 0) {
    return Fail(where, "no passwd entry for this uid on this node");
  } else {
    id.name = requested_name.empty() ? std::to_string(uid) : std::string(requested_name);
    id.home = "/";
    id.shell = "/bin/sh";
  }
  if (id.switch_user) id.groups = GroupsOf(id.name, gid);
  return id;
}

}  // namespace phalanx::agent
