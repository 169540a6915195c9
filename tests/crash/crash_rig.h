// The rig of the daemon crash tests: phalanxd (gen:demo: 4 nodes x 8 GPUs) and one
// phalanx-agent per node as real processes in a temporary directory (config, token, store,
// logs, agents' state dirs; removed unless PHALANX_CRASH_KEEP is set), the job processes they
// start (`sleep`, tagged with the rig's CRASH_TAG) read from /proc, and the job specs the tests
// submit. Spawn and CrashRig's Start* fork: call them from the main thread only (the children
// die with the thread that forked them).
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::crash_test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kNodes = 4;
constexpr int kGpusPerNode = 8;

std::string ReadFile(const std::string& path);

// The end of a file (a log), for failure messages.
std::string Tail(const std::string& path, size_t bytes = 3000);

// A free TCP port on the loopback; 0 when none was found.
int FreeTcpPort();

// fork + exec with stdout/stderr appended to `log`. The child dies with the forking thread
// (PR_SET_PDEATHSIG), so nothing outlives a crashed test; call from the main thread only.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log);

// ---- job processes, read from /proc ---------------------------------------------------------

struct JobProc {
  pid_t pid = 0;
  uint64_t job = 0, launch = 0;
  std::string node;
  std::string gpus;  // CUDA_VISIBLE_DEVICES
  char state = '?';  // from /proc/PID/stat
  uint64_t start = 0;
};

// Every live (non-zombie) process whose environment carries our tag.
std::vector<JobProc> ScanJobs(const std::string& tag);

// `p` is still alive and the same process (not a reused pid).
bool StillSame(const JobProc& p);

std::vector<std::string> SplitComma(const std::string& s);

// ---- the rig ---------------------------------------------------------------------------------

class CrashRig {
 public:
  CrashRig();
  ~CrashRig();

  void StartDaemon();
  // SIGKILL and reap; a daemon that already exited on its own is a failure.
  void KillDaemon();
  void StartAgent(int n);
  void StopAgent(int n);
  // A connection to phalanxd's socket that reconnects quickly after a restart.
  std::shared_ptr<grpc::Channel> Channel() const;

  std::string dir, tag, socket, db, user = "root";
  int port = 0;
  pid_t daemon = -1;
  pid_t agents[kNodes] = {-1, -1, -1, -1};
};

// A uniquely named `sleep` job of a random size (mostly 1-8 GPUs, sometimes a 2-node gang),
// tagged with `tag` and `slot` in its environment.
v1::JobSpec MakeSpec(const std::string& name, uint64_t slot, const std::string& tag, const std::string& dir,
                     std::mt19937_64& rng);

}  // namespace phalanx::crash_test
