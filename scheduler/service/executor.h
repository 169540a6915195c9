// Executor: what carries out the core's decisions on the machines -- starts a job's parts,
// signals them, stops them -- and tells the Controller what became of them (ExecutorHost).
// AgentExecutor (a phalanx-agent on every node, agent_executor.h) is the first; a Slurm
// executor can sit beside it behind the same interface.
//
// Contract:
//  1. Every call is made on the io thread, for a decision or user event whose batch has
//     committed (write-ahead): the core already counts the job as started, stopped, resized.
//  2. StartJob: the job runs on `gpus` under `launch_id` (new and increasing). Its record and
//     launch info are read from the host; a job that no longer runs by then is not started.
//  3. RestartJob (a resize): the job's parts are stopped and, once all have exited, it starts
//     under `launch_id` on the GPUs the core gives it then (a running process cannot change its
//     world size); a job with no parts running starts on `gpus` at once.
//  4. StopJob: the job's parts are stopped; what they report afterwards is ignored (the core
//     has moved on: preempted, killed, cancelled).
//  5. SignalJob: every part of the job's current launch gets `signal`; with a checkpoint
//     deadline it is the checkpoint signal (a part reports the checkpoint it writes).
//  6. SuspendJob (only where CanSuspend): every part of the job's current launch is stopped
//     (SIGSTOP; `resume`: SIGCONT) and its local walltime clock paused (resumed, extended by the
//     time suspended); the job keeps its GPUs. The executor repeats it to parts of a suspended
//     job that it finds again (an agent registering).
//  7. What happens later reaches the host on the io thread, never from inside StartJob,
//     RestartJob, StopJob or SignalJob: a job whose parts have all ended, a checkpoint, a node
//     whose availability changed.
// Thread-safety: io thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/sched/scheduler.h"
#include "service/launch_book.h"
#include "service/reply.h"

namespace phalanx::service {

// Whether a node can take work, as its executor sees it.
enum class NodeAvailability : uint8_t {
  kAvailable,    // its agent is there
  kUnconfirmed,  // after a restart: jobs run there and its agent is not back yet (drained)
  kAway,         // no agent (down)
};

struct NodeReport {
  NodeAvailability availability = NodeAvailability::kAway;
  bool connected = false;  // a stream to the node is open
  Time last_report = 0;    // Unix seconds of its agent's last report; 0: none yet
};

// A job another scheduler runs on the executor's nodes (the Slurm mode: a job Slurm schedules
// itself), as that scheduler reports it: for users' listings (gq, ginfo, phalanx job show).
struct ForeignJob {
  uint32_t id = 0;  // the other scheduler's job id
  std::string name, user;
  uint32_t uid = 0;
  std::string state;     // the other scheduler's name for it: PENDING, RUNNING, ...
  bool running = false;  // holds nodes (running, suspended, completing)
  std::string reason;    // why it waits (pending)
  std::string partition;
  std::vector<std::string> nodes;       // where it runs, in the other scheduler's order
  std::vector<uint32_t> gpus_by_node;   // the GPUs it holds on each of `nodes`
  uint32_t gpus = 0, node_count = 0;    // asked for (pending) or held (running)
  Time submit = 0, start = 0, end = 0;  // start/end: actual or expected
  Duration time_limit = 0;              // 0: none
};

// The Controller, as an executor sees it.
class ExecutorHost {
 public:
  virtual ~ExecutorHost() = default;
  virtual const Scheduler& core() const = 0;
  // An unfinished job's launch info; null when there is none.
  virtual const LaunchInfo* launch_info(JobId job) const = 0;
  // OK, or why phalanxd does not serve any more (stopping, or its store failed).
  virtual CallStatus Serving() const = 0;
  // Unix seconds, never going back.
  virtual Time Now() = 0;
  // Runs `then` on the io thread once every batch the host has written so far has committed
  // (what an executor reported before this call is durable); at once when none is in flight.
  // Never when a commit fails (the daemon stops; a restart recovers from the last commit).
  virtual void AfterStored(std::function<void()> then) = 0;

  // Every part of the job's launch has ended: `success` iff each exited 0; else `exit_code`
  // and `reason` are the first failure's.
  virtual void JobPartsEnded(JobId job, bool success, int32_t exit_code, const std::string& reason) = 0;
  // A part of the job is gone without an exit (its node registered without it: a launch never
  // delivered, or a node that lost it): the job is requeued, as on a node failure
  // (Scheduler::JobLost); the next pass stops its other parts.
  virtual void JobLost(JobId job, const std::string& reason) = 0;
  // A part of the job wrote checkpoint `epoch` (0: the one after the job's last) at `path`.
  virtual void CheckpointReported(JobId job, uint64_t epoch, const std::string& path, const std::string& node) = 0;
  // The node's NodeReport::availability may have changed (`why`, for the log and the store).
  virtual void NodeAvailabilityChanged(const std::string& node, const std::string& why) = 0;
  // GPUs of `node` busy with work the core does not place (the Slurm mode's unmanaged jobs),
  // one piece per job: its GPUs until its own end; none: no load. Replaces the node's previous
  // load. Returns the GPUs the core took (fewer when its own jobs hold the rest;
  // Scheduler::SetExternalLoad).
  virtual uint32_t SetExternalLoad(const std::string& node, const std::vector<Scheduler::ExternalPiece>& pieces) = 0;
  // Replaces the core's partitions (the Slurm mode: Slurm's, when they change;
  // Scheduler::SetPartitions). Fails as that does (the partitions stay as they were).
  virtual Status SetPartitions(std::vector<PartitionConfig> partitions) = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;

  // Before Start: the host to read from and report to.
  virtual void Attach(ExecutorHost* host) = 0;
  // Before Start, after a restart: the job runs on `gpus` as the store says (its launch is
  // learnt from what the machines report).
  virtual void AdoptJob(JobId job, const std::vector<GpuId>& gpus) = 0;
  // Timers and connections; Stop closes them (no report reaches the host after it).
  virtual void Start() = 0;
  virtual void Stop() = 0;

  virtual void StartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) = 0;
  virtual void RestartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) = 0;
  virtual void StopJob(JobId job, const std::string& reason) = 0;
  virtual void SignalJob(JobId job, int32_t signal, std::optional<Time> checkpoint_deadline) = 0;
  // Whether SuspendJob works here (the Slurm executor: no; scontrol suspend is Slurm's own).
  virtual bool CanSuspend() const { return false; }
  virtual void SuspendJob(JobId /*job*/, bool /*resume*/) {}

  virtual NodeReport node(const std::string& name) const = 0;
  // Nodes with an open connection (for /metrics).
  virtual size_t connected_nodes() const = 0;
  // Jobs another scheduler runs beside the core's (the Slurm mode's own jobs), as last seen;
  // none by default.
  virtual const std::vector<ForeignJob>& foreign_jobs() const {
    static const std::vector<ForeignJob> kNone;
    return kNone;
  }
  // Those running on `node`: (job id, GPUs there); none by default.
  virtual const std::vector<std::pair<uint32_t, uint32_t>>& foreign_on_node(const std::string& node) const {
    (void)node;
    static const std::vector<std::pair<uint32_t, uint32_t>> kNone;
    return kNone;
  }
  // The other scheduler's id of a core job (the Slurm mode's Slurm job id); 0: none.
  virtual uint32_t foreign_id(JobId job) const {
    (void)job;
    return 0;
  }
  // The core job of the other scheduler's job `id`; kNoJob when none.
  virtual JobId core_job_of(uint32_t id) const {
    (void)id;
    return kNoJob;
  }
};

}  // namespace phalanx::service
