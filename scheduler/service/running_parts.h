// RunningParts: the launched parts of the jobs an executor runs -- one part per node of a
// launch -- and what became of each: queued (waiting for a connection to its node), sent,
// running (confirmed by the node), exited. A job's parts end together: the first failure is
// the job's (the others are then stopped); a resize stops every part and launches anew once all
// have exited. Pure bookkeeping: it answers what the AgentExecutor must do and does no I/O.
// Thread-safety: none (the io thread's).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/common/ids.h"

namespace phalanx::service {

// A part as a node reports it: which job, which launch of it.
struct PartRef {
  JobId job = kNoJob;
  uint64_t launch_id = 0;
};

class RunningParts {
 public:
  enum class PartState : uint8_t { kQueued, kSent, kRunning, kExited };
  struct Part {
    std::string node;
    PartState state = PartState::kQueued;
    int32_t exit_code = 0;
  };
  struct Launch {
    uint64_t launch_id = 0;  // 0: adopted after a restart, not known until a node reports it
    std::vector<Part> parts;
    bool failed = false;    // a part failed: the others were told to stop
    int32_t exit_code = 0;  // the first failure's
    std::string fail_reason;
    // Resize: the parts are stopping; when all have exited, launch `relaunch_id` on the GPUs
    // the job has then.
    bool restarting = false;
    uint64_t relaunch_id = 0;
    // The PartExited reports of this launch, by node: each is answered (ExitStored) once the
    // launch's outcome is stored, or once the launch is no longer tracked (stopped, replaced).
    std::vector<std::pair<std::string, PartRef>> reported;
  };

  // After a restart: the job runs on `nodes` (sent, launch unknown).
  void Adopt(JobId job, const std::vector<std::string>& nodes);
  // A new launch of the job, replacing whatever was tracked for it.
  void Launched(JobId job, Launch launch) { jobs_[job] = std::move(launch); }
  Launch* Find(JobId job);
  void Forget(JobId job) { jobs_.erase(job); }
  // The jobs whose parts are stopping for a resize.
  std::vector<JobId> Restarting() const;

  // What a node that registers again lists, against what is tracked there.
  struct Reconciled {
    std::vector<PartRef> stale;  // an older launch of a job that runs there: stop that launch
    std::vector<JobId> unknown;  // jobs not run there: the node kills them (in listed order)
    std::vector<JobId> lost;     // tracked as sent or running there, not listed: lost
  };
  // Parts of the current launch (or of an adopted one, which learns its id) become running; a
  // listed part of the current launch whose exit was already handled is neither (an agent lists
  // an ended part until its ExitStored).
  Reconciled Reconcile(const std::string& node, const std::vector<PartRef>& listed);
  // A node says it runs `part`: true when it is the job's current launch there (an adopted
  // launch learns its id); false: the node must stop it.
  bool Owns(const std::string& node, const PartRef& part);
  // Whether an exit of `part` concerns the launch tracked for its job.
  bool Tracks(const PartRef& part) const;
  // The job's part on `node` exited with `code` (non-zero: failed, `reason`). True when that is
  // the launch's first failure: the caller stops the other parts.
  bool PartExited(JobId job, const std::string& node, int32_t code, const std::string& reason);
  // Queued parts of the job on `node` were delivered.
  void Delivered(const std::string& node, JobId job);
  // The job's part on `node` is gone without an exit (the node registered without it): it
  // counts as exited (-1) and fails nothing (the job is requeued). False when not tracked.
  bool PartLost(JobId job, const std::string& node);
  // The node is gone: its parts count as exited (-1).
  void NodeLost(const std::string& node);
  // Every part of the job's launch has exited (false when the job is not tracked).
  bool AllExited(JobId job) const;

 private:
  std::map<JobId, Launch> jobs_;
};

}  // namespace phalanx::service
