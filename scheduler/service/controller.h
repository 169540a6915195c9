// Controller: phalanxd's state and logic. It owns the scheduling core and everything that goes
// with it (launch info, running parts, agents' nodes, watchers) and is used by ONE thread, the
// io_context's: gRPC handlers post their work there and finish their reactors from there.
//
// Durability order (docs/daemon.md):
//  - A submission is acknowledged after its batch (job row + launch info) committed; only then
//    does the core see the job.
//  - A pass's decisions are applied in the core, written with every job state they changed in
//    ONE batch, and carried out (commands to agents) only when that batch has committed.
//  - User events (cancel, hold, release, drain, ...) answer after their batch committed; the
//    commands they imply (a kill) go out then.
//  Commit callbacks come back to the io thread in commit order, so effects happen in the
//  order the core decided them. A failed commit is fatal: the daemon stops (the store is
//  ahead of nothing; a restart recovers from the last commit).
//
// Passes: coalesced (one pending at most, run after what is already queued on the io
// thread), after every event that can change a decision, and every `pass_interval`. A pass
// costs O(unfinished jobs), so requested passes are paced: the next one starts no sooner than
// twice the last one's duration after it ended (capped at `pass_interval`), which keeps passes
// under about a third of the io thread during a stream of submissions (docs/performance.md).
//
// Files: controller.cc (commits, passes, decisions), controller_jobs.cc (users' job calls),
// controller_cluster.cc (nodes, stats, topology), controller_agents.cc (agents, reconciliation,
// node states), controller_parts.cc (running jobs' parts: launch, kill, exits, checkpoints).
// Thread-safety: every method must be called on the io thread, except the constructor and
// the destructor (before the io thread runs / after it stopped).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adapters/store/group_committer.h"
#include "adapters/store/store.h"
#include "core/sched/scheduler.h"
#include "phalanx/v1/phalanx.pb.h"
#include "service/caller.h"
#include "service/clock.h"
#include "service/launch_plan.h"
#include "service/out_stream.h"
#include "service/recovery.h"

namespace phalanx::service {

using AgentLink = OutStream<v1::DaemonCommand>;
using WatchLink = OutStream<v1::JobEvent>;

struct ControllerOptions {
  PortRange ports;
  double kill_grace_s = 30;
  double heartbeat_interval_s = 10;
  double heartbeat_timeout_s = 30;
  double agent_grace_s = 60;
  double startup_grace_s = 120;
  double pass_interval_s = 1;
  std::string topology_fingerprint;
};

// Counters for GetStats and /metrics.
struct ControllerStats {
  uint64_t passes = 0;
  double last_pass_ms = 0;
  uint64_t submitted = 0, started = 0, ended = 0, preempted = 0, killed = 0, resized = 0, checkpoints = 0;
  uint64_t commands_sent = 0, commits = 0;
};

// Hooks for metrics (HttpEndpoints); each may be empty. Called on the io thread.
struct ControllerObserver {
  std::function<void(double seconds)> pass;                      // after each scheduling pass
  std::function<void(const Decision&, const JobRecord*)> decision;  // when carried out
  std::function<void()> submitted;                               // a submission acknowledged
};

class Controller {
 public:
  template <typename... T>
  using Reply = std::function<void(grpc::Status, T...)>;

  Controller(boost::asio::io_context& io, Recovered recovered, store::GroupCommitter* committer, store::Store* reader,
             const Clock* clock, ControllerOptions options, std::function<void(const std::string&)> on_fatal);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Arms the pass timer and the grace timers of nodes waiting for their agents; first pass.
  void Start();
  // Cancels timers, closes agent and watch streams; later mutating calls get UNAVAILABLE.
  void Stop();

  // ---- users: jobs (controller_jobs.cc) ------------------------------------------------
  void Submit(const Caller& who, const v1::JobSpec& spec, Reply<JobId> done);
  void Cancel(const Caller& who, JobId id, int32_t signal, Reply<v1::JobState> done);
  void Hold(const Caller& who, JobId id, Reply<v1::Job> done);
  void Release(const Caller& who, JobId id, Reply<v1::Job> done);
  void Update(const Caller& who, const v1::UpdateJobRequest& req, Reply<v1::Job> done);
  void ReportCheckpoint(const Caller& who, const v1::ReportCheckpointRequest& req, Reply<v1::Job> done);
  grpc::Status GetJob(const Caller& who, const v1::GetJobRequest& req, v1::Job* out);
  grpc::Status ListJobs(const Caller& who, const v1::ListJobsRequest& req, v1::ListJobsResponse* out);
  void Watch(const Caller& who, const v1::WatchRequest& req, std::shared_ptr<WatchLink> link);

  // ---- users: cluster (controller_cluster.cc) ------------------------------------------
  grpc::Status GetTopology(v1::GetTopologyResponse* out);
  grpc::Status ListNodes(v1::ListNodesResponse* out);
  void SetNodeAdmin(const Caller& who, const v1::NodeRequest& req, NodeState state, Reply<v1::Node> done);
  grpc::Status GetStats(v1::GetStatsResponse* out);
  grpc::Status GetFragmentation(v1::GetFragmentationResponse* out);
  grpc::Status ExplainPending(const Caller& who, const v1::ExplainPendingRequest& req, v1::ExplainPendingResponse* out);

  // ---- agents (controller_agents.cc) ---------------------------------------------------
  // Register: reconciles what the agent runs with what the store says, gives a session.
  void AgentRegister(const v1::RegisterRequest& req, const std::string& peer_address, Reply<v1::RegisterResponse> done);
  // A report on a Connect stream (the first one attaches the stream to its node).
  void AgentReport(const std::shared_ptr<AgentLink>& link, const std::string& peer_address, const v1::AgentReport& report);
  void AgentStreamClosed(const std::shared_ptr<AgentLink>& link);

  const Scheduler& core() const { return *core_; }
  const ControllerStats& stats() const { return stats_; }
  bool stopped() const { return stopped_; }
  bool failed() const { return failed_; }
  size_t agents_connected() const;
  void set_observer(ControllerObserver observer) { observer_ = std::move(observer); }
  size_t watcher_count() const { return watchers_.size(); }

 private:
  // ---- parts of running jobs -------------------------------------------------------------
  struct Part {
    std::string node;
    enum class State : uint8_t { kQueued, kSent, kRunning, kExited } state = State::kQueued;
    int32_t exit_code = 0;
  };
  struct Execution {
    uint64_t launch_id = 0;        // 0: adopted after a restart, not known yet
    std::vector<Part> parts;
    bool failed = false;           // a part failed: the rest were told to stop
    int32_t exit_code = 0;         // the first non-zero exit
    std::string fail_reason;
    // Resize: the old parts are stopping; when all exited, launch on `relaunch` (new launch id).
    bool restarting = false;
    std::vector<GpuId> relaunch;
    uint64_t relaunch_id = 0;
  };
  struct NodeInfo {
    NodeId id;
    std::shared_ptr<AgentLink> link;  // the Connect stream, when attached
    std::string session;              // the current registration's
    std::string address;              // for MASTER_ADDR
    bool agent_ok = false;            // registered and not timed out
    bool unconfirmed = false;         // after a restart: jobs run here, agent not back yet
    NodeAdmin admin;
    Time last_report = 0;             // Unix seconds, for ListNodes
    std::chrono::steady_clock::time_point last_seen{};
    std::deque<v1::DaemonCommand> outbox;  // commands waiting for a stream
    std::unique_ptr<boost::asio::steady_timer> grace;
  };
  // A decision of a pass, with the launch id assigned to it (starts and resizes).
  struct Action {
    Decision d;
    uint64_t launch_id = 0;
  };
  struct Watcher {
    std::shared_ptr<WatchLink> link;
    JobId job = kNoJob;  // kNoJob: every job
    std::string user;    // empty: every user's jobs
  };

  // ---- commits, passes, decisions (controller.cc) ------------------------------------------
  Time Now();
  void Commit(store::Batch batch, std::function<void(grpc::Status)> after);
  void Fatal(const std::string& what);
  void RequestPass();
  void RunPass();
  void ArmPassTimer();
  // Adds a SaveJobState for every tracked job whose persistent state differs from what was last
  // saved (`ids` empty: all tracked jobs); jobs that became final stop being tracked.
  void SaveChanged(store::Batch& b, const std::vector<JobId>& ids = {});
  void Track(const JobRecord& job);
  void CarryOut(const Action& a);
  void Publish(const std::string& kind, JobId id);
  grpc::Status Unavailable() const;

  // ---- jobs helpers (controller_jobs.cc) ---------------------------------------------------
  struct FoundJob {
    const JobRecord* rec = nullptr;
    const v1::Job* launch = nullptr;
  };
  grpc::Status FindJob(JobId id, FoundJob* out);
  // The job's launch info: launch_ for unfinished jobs, else final_launch_ or the store (cached);
  // null when there is none. The pointer is valid until the next call.
  const v1::Job* LaunchInfo(const JobRecord& job);
  // How an unfinished job is ending (exit code, reason), noted in its launch info just before
  // the batch that saves its final state; SaveOutcome writes it in that batch.
  void SetOutcome(JobId id, int32_t exit_code, const std::string& reason);
  // SaveChanged, for a job that became final: its launch info with the outcome and the last
  // placement (`last_gpus`: the core has cleared the job's GPUs) goes into `b`, and from launch_
  // to final_launch_.
  void SaveOutcome(store::Batch& b, const std::vector<GpuId>& last_gpus, const JobRecord& job);
  grpc::Status CheckOwner(const Caller& who, const JobRecord& job, std::string_view action) const;
  void FillJobView(const JobRecord& job, bool include_env, v1::Job* out);
  void FillJobView(JobId id, bool include_env, v1::Job* out);
  // A user event on one job: apply `event` to the core, save what changed, answer after the
  // commit; `then` runs after the commit (e.g. kill commands).
  void JobEvent(JobId id, const std::string& kind, std::function<Status()> event, std::function<void(grpc::Status)> done,
                std::function<void()> then = {});

  // ---- agents (controller_agents.cc) and parts (controller_parts.cc) ----------------------------
  NodeInfo* FindNode(const std::string& name);
  std::string NewSession();
  // True when written to the node's stream; false: queued until the agent (re)attaches.
  bool Send(NodeInfo& node, v1::DaemonCommand cmd);
  // Stops the parts of one launch of `id` on `node` (launch 0: every part of the job there).
  void KillLaunch(NodeInfo& node, JobId id, uint64_t launch_id, const std::string& reason);
  void SendToParts(JobId id, const std::function<v1::DaemonCommand()>& make);
  void KillParts(JobId id, const std::string& reason, bool forget);
  void LaunchParts(JobId id, const std::vector<GpuId>& gpus, uint64_t launch_id);
  std::string AddressOf(const std::string& node) const;
  void Reconcile(const std::string& name, const google::protobuf::RepeatedPtrField<v1::RunningPart>& running,
                 std::vector<JobId>* kill);
  void OnPartExited(const std::string& node, const v1::PartExited& e);
  void OnCheckpoint(const std::string& node, const v1::CheckpointReport& c);
  void PartGone(JobId id, const std::string& node, int32_t code, const std::string& reason);
  void MaybeFinish(JobId id);
  void ArmGrace(const std::string& name, double seconds, const std::string& why);
  void AgentLost(const std::string& name, const std::string& why);
  void ApplyNodeState(const std::string& name, const std::string& why);
  void CheckHeartbeats();
  void ArmHeartbeatTimer();

  boost::asio::io_context& io_;
  std::unique_ptr<Scheduler> core_;
  store::GroupCommitter* const committer_;
  store::Store* const reader_;  // a second connection, for final jobs' launch info
  const Clock* const clock_;
  const ControllerOptions options_;
  const std::function<void(const std::string&)> on_fatal_;

  Time last_now_ = 0;
  JobId next_job_id_ = 1;
  uint64_t next_launch_id_ = 1;
  bool stopped_ = false;
  bool failed_ = false;  // a commit failed: nothing more is written or carried out
  bool pass_pending_ = false;
  ControllerStats stats_;
  ControllerObserver observer_;

  std::map<JobId, JobRecord> saved_;   // unfinished jobs as last written
  std::set<JobId> pass_watch_;         // those a pass may change without a decision (PassMayChange)
  std::map<JobId, v1::Job> launch_;    // unfinished jobs' launch info
  // Finished jobs' launch info with their outcome (SaveOutcome), written or read back: a cache
  // of at most kFinalCache jobs, the lowest ids evicted first.
  std::map<JobId, v1::Job> final_launch_;
  static constexpr size_t kFinalCache = 4096;
  std::map<JobId, Execution> exec_;
  std::map<std::string, NodeInfo> nodes_;
  std::vector<Watcher> watchers_;
  boost::asio::steady_timer pass_timer_;
  boost::asio::steady_timer heartbeat_timer_;
  boost::asio::steady_timer pass_delay_timer_;  // a requested pass waiting for its pace
  std::chrono::steady_clock::time_point next_pass_at_{};  // requested passes not before this
};

}  // namespace phalanx::service
