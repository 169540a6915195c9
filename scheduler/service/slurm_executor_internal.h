// Helpers shared by slurm_executor.cc (acting on the core's decisions) and
// slurm_executor_sync.cc (taking Slurm's state into the core). Internal to SlurmExecutor.
#pragma once

#include <pwd.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/slurm/slurm_adapter.h"
#include "core/sched/scheduler.h"
#include "util/printable.h"

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

// A job comment Phalanx writes into Slurm, which squeue and scontrol show other users: one line
// with no control character (Printable: reasons carry partition names and the job's own fields),
// at most kMaxSlurmComment bytes (cut at a character boundary, ending in '+').
inline constexpr size_t kMaxSlurmComment = 1000;
inline std::string SlurmComment(std::string_view text) {
  std::string c = Printable(text);
  if (c.size() <= kMaxSlurmComment) return c;
  size_t cut = kMaxSlurmComment - 1;
  while (cut > 0 && (static_cast<unsigned char>(c[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  c.resize(cut);
  return c + "+";
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
