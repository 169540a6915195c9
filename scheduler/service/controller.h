// Controller: phalanxd's state and logic. It owns the scheduling core and what goes with it
// (launch info, what was last saved of each job, nodes' admin states, watchers), hands the
// core's decisions to an Executor (the agents) and answers users' calls in core types; the gRPC
// services convert to and from the API (proto_convert.h, api_views.h). It is used by ONE
// thread, the io_context's: gRPC handlers post their work there and finish their reactors from
// there.
//
// Durability order (docs/daemon.md):
//  - A submission is acknowledged after its batch (job row + launch info) committed; only then
//    does the core see the job.
//  - A pass's decisions are applied in the core, written with every job state they changed in
//    ONE batch, and carried out (Executor calls) only when that batch has committed.
//  - User events (cancel, hold, release, drain, ...) answer after their batch committed; what
//    they imply for the executor (a stop) happens then.
//  Commit callbacks come back to the io thread in commit order, so effects happen in the
//  order the core decided them. A failed commit is fatal: the daemon stops (the store is
//  ahead of nothing; a restart recovers from the last commit).
//
// Passes: coalesced (one pending at most, run after what is already queued on the io
// thread), after every event that can change a decision, and every `pass_interval`. A pass
// costs O(unfinished jobs), so requested passes are paced: the next one starts no sooner than
// 5x the last one's duration after it ended (capped at `pass_interval`), which keeps passes
// under about a sixth of the io thread during a stream of submissions (docs/performance.md).
//
// Errors: replies carry the core's Error (its code) or the Controller's own (NOT_FOUND for an
// unknown job, PERMISSION_DENIED, FAILED_PRECONDITION for a job in the wrong state), or
// "not serving" (reply.h).
//
// Files: controller.cc (commits, passes, decisions, executor reports), controller_jobs.cc
// (users' job calls and watches), controller_nodes.cc (admin node states, node states).
// Thread-safety: every method must be called on the io thread, except the constructor and
// the destructor (before the io thread runs / after it stopped).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/store/group_committer.h"
#include "adapters/store/store.h"
#include "core/queue/access.h"
#include "core/sched/scheduler.h"
#include "service/caller.h"
#include "service/clock.h"
#include "service/daemon_config.h"
#include "service/executor.h"
#include "service/launch_book.h"
#include "service/recovery.h"
#include "service/reply.h"
#include "service/store_space.h"

namespace phalanx::service {

struct ControllerOptions {
  double pass_interval_s = 1;
  std::string topology_fingerprint;
  PrivateData private_data;  // what others see of a job (api_views.h)
  AccessRules access;        // who may use which class and charge which account
  // The partitions' service-side options (daemon_config.h), by name: allow lists, default class.
  std::vector<PartitionOptions> partitions;
  // The free-space reserve (store_space.h); null: none. Owned by the daemon, outlives the Controller.
  StoreSpace* store_space = nullptr;
};

// Counters for GetStats and /metrics.
struct ControllerStats {
  uint64_t passes = 0;
  double last_pass_ms = 0;
  uint64_t submitted = 0, started = 0, ended = 0, preempted = 0, killed = 0, resized = 0, checkpoints = 0;
  uint64_t commits = 0;
};

// Hooks for metrics (HttpEndpoints); each may be empty. Called on the io thread.
struct ControllerObserver {
  std::function<void(double seconds)> pass;                         // after each scheduling pass
  std::function<void(const Decision&, const JobRecord*)> decision;  // when carried out
  std::function<void()> submitted;                                  // a submission acknowledged
};

// A user's Watch: which jobs' events it gets.
struct WatchFilter {
  JobId job = kNoJob;         // kNoJob: every job
  std::string user;           // empty: every user's jobs
  bool send_initial = false;  // first the current state of the job (or of every unfinished job)
};

// Where a Watch's events go (the jobs service turns them into the API's JobEvent).
class JobEventSink {
 public:
  virtual ~JobEventSink() = default;
  // `kind`: "submit", "start", "cancel", ... or "state" for an initial state. False when the
  // event was not queued (the watcher is closing or does not keep up).
  virtual bool Send(Time time, std::string_view kind, const JobRecord& job) = 0;
  virtual bool closed() const = 0;
  virtual void Close(const CallError& why) = 0;
};

// A node as users see it.
struct NodeStatus {
  NodeId id;
  NodeAdmin admin;
  NodeReport report;  // the executor's view
};

class Controller final : public ExecutorHost {
 public:
  // `executor` outlives the Controller; the Controller attaches itself to it and gives it the
  // jobs that ran at the restart.
  Controller(boost::asio::io_context& io, Recovered recovered, store::GroupCommitter* committer, store::Store* reader,
             const Clock* clock, ControllerOptions options, Executor* executor,
             std::function<void(const std::string&)> on_fatal);
  ~Controller() override;
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Arms the pass timer, starts the executor; first pass.
  void Start();
  // Cancels timers, stops the executor, closes watches; later mutating calls are unavailable.
  void Stop();

  // ---- users: jobs (controller_jobs.cc) ------------------------------------------------
  // A submission of `spec` (its user set; id and submit time are set here). With
  // launch.spec().array set (Slurm's --array), one job per task: the array takes the next id
  // and its tasks the ids after it, in index order, each with the array's %N; `done` gets the
  // array's id (INVALID_ARGUMENT "spec.array: ..." past the core's max_array_size). Fails: not
  // serving; the core's ValidateSpec, without its "job N" (INVALID_ARGUMENT, also for an
  // unknown dependency; RESOURCE_EXHAUSTED for a pending-job limit, and for the store's
  // free-space reserve, as Hold, Release and Update: store_space.h).
  void Submit(JobSpec spec, LaunchInfo launch, Reply<JobId> done);
  // The access rules for a user's submission (core/queue/access.h): sets the user's default
  // account when the spec names none; PERMISSION_DENIED naming the account or class and the
  // rule. Slurm mode's submissions are Slurm's business and do not come through here.
  // Partitions: none named becomes the default one (stored by name); each named must allow
  // the user (allow_users, allow_groups, allow_accounts; admins pass), PERMISSION_DENIED naming
  // the partition and its lists; a job naming no class gets its first partition's default_qos;
  // `walltime_max` (-t UNLIMITED) sets the walltime to its partitions' smallest MaxTime.
  Status Authorize(const Caller& who, JobSpec* spec, bool walltime_max = false) const;
  // gsub --test-only (sbatch's): when `spec` would start if submitted now, behind every pending
  // job (Scheduler::WhatIfStart), after Authorize and the core's spec checks; nothing is
  // submitted, stored or changed. `job_id` is the id a submission now would get; `partition`
  // the one it would run in. Fails: not serving, Authorize's, the core's ValidateSpec (without
  // its "job N"), the what-if's checks.
  struct TestOnlyAnswer {
    JobId job_id = kNoJob;
    Scheduler::WhatIfAnswer answer;
    std::string partition;
  };
  CallResult<TestOnlyAnswer> TestOnly(const Caller& who, JobSpec spec, bool walltime_max);
  // `signal` 0: cancel the job; else send the signal to its processes (it must be running).
  // Answers the job's state, when there is a job. Fails: NOT_FOUND, PERMISSION_DENIED,
  // INVALID_ARGUMENT (signal out of 0..64), FAILED_PRECONDITION (already final; a signal to a
  // job that is not running), the core's Cancel.
  void Cancel(const Caller& who, JobId id, int32_t signal,
              std::function<void(CallStatus, std::optional<JobState>)> done);
  // The same for every unfinished task of an array (gcancel 1234), in one batch; a signal goes
  // to its running tasks. Answers kCancelled (a signal: kRunning). Fails: NOT_FOUND (no such
  // array), PERMISSION_DENIED, INVALID_ARGUMENT (signal), FAILED_PRECONDITION (every task
  // ended; a signal and no task running).
  void CancelArray(const Caller& who, JobId array, int32_t signal,
                   std::function<void(CallStatus, std::optional<JobState>)> done);
  // Fail: NOT_FOUND, PERMISSION_DENIED, the core's Hold / Release.
  void Hold(const Caller& who, JobId id, Reply<void> done);
  // scontrol top (Scheduler::Top): the owner's job (admins: anyone's) goes first among the
  // owner's pending jobs. Fails: NOT_FOUND, PERMISSION_DENIED, the core's Top.
  void Top(const Caller& who, JobId id, Reply<void> done);
  // scontrol suspend / resume (Scheduler::Suspend, Resume), admins only: once stored, the
  // executor stops (SIGSTOP) or continues the job's parts. Fails: PERMISSION_DENIED, NOT_FOUND,
  // FAILED_PRECONDITION (an executor without suspend, the core's).
  void Suspend(const Caller& who, JobId id, bool resume, Reply<void> done);
  // An admin's requeue of a running job (Scheduler::Requeue). PERMISSION_DENIED for others,
  // NOT_FOUND, FAILED_PRECONDITION unless running.
  void Requeue(const Caller& who, JobId id, Reply<void> done);
  void Release(const Caller& who, JobId id, Reply<void> done);
  // Fails: NOT_FOUND, PERMISSION_DENIED (also a user raising the walltime, or a class the
  // access rules refuse the caller),
  // FAILED_PRECONDITION (the job has ended), the core's Update.
  void Update(const Caller& who, JobId id, const Scheduler::JobUpdate& update, Reply<void> done);
  // The owner reports checkpoint `epoch` (0: the one after the last). Fails: NOT_FOUND,
  // PERMISSION_DENIED, FAILED_PRECONDITION (not running), the core's CheckpointDone.
  void ReportCheckpoint(const Caller& who, JobId id, uint64_t epoch, std::string path, Reply<void> done);
  // Events from now on (after the initial states, when asked for); a watch of an unknown job
  // is closed NOT_FOUND. Everyone may watch.
  void Watch(const WatchFilter& filter, std::shared_ptr<JobEventSink> sink);

  // ---- users: nodes (controller_nodes.cc) ------------------------------------------------
  // Drain or down (with a reason) or resume a node; down requeues its jobs. Fails: PERMISSION_DENIED (not an admin),
  // NOT_FOUND, not serving.
  void SetNodeAdmin(const Caller& who, const std::string& node, NodeState state, const std::string& reason,
                    Reply<void> done);

  // ---- reads (api_views.h) ---------------------------------------------------------------
  // NOT_FOUND "job N: no such job".
  Result<const JobRecord*> FindJob(JobId id) const;
  // PERMISSION_DENIED "<action> job N: it belongs to X, not to Y" unless `who` may act on it
  // ("it is not yours" under private_data users; NOT_FOUND "no such job" under private_data
  // jobs, as reads answer).
  Status CheckOwner(const Caller& who, const JobRecord& job, std::string_view action) const;
  // Any job's launch info (a finished job's is read from the store); null when there is none.
  const LaunchInfo* FindLaunchInfo(const JobRecord& job) { return launch_.Find(job); }
  // Null for a node that is not in the topology.
  std::optional<NodeStatus> node(const std::string& name) const;
  const std::string& topology_fingerprint() const { return options_.topology_fingerprint; }
  const PrivateData& private_data() const { return options_.private_data; }
  const std::vector<PartitionOptions>& partition_options() const { return options_.partitions; }
  // Null when there is no free-space reserve.
  StoreSpace* store_space() const { return options_.store_space; }

  // ExecutorHost
  const Scheduler& core() const override { return *core_; }
  const LaunchInfo* launch_info(JobId job) const override { return launch_.FindUnfinished(job); }
  CallStatus Serving() const override;
  Time Now() override;
  void AfterStored(std::function<void()> then) override;

  const ControllerStats& stats() const { return stats_; }
  bool stopped() const { return stopped_; }
  bool failed() const { return failed_; }
  size_t agents_connected() const { return executor_->connected_nodes(); }
  const Executor& executor() const { return *executor_; }
  void set_observer(ControllerObserver observer) { observer_ = std::move(observer); }
  size_t watcher_count() const { return watchers_.size(); }

 private:
  Status AuthorizePartitions(const Caller& who, JobSpec* spec, bool walltime_max) const;
  // A decision of a pass, with the launch id assigned to it (starts and resizes).
  struct Action {
    Decision d;
    uint64_t launch_id = 0;
  };
  struct Watcher {
    WatchFilter filter;
    std::shared_ptr<JobEventSink> sink;
  };
  struct Node {
    NodeId id;
    NodeAdmin admin;
  };

  // ExecutorHost (controller.cc, controller_nodes.cc)
  void JobPartsEnded(JobId job, bool success, int32_t exit_code, const std::string& reason) override;
  void JobLost(JobId job, const std::string& reason) override;
  void CheckpointReported(JobId job, uint64_t epoch, const std::string& path, const std::string& node) override;
  void NodeAvailabilityChanged(const std::string& node, const std::string& why) override;
  uint32_t SetExternalLoad(const std::string& node, const std::vector<Scheduler::ExternalPiece>& pieces) override;
  Status SetPartitions(std::vector<PartitionConfig> partitions) override;

  // ---- commits, passes, decisions (controller.cc) ------------------------------------------
  void Commit(store::Batch batch, std::function<void(CallStatus)> after);
  void Fatal(const std::string& what);
  void RequestPass();
  void RunPass();
  void ArmPassTimer();
  // Adds a SaveJobState for every tracked job whose persistent state differs from what was last
  // saved (`ids` empty: all tracked jobs); jobs that became final stop being tracked, and their
  // outcome goes into the same batch.
  void SaveChanged(store::Batch& b, const std::vector<JobId>& ids = {});
  void Track(const JobRecord& job);
  void CarryOut(const Action& a);
  void Publish(std::string_view kind, JobId id);

  // ---- jobs (controller_jobs.cc) -----------------------------------------------------------
  // A user event on one job: apply `event` to the core, save what changed, answer after the
  // commit; `then` runs after the commit (e.g. stopping the job's parts).
  void JobEvent(JobId id, const std::string& kind, std::function<Status()> event, std::function<void(CallStatus)> done,
                std::function<void()> then = {});
  // The node's state in the core from its admin state and what the executor says (controller_nodes.cc).
  void ApplyNodeState(const std::string& name, const std::string& why);

  boost::asio::io_context& io_;
  std::unique_ptr<Scheduler> core_;
  store::GroupCommitter* const committer_;
  const Clock* const clock_;
  const ControllerOptions options_;
  Executor* const executor_;
  const std::function<void(const std::string&)> on_fatal_;

  Time last_now_ = 0;
  JobId next_job_id_ = 1;
  uint64_t next_launch_id_ = 1;
  bool stopped_ = false;
  bool failed_ = false;  // a commit failed: nothing more is written or carried out
  bool pass_pending_ = false;
  ControllerStats stats_;
  ControllerObserver observer_;
  // Commits are numbered as they are written; completions come back in that order.
  uint64_t commits_written_ = 0;
  uint64_t commits_done_ = 0;
  std::deque<std::pair<uint64_t, std::function<void()>>> after_stored_;  // by the commit waited for

  std::map<JobId, JobRecord> saved_;  // unfinished jobs as last written
  std::set<JobId> pass_watch_;        // those a pass may change without a decision (PassMayChange)
  LaunchBook launch_;
  std::map<std::string, Node> nodes_;  // every node of the topology, by name
  std::vector<Watcher> watchers_;
  boost::asio::steady_timer pass_timer_;
  boost::asio::steady_timer pass_delay_timer_;            // a requested pass waiting for its pace
  std::chrono::steady_clock::time_point next_pass_at_{};  // requested passes not before this
};

}  // namespace phalanx::service
