#include "agent/proc_util.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace phalanx::agent {
namespace {

// The fields after "pid (comm) ": comm may hold spaces and parentheses, so split after the
// last ')'. fields[0] is the state (field 3).
bool StatFields(pid_t pid, std::vector<std::string>* fields) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 1));
  fields->clear();
  for (std::string f; rest >> f;) fields->push_back(f);
  return fields->size() > 19;
}

}  // namespace

uint64_t ProcStartTicks(pid_t pid) {
  std::vector<std::string> fields;
  if (!StatFields(pid, &fields)) return 0;
  return std::strtoull(fields[19].c_str(), nullptr, 10);  // field 22
}

char ProcState(pid_t pid) {
  std::vector<std::string> fields;
  if (!StatFields(pid, &fields) || fields[0].empty()) return 0;
  return fields[0][0];
}

std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

Status SignalGroup(pid_t pgid, int sig) {
  if (pgid <= 1) return Fail("pgid " + std::to_string(pgid), "refusing to signal this process group");
  if (kill(-pgid, sig) == 0) return {};
  return Fail("kill -" + std::to_string(pgid), std::strerror(errno));
}

bool GroupExists(pid_t pgid) { return pgid > 1 && (kill(-pgid, 0) == 0 || errno == EPERM); }

int OpenPidfd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace phalanx::agent
