#include "agent/child_program.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <ctime>

namespace phalanx::agent {
namespace {

// --- async-signal-safe helpers (no allocation, no locks) ---

void WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= static_cast<size_t>(n);
  }
}

[[noreturn]] void Die(int report_fd, ChildStep step, int err) {
  char record[6] = {'E', static_cast<char>(step), 0, 0, 0, 0};
  static_assert(sizeof(int) == 4);
  __builtin_memcpy(record + 2, &err, 4);
  WriteAll(report_fd, record, sizeof record);
  _exit(127);
}

void SetCloexecFrom3(long max_fd) {
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  for (int fd = 3; fd < max_fd; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
}

void CloseFrom3(long max_fd) {
  if (close_range(3, ~0U, 0) == 0) return;
  for (int fd = 3; fd < max_fd; ++fd) close(fd);
}

void SetDefaultSignals() {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &sa, nullptr);  // glibc-reserved ones fail: fine
  }
}

// The keeper ignores what an admin or a terminal might send the agent's name; SIGCHLD stays at
// its default (ignoring it would auto-reap the job and lose its status).
void IgnoreStopSignals() {
  SetDefaultSignals();
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM}) sigaction(sig, &sa, nullptr);
}

int OpenOnto(const char* path, int flags, int target) {
  const int fd = open(path, flags, 0644);
  if (fd < 0) return -1;
  if (fd != target) {
    if (dup2(fd, target) < 0) return -1;
    close(fd);
  }
  return 0;
}

// The job: own process group, default signals, the user's identity, cwd, stdio, exec.
[[noreturn]] void RunJob(const ChildProgram& p, int report_fd) {
  if (setpgid(0, 0) < 0) Die(report_fd, ChildStep::kSetpgid, errno);
  SetDefaultSignals();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  umask(p.umask);
  if (p.switch_user) {
    if (setgroups(p.groups.size(), p.groups.data()) < 0) Die(report_fd, ChildStep::kSetgroups, errno);
    if (setgid(p.gid) < 0) Die(report_fd, ChildStep::kSetgid, errno);
    if (setuid(p.uid) < 0) Die(report_fd, ChildStep::kSetuid, errno);
  }
  if (chdir(p.working_dir.c_str()) < 0) Die(report_fd, ChildStep::kChdir, errno);
  if (OpenOnto("/dev/null", O_RDONLY, 0) < 0) Die(report_fd, ChildStep::kStdin, errno);
  const int out_flags = O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | (p.truncate_output ? O_TRUNC : 0);
  if (OpenOnto(p.stdout_path.c_str(), out_flags, 1) < 0) Die(report_fd, ChildStep::kStdout, errno);
  if (p.stderr_path.empty()) {
    if (dup2(1, 2) < 0) Die(report_fd, ChildStep::kStderr, errno);
  } else if (OpenOnto(p.stderr_path.c_str(), out_flags, 2) < 0) {
    Die(report_fd, ChildStep::kStderr, errno);
  }
  SetCloexecFrom3(p.max_fd);
  int err = ENOENT;
  for (const std::string& candidate : p.exec_candidates) {
    execve(candidate.c_str(), p.argv_ptrs.data(), p.envp_ptrs.data());
    if (errno == EACCES || err != EACCES) err = errno;  // like execvp: EACCES sticks
    if (errno != ENOENT && errno != ENOTDIR && errno != EACCES) break;
  }
  Die(report_fd, ChildStep::kExec, err);
}

int64_t MonotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// An agent holds an exclusive flock on `lock` for as long as it lives; a shared probe that
// would block means one does. Only a missing file counts as "no agent": any other failure to
// look (out of descriptors, ...) counts as present, so that doubt never kills a job.
bool AgentPresent(const char* lock) {
  const int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno != ENOENT;
  const bool held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
  close(fd);  // releases the probe's shared lock at once
  return held;
}

// What the keeper does while its agent is gone (ChildProgram::orphan_grace_ms): after the grace
// without an agent, SIGTERM (and SIGCONT) to the job's group, SIGKILL after the kill grace. An
// agent that comes back before the grace ends resets it; once begun, the stop is carried out.
struct OrphanWatch {
  int64_t absent_since = -1;  // -1: the agent is there
  int64_t kill_at = -1;       // -1: not stopping
  bool taken_down = false;

  // Returns how long the keeper may sleep before the next look.
  int64_t Look(const ChildProgram& p, pid_t job) {
    const int64_t poll = p.orphan_grace_ms < 4000 ? std::max<int64_t>(p.orphan_grace_ms / 4, 20) : 1000;
    const int64_t now = MonotonicMs();
    if (taken_down) {
      if (kill_at >= 0 && now >= kill_at) {
        kill(-job, SIGKILL);
        kill_at = -1;
      }
      return kill_at >= 0 ? std::min<int64_t>(kill_at - now, poll) : poll;
    }
    if (AgentPresent(p.agent_lock.c_str())) {
      absent_since = -1;
      return poll;
    }
    if (absent_since < 0) absent_since = now;
    if (now - absent_since < p.orphan_grace_ms) return std::min<int64_t>(poll, absent_since + p.orphan_grace_ms - now);
    taken_down = true;
    kill(-job, SIGTERM);
    kill(-job, SIGCONT);  // a stopped job must run to see the SIGTERM
    if (p.orphan_kill_ms <= 0) {
      kill(-job, SIGKILL);
    } else {
      kill_at = now + p.orphan_kill_ms;
    }
    return std::min<int64_t>(poll, std::max<int64_t>(p.orphan_kill_ms, 1));
  }
};

// Waits for the job, reaping any orphaned descendant handed to us (we are their subreaper), and
// watching the agent when asked to (SIGCHLD is blocked in the keeper: sigtimedwait sleeps until
// a child changes state or the next look at the agent is due).
int WaitJob(const ChildProgram& p, pid_t job, OrphanWatch* watch) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  const bool watching = !p.agent_lock.empty() && p.orphan_grace_ms > 0;
  for (;;) {
    siginfo_t si{};
    if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT | (watching ? WNOHANG : 0)) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (si.si_pid == job) break;
    if (si.si_pid != 0) {
      waitpid(si.si_pid, nullptr, 0);
      continue;
    }
    const int64_t sleep_ms = std::max<int64_t>(watch->Look(p, job), 1);
    const timespec timeout{static_cast<time_t>(sleep_ms / 1000), static_cast<long>(sleep_ms % 1000) * 1'000'000};
    sigtimedwait(&chld, nullptr, &timeout);  // a SIGCHLD, the timeout or EINTR: look again
  }
  kill(-job, SIGKILL);  // the job's leader is gone (a zombie still holding the pid): end its group
  int status = 0;
  while (waitpid(job, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  for (int i = 0; i < 400; ++i) {  // up to 2 s for the killed members to die and be reaped
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (kill(-job, 0) < 0 && errno == ESRCH) break;
    const timespec ts{0, 5'000'000};
    nanosleep(&ts, nullptr);
  }
  return status;
}

// "STATUS\n", or "STATUS agent-gone GRACE_MS\n" when the keeper took the job down because its
// agent was gone (PartStateDir::ReadExitStatus reads both).
void WriteExitFile(const ChildProgram& p, int status, bool agent_gone) {
  char buf[64];
  int n = 0;
  if (status < 0) {
    buf[n++] = '-', buf[n++] = '1';
  } else {
    char digits[12];
    int d = 0;
    unsigned v = static_cast<unsigned>(status);
    do {
      digits[d++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v > 0);
    while (d > 0) buf[n++] = digits[--d];
  }
  if (agent_gone) {
    for (const char* s = " agent-gone "; *s != 0; ++s) buf[n++] = *s;
    char digits[20];
    int d = 0;
    uint64_t v = static_cast<uint64_t>(std::max<int64_t>(p.orphan_grace_ms, 0));
    do {
      digits[d++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v > 0);
    while (d > 0) buf[n++] = digits[--d];
  }
  buf[n++] = '\n';
  const int fd = open(p.exit_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  WriteAll(fd, buf, static_cast<size_t>(n));
  fsync(fd);
  close(fd);
  rename(p.exit_tmp.c_str(), p.exit_file.c_str());
}

}  // namespace

void ChildProgram::Finalize() {
  argv_ptrs.clear();
  for (std::string& a : argv) argv_ptrs.push_back(a.data());
  argv_ptrs.push_back(nullptr);
  envp_ptrs.clear();
  for (std::string& e : envp) envp_ptrs.push_back(e.data());
  envp_ptrs.push_back(nullptr);
  const long open_max = sysconf(_SC_OPEN_MAX);
  max_fd = open_max > 0 && open_max < (1 << 20) ? open_max : (1 << 20);
}

std::string ChildProgram::Describe(ChildStep step) const {
  switch (step) {
    case ChildStep::kSetsid: return "setsid";
    case ChildStep::kForkJob: return "fork";
    case ChildStep::kSetpgid: return "setpgid";
    case ChildStep::kSetgroups: return "setgroups";
    case ChildStep::kSetgid: return "setgid " + std::to_string(gid);
    case ChildStep::kSetuid: return "setuid " + std::to_string(uid);
    case ChildStep::kChdir: return "chdir " + working_dir;
    case ChildStep::kStdin: return "open /dev/null";
    case ChildStep::kStdout: return "open stdout " + stdout_path;
    case ChildStep::kStderr: return "open stderr " + stderr_path;
    case ChildStep::kExec: return "exec " + exec_name;
  }
  return "step " + std::to_string(static_cast<int>(step));
}

void RunKeeper(const ChildProgram& p, int report_fd) {
  if (setsid() < 0) Die(report_fd, ChildStep::kSetsid, errno);
  IgnoreStopSignals();  // an admin's `pkill phalanx-agent` must not orphan the part
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);  // taken by sigtimedwait in WaitJob; the job unblocks all
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_NAME, "phalanx-keeper");
  const pid_t job = fork();
  if (job < 0) Die(report_fd, ChildStep::kForkJob, errno);
  if (job == 0) RunJob(p, report_fd);
  setpgid(job, job);  // also done by the job itself; whichever runs first wins
  char record[5] = {'P', 0, 0, 0, 0};
  static_assert(sizeof(pid_t) == 4);
  __builtin_memcpy(record + 1, &job, 4);
  WriteAll(report_fd, record, sizeof record);
  const int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    for (int fd = 0; fd <= 2; ++fd) dup2(null_fd, fd);
  }
  CloseFrom3(p.max_fd);  // the agent's sockets, the report pipe
  OrphanWatch watch;
  const int status = WaitJob(p, job, &watch);
  WriteExitFile(p, status, watch.taken_down);
  _exit(0);
}

}  // namespace phalanx::agent
