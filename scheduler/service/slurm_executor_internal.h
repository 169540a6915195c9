// Helpers shared by slurm_executor.cc (acting on the core's decisions) and
// slurm_executor_sync.cc (taking Slurm's state into the core). Internal to SlurmExecutor.
#pragma once

#include <pwd.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "adapters/slurm/slurm_adapter.h"
#include "core/sched/scheduler.h"

namespace phalanx::service::slurm_executor_internal {

using slurm::SlurmJob;
using slurm::SlurmJobId;
using slurm::SlurmJobState;
using slurm::SlurmWait;

inline std::string UserName(const SlurmJob& j, uint32_t* gid) {
  *gid = 0;
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(j.uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    *gid = pw.pw_gid;
    return pw.pw_name;
  }
  return j.user.empty() ? "uid:" + std::to_string(j.uid) : j.user;
}

// "2026-12-01T11:30Z": Unix seconds to the minute, UTC.
inline std::string IsoMinute(Time t) {
  const time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%MZ", &tm);
  return buf;
}

inline std::string JoinedNames(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

inline std::string Joined(const std::vector<SlurmJobId>& ids) {
  std::string s;
  for (SlurmJobId id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

}  // namespace phalanx::service::slurm_executor_internal
