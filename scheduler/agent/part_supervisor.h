// PartSupervisor: the job parts running on this node, driven by one Boost.Asio io_context.
//
// For each part it watches the keeper (pidfd, or polling /proc where pidfd_open is refused),
// enforces the walltime (SIGTERM to the group, then SIGKILL after the walltime grace, reason
// "walltime"), carries out stops (Stop: TERM, KILL after a grace) and signals, and polls the
// checkpoint file (checkpoint_file.h), reporting each change. When a keeper exits, the part's
// wait status comes from the keeper's exit file and is reported once through on_end:
//   exited normally: exit_code = status, term_signal 0; killed: exit_code -1, term_signal = sig;
//   reason = the stop reason if the agent was stopping it ("walltime", "killed"), else "exited";
//   no exit file (the keeper itself was killed): exit_code -1, reason "lost: ...".
// An ended part keeps its files until Forget (after its report reached the daemon).
//
// Parts outlive the agent: Adopt() (at start) re-reads the state dir, watches the parts whose
// keeper is still the recorded process (same boot id, pid, start ticks) and reports, through
// on_end, those that ended while no agent watched.
// Thread-safety: not thread-safe. Construct, call and destroy on the io_context's thread;
// callbacks run there too. Destroying it stops watching; the parts keep running.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/launcher.h"
#include "agent/part_state_dir.h"
#include "core/common/result.h"

namespace phalanx::agent {

struct PartEnd {
  JobId job_id = kNoJob;
  LaunchId launch_id = 0;
  int exit_code = 0;        // -1 when killed by a signal (or lost)
  int term_signal = 0;
  std::string reason;       // "exited", "walltime", "killed", "lost: ..."
};

struct CheckpointSeen {
  JobId job_id = kNoJob;
  LaunchId launch_id = 0;
  uint64_t epoch = 0;       // 0: the next one
  std::string path;
};

struct PartInfo {
  JobId job_id = kNoJob;
  LaunchId launch_id = 0;
  pid_t pid = 0;
};

struct SupervisorOptions {
  std::chrono::milliseconds walltime_grace{30'000};  // SIGTERM -> SIGKILL at the walltime
  std::chrono::milliseconds poll_interval{1'000};    // checkpoint files (and keepers without pidfd)
};

class PartSupervisor {
 public:
  struct Callbacks {
    std::function<void(const PartEnd&)> on_end;
    std::function<void(const CheckpointSeen&)> on_checkpoint;
  };

  PartSupervisor(boost::asio::io_context& io, Launcher launcher, PartStateDir state, SupervisorOptions options,
                 Callbacks callbacks);
  ~PartSupervisor();
  PartSupervisor(const PartSupervisor&) = delete;
  PartSupervisor& operator=(const PartSupervisor&) = delete;

  // See above. Unreadable records are logged and left alone.
  void Adopt();

  // Launches and watches. Fails on a launch id it already knows, or as Launcher::Launch does
  // (nothing is then left behind and on_end is not called).
  Result<PartInfo> Launch(const LaunchSpec& spec);

  // Sends `sig` to the process group of each running part of the job. With checkpoint, sig 0
  // means the part's checkpoint signal. Fails when no part of the job runs here.
  Status Signal(JobId job, int sig, bool checkpoint);

  // SIGTERM (and SIGCONT) to each running part of the job now, SIGKILL after `grace` (at once
  // when 0). A second Stop can only shorten the grace. Returns how many parts it stops.
  size_t Stop(JobId job, std::chrono::milliseconds grace, const std::string& reason);

  std::vector<PartInfo> Running() const;
  // True for a launch id it watches or still holds (ended, not forgotten).
  bool Knows(LaunchId launch) const { return parts_.count(launch) > 0; }

  // Drops an ended part and deletes its files (its end reached the daemon). No-op otherwise.
  void Forget(LaunchId launch);

 private:
  struct Part;
  void Watch(const std::shared_ptr<Part>& part);
  void ArmWalltime(const std::shared_ptr<Part>& part);
  void StopPart(const std::shared_ptr<Part>& part, std::chrono::milliseconds grace, const std::string& reason);
  void OnKeeperExit(const std::shared_ptr<Part>& part);
  void ProbeCheckpoint(Part& part);
  void Tick();
  void Save(const Part& part);
  template <typename F>
  auto Guard(const std::shared_ptr<Part>& part, F f);

  boost::asio::io_context& io_;
  Launcher launcher_;
  PartStateDir state_;
  SupervisorOptions options_;
  Callbacks callbacks_;
  std::map<LaunchId, std::shared_ptr<Part>> parts_;
  std::unique_ptr<boost::asio::steady_timer> tick_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // handlers hold a weak_ptr to it
};

}  // namespace phalanx::agent
