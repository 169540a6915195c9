// PartSupervisor: the job parts running on this node, driven by one Boost.Asio io_context.
//
// For each part it watches the keeper (pidfd, or polling /proc where pidfd_open is refused),
// enforces the walltime (SIGTERM to the group, then SIGKILL after the walltime grace, reason
// "walltime"), carries out stops (Stop: TERM, KILL after a grace) and signals, and polls the
// checkpoint file (checkpoint_file.h), reporting each change. When a keeper exits, the part's
// wait status comes from the keeper's exit file and is reported once through on_end:
//   exited normally: exit_code = status, term_signal 0; killed: exit_code -1, term_signal = sig;
//   reason = the stop reason if the agent was stopping it ("walltime", "killed"), else "exited";
//   "agent gone: ..." when the keeper took the job down because no agent was there for the
//   orphan grace (LauncherOptions::orphan_grace); no exit file (the keeper itself was killed):
//   exit_code -1, reason "lost: ...".
// An ended part keeps its record and files until Forget (once the daemon stored its exit).
//
// GPU handoff: the daemon may launch a part on GPUs whose previous part (a preempted, killed or
// cancelled one) is still in its kill grace here. A launch whose GPU indices overlap those of an
// earlier part that has not ended waits ("earlier": running parts, then waiting parts in the
// order they arrived); it starts, in arrival order, once every such part has ended. A waiting
// part is listed by Running() with pid 0 and is dropped by Stop (reported through on_end with
// exit_code -1, term_signal 0 and the stop reason). A waiting launch that then fails to start is
// reported through on_end as exit_code 127, reason "launch failed: <why>". Launch() may be
// given an opaque blob describing the launch, kept in the state dir while it waits
// (PendingLaunches) so that a restarted agent can queue it again.
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
#include <string_view>
#include <utility>
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
  int exit_code = 0;  // -1 when killed by a signal (or lost)
  int term_signal = 0;
  std::string reason;  // "exited", "walltime", "killed", "agent gone: ...", "lost: ..."
};

struct CheckpointSeen {
  JobId job_id = kNoJob;
  LaunchId launch_id = 0;
  uint64_t epoch = 0;  // 0: the next one
  std::string path;
};

struct PartInfo {
  JobId job_id = kNoJob;
  LaunchId launch_id = 0;
  pid_t pid = 0;  // 0: waits for its GPUs (see above)
  bool suspended = false;
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

  // Launches and watches, or queues the launch while an earlier part holds one of its GPUs
  // (then pid 0 is returned, and `pending_blob`, when not empty, is saved until the part starts
  // or is dropped). Fails on a launch id it already knows, or as Launcher::Launch does (nothing
  // is then left behind and on_end is not called).
  Result<PartInfo> Launch(const LaunchSpec& spec, std::string_view pending_blob = {});

  // Sends `sig` to the process group of running parts of the job: of launch `launch`, or with
  // launch 0 those the agent is not stopping (every running part of the job when it is stopping
  // all of them: a part being stopped belongs to an earlier launch when a newer one is here).
  // With checkpoint, sig 0 means the part's checkpoint signal. Fails when no such part runs.
  Status Signal(JobId job, LaunchId launch, int sig, bool checkpoint);

  // scontrol suspend / resume: SIGSTOP (resume: SIGCONT) to the process group of each running
  // part of the job that is not being stopped (of launch `launch`; 0: every launch), recorded in
  // its state file. A suspended part's walltime clock is stopped: resuming extends its walltime
  // by the time it was suspended (also across an agent restart). Suspending a suspended part,
  // or resuming a running one, sends the signal again and changes nothing else. Fails when no
  // such part runs.
  Status Suspend(JobId job, LaunchId launch, bool resume);

  // SIGTERM (and SIGCONT) now, SIGKILL after `grace` (at once when 0), to each running part of
  // the job of launch `launch` (0: of every launch); waiting ones are dropped. A second Stop can
  // only shorten the grace. Returns how many parts it stops or drops.
  size_t Stop(JobId job, LaunchId launch, std::chrono::milliseconds grace, const std::string& reason);

  // Started and waiting parts (the latter with pid 0). With include_unreported, also ended parts
  // not forgotten yet (their exit is not known to be stored by the daemon): a registration lists
  // them so that a restarted daemon keeps tracking them until the re-sent PartExited arrives,
  // instead of declaring them lost and failing a job that exited 0.
  std::vector<PartInfo> Running(bool include_unreported = false) const;
  // True for a launch id it watches, queues or still holds (ended, not forgotten).
  bool Knows(LaunchId launch) const { return parts_.count(launch) > 0; }

  // Drops an ended part and deletes its record and files (the daemon stored its end). No-op
  // otherwise.
  void Forget(LaunchId launch);

  // The blobs of launches that were waiting when the previous agent stopped, by launch id. The
  // owner passes them to Launch again (after Adopt) or drops them with DropPending.
  std::vector<std::pair<LaunchId, std::string>> PendingLaunches() const { return state_.LoadPending(); }
  void DropPending(LaunchId launch) const { state_.RemovePending(launch); }

 private:
  struct Part;
  // Starts a part (new or waiting) through the launcher; fills its record.
  Status Start(Part& part, const LaunchSpec& spec);
  // Non-ended parts started or queued before `part` that share one of its GPUs.
  std::vector<std::shared_ptr<Part>> Blockers(const Part& part) const;
  // Starts the waiting parts nothing blocks any more, in arrival order.
  void StartWaiting();
  // Marks the part ended and reports it through on_end.
  void Finish(const std::shared_ptr<Part>& part, const PartEnd& end);
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
  uint64_t next_seq_ = 1;  // arrival order of launches (adopted parts: 0, the earliest)
  std::unique_ptr<boost::asio::steady_timer> tick_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // handlers hold a weak_ptr to it
};

}  // namespace phalanx::agent
