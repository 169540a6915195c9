// Small Linux process helpers for the agent: process identity across pid reuse (the start time
// in /proc/<pid>/stat plus the boot id), process-group signals, pidfds.
// Thread-safety: thread-safe (system calls and /proc reads only).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/common/result.h"

namespace phalanx::agent {

// Field 22 of /proc/<pid>/stat (clock ticks after boot); 0 when the process does not exist.
// A zombie still has one. (pid, start ticks, boot id) names a process for good.
uint64_t ProcStartTicks(pid_t pid);

// State letter of /proc/<pid>/stat ('R', 'S', 'Z', ...); 0 when the process does not exist.
char ProcState(pid_t pid);

// /proc/sys/kernel/random/boot_id, "" when unreadable.
std::string BootId();

// kill(-pgid, sig). Fails with the errno text (ESRCH: "no such process group").
Status SignalGroup(pid_t pgid, int sig);

// True while any process (zombies included) is in the group.
bool GroupExists(pid_t pgid);

// pidfd_open(pid, 0): readable once the process has exited. -1 (errno set) when unsupported
// or the process is gone.
int OpenPidfd(pid_t pid);

// "SIGTERM"-style name of a signal number ("signal 42" when unnamed).
std::string SignalName(int sig);

}  // namespace phalanx::agent
