// SlurmExecutor: phalanxd's Slurm mode. Slurm runs the jobs; Phalanx's core chooses where the
// managed ones go. Every `poll_interval` it reads Slurm (one adapter, slurm_adapter.h) and
//  - syncs nodes into the core through NodeReport: down in Slurm -> away (down), drained ->
//    unconfirmed (drained); GPUs used by jobs Phalanx does not place -> the core's external
//    load of the node (those GPUs busy until the jobs' expected end; the rest placeable);
//  - gives Slurm's partitions to the core when they change (SetPartitions: their nodes in the
//    topology, state, MaxTime, default); a managed job's partitions are its Slurm job's;
//  - submits newly seen managed pending jobs to the core (SubmitFn: the Controller's Submit),
//    and moves a pending one's partitions when its Slurm job was moved (UpdateFn);
//    their Slurm job id goes into the launch info's environment (PHALANX_SLURM_JOB_ID), so the
//    store keeps the mapping with the submission and a restarted phalanxd re-links every
//    unfinished job (held, running, requeued) instead of submitting it again;
//  - keeps them from Slurm's own scheduling with a lease: StartTime = now + fallback_delay,
//    renewed while phalanxd lives (if it dies, Slurm runs them once the lease is over);
//  - reports managed jobs that ended in Slurm (JobPartsEnded), and cancels in the core pending
//    jobs whose Slurm job was cancelled.
// Decisions: Start -> ReqNodeList = the placement's nodes (Slurm sorts them by name),
// Resize (an elastic shrink) -> the running job's NodeList cut to the nodes it keeps when it
// keeps whole nodes of its allocation and its batch host (22.05 shrinks a running job in place),
// else requeue and release on the new GPUs;
// StartTime = now (or a requeued job's own begin time: Slurm delays a requeued job by
// cred_expire); Preempt -> requeue; Kill/Cancel -> scancel; Signal -> the signal to the batch
// shell and steps. A released job that Slurm still has not started after `start_timeout`
// (reservations, an unmanaged job that took the nodes first) is deferred again with its node
// list cleared, and ends in the core as failed (the next poll submits it anew).
// Pitfalls handled (docs/slurm.md): the owner's own -H hold (not submitted while held; the lease
// keeps running, so the owner's release does not let Slurm start it behind Phalanx's back);
// alphabetical node lists; requeue delays; restarts.
// Slurm's calls (every load and update, each a slurmctld RPC of up to MessageTimeout) run on one
// worker thread of the executor's own, in the order they are made; their results come back to
// the io thread, so a slow or unreachable slurmctld never stalls the loop (gRPC users, the
// passes, the step reports). State is updated when a call is made (a job released is released
// for the polls that follow) and undone when Slurm refuses. One poll at a time; a poll asked
// for while one is in flight runs right after it.
// Thread-safety: io thread only (Executor's contract); the adapter only on the worker thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adapters/slurm/slurm_adapter.h"
#include "adapters/slurm/slurm_mapping.h"
#include "service/executor.h"
#include "service/reply.h"

namespace phalanx::service {

struct SlurmModeOptions {
  double poll_interval_s = 2;
  Duration fallback_delay_s = 30;  // the lease: how long a managed job waits for phalanxd
  Duration start_timeout_s = 30;   // a released job still pending after this is taken back
  slurm::ManagedRule rule;
  bool comments = true;  // write Phalanx's wait reason into the job's Comment (squeue %k)
};

class SlurmExecutor final : public Executor {
 public:
  // How a managed job enters the core (the Controller's Submit) and how a pending one leaves it
  // when its Slurm job is gone (the Controller's Cancel, as root).
  using SubmitFn = std::function<void(JobSpec, LaunchInfo, Reply<JobId>)>;
  using CancelFn = std::function<void(JobId, const std::string& why)>;
  // How a pending job's partitions change when its Slurm job moved (`scontrol update
  // Partition=`): the Controller's Update, as root.
  using UpdateFn = std::function<void(JobId, Scheduler::JobUpdate, Reply<void>)>;

  SlurmExecutor(boost::asio::io_context& io, slurm::SlurmAdapter* slurm, const Topology& topology,
                SlurmModeOptions options);
  ~SlurmExecutor() override;
  void SetController(SubmitFn submit, CancelFn cancel, UpdateFn update = {});

  // One sync round (the timer's; tests call it directly): Slurm is read on the worker thread,
  // and the snapshot applied on the io thread when it comes back.
  void Poll();
  // A managed job's batch step ended (the SPANK plugin's step report): watch the job in Slurm
  // (one cheap LoadJob every 50 ms, at most 3 s) and poll at once when slurmctld has it ending,
  // so that its GPUs are free in the core and the next pass runs within a fraction of a second
  // instead of at the next poll (which stays the fallback). Jobs Phalanx does not manage: nothing.
  void JobEnding(slurm::SlurmJobId sid);
  static constexpr int kEndWatchTries = 60;
  static constexpr int kEndWatchMs = 50;
  // A requeued job is released again once Slurm shows its own begin time (cred_expire), or this
  // long after the requeue: then from Slurm's credential lifetime (cred_expire, read once through
  // the adapter) + 1 s after the poll that sees the requeue done; at once while it is unknown.
  static constexpr Duration kRequeueSettleS = 3;
  // Slurm's credential lifetime as read (0: not yet).
  Duration cred_expire() const { return cred_expire_; }
  // Calls to Slurm made and not yet answered on the io thread (tests wait for 0).
  size_t in_flight() const { return in_flight_; }
  // The Slurm job of a core job; 0 when none.
  slurm::SlurmJobId slurm_job(JobId job) const;
  // The core job of a Slurm job; kNoJob when it is not one Phalanx manages (or not yet).
  JobId core_job(slurm::SlurmJobId sid) const;

  // Executor
  void Attach(ExecutorHost* host) override { host_ = host; }
  void AdoptJob(JobId job, const std::vector<GpuId>& gpus) override;
  void Start() override;
  void Stop() override;
  void StartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) override;
  void RestartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) override;
  void StopJob(JobId job, const std::string& reason) override;
  void SignalJob(JobId job, int32_t signal, std::optional<Time> checkpoint_deadline) override;
  NodeReport node(const std::string& name) const override;
  size_t connected_nodes() const override;
  // Slurm's own jobs (unmanaged, and managed ones Slurm ran itself) of the last poll: pending,
  // running, suspended, completing.
  const std::vector<ForeignJob>& foreign_jobs() const override { return foreign_; }
  const std::vector<std::pair<uint32_t, uint32_t>>& foreign_on_node(const std::string& node) const override;
  uint32_t foreign_id(JobId job) const override { return slurm_job(job); }
  JobId core_job_of(uint32_t id) const override { return core_job(id); }

  static constexpr const char* kSlurmJobEnv = "PHALANX_SLURM_JOB_ID";

 private:
  struct Tracked {
    JobId job = kNoJob;       // the core's job; kNoJob while its submission commits
    bool submitting = false;  // a submission in flight (never submit twice)
    Time released = 0;        // when StartOn was done for the current start (0: not yet)
    Time lease = 0;           // the StartTime we last set
    Time not_before = 0;      // Slurm's own begin time after a requeue (cred_expire)
    std::string comment;      // the Comment we last wrote
    bool requeueing = false;  // we asked Slurm to requeue it (preemption, resize); not pending yet
    Time predicted = 0;       // the predicted start written into it (0: none)
    bool renewing = false;    // a lease renewal in flight
    Time requeued_at = 0;     // when we asked Slurm to requeue it
    // Where Slurm runs it (the last poll that saw it running): for a shrink in place.
    std::vector<std::string> nodes;
    std::vector<uint32_t> gpus_by_node;
    std::string batch_host;
    // Slurm's partition list (`-p a,b`) the core's job has (SubmitNew, or a move taken over);
    // unknown after a restart until the first poll compares it with the core's.
    std::string partition;
    bool partition_known = false;
    bool moving = false;  // an update of the core job's partitions in flight
  };
  // A pending managed job moved to other partitions in Slurm: the core's job follows; a move
  // the core refuses leaves the job to Slurm (as a refused submission).
  void FollowPartition(const slurm::SlurmJob& j, Tracked& t, const JobRecord& rec);
  void Moved(slurm::SlurmJobId sid, JobId job, const std::string& from, const std::string& to,
             const std::string& slurm_list, const CallResult<void>& r);
  // A shrink Slurm can do in place: the new GPUs are all the GPUs Slurm gave the job on a
  // subset of its nodes that keeps the batch host. Those nodes, else empty.
  std::vector<std::string> ShrinkInPlace(const Tracked& t, const std::vector<GpuId>& gpus) const;

  // `call` on the worker thread, then `done` with its result on the io thread (never after the
  // executor is gone).
  template <class R>
  void OnWorker(std::function<R(slurm::SlurmAdapter&)> call, std::function<void(R)> done);
  void Act(std::string what, std::function<Status(slurm::SlurmAdapter&)> call);
  void Apply(const Result<std::vector<slurm::SlurmNode>>& nodes,
             const Result<std::vector<slurm::SlurmPartition>>& partitions,
             const Result<std::vector<slurm::SlurmJob>>& jobs);
  void TakeCredExpire(const Result<Duration>& cred);
  void SyncPartitions(const std::vector<slurm::SlurmPartition>& partitions);
  // A managed job's partitions for the core: those of its Slurm job's list (comma-separated)
  // that the core has; none (or Slurm's partitions not in use): empty, the default one.
  std::vector<std::string> JobPartitions(const slurm::SlurmJob& j) const;
  void RequeueForResize(JobId job, slurm::SlurmJobId sid);
  void WatchEnding(slurm::SlurmJobId sid, int tries);
  void ArmTimer();
  void Link(slurm::SlurmJobId sid, JobId job);
  void Unlink(slurm::SlurmJobId sid);
  void LinkFromLaunchInfo();
  void SyncNodes(const std::vector<slurm::SlurmNode>& nodes);
  void SyncLoad(const std::vector<slurm::SlurmJob>& external);
  void KeepForeign(const std::vector<slurm::SlurmJob>& external);
  void SyncManaged(const slurm::SlurmJob& j, const slurm::ManagedOptions& o, Tracked& t);
  void SubmitNew(const slurm::SlurmJob& j, const slurm::ManagedOptions& o, Tracked& t);
  void Release(slurm::SlurmJobId sid, JobId job, Tracked& t);
  void RenewLease(slurm::SlurmJobId sid, Tracked& t, Time now);
  void ReportLater(JobId job, bool success, int32_t exit_code, std::string reason);

  boost::asio::io_context& io_;
  slurm::SlurmAdapter* const slurm_;
  const Topology& topo_;
  const SlurmModeOptions options_;
  ExecutorHost* host_ = nullptr;
  SubmitFn submit_;
  CancelFn cancel_;
  UpdateFn update_;
  boost::asio::steady_timer timer_;
  bool stopped_ = true;
  bool halted_ = false;      // Stop() was called: results from Slurm are dropped
  bool polling_ = false;     // a poll in flight
  bool poll_again_ = false;  // one asked for meanwhile
  size_t in_flight_ = 0;
  bool load_failed_ = false;        // the last load failed (log once until it works again)
  bool partitions_failed_ = false;  // the last LoadPartitions failed (logged once)
  Duration cred_expire_ = 0;        // Slurm's credential lifetime (0: not read yet)
  bool cred_failed_ = false;        // reading it failed (logged once; tried again each poll)
  // Slurm's partitions as last given to the core (empty: none yet; the config's stay).
  std::vector<slurm::SlurmPartition> partitions_;

  std::map<slurm::SlurmJobId, Tracked> tracked_;
  std::map<JobId, slurm::SlurmJobId> by_job_;
  std::set<slurm::SlurmJobId> refused_;        // managed jobs the core refused: left to Slurm
  std::set<slurm::SlurmJobId> lease_failing_;  // jobs whose last lease renewal failed (logged once)
  std::map<std::string, NodeReport> nodes_;
  std::map<std::string, std::string> node_why_;
  struct LoadSent {
    uint32_t want = 0, taken = 0;
    std::vector<std::pair<uint32_t, Time>> pieces;  // per job: GPUs, end (slurm::ExternalLoad's)
  };
  std::map<std::string, LoadSent> load_sent_;  // the external load last given to the core, by node
  // Slurm's own jobs at the last poll (foreign_jobs), and by node (job id, GPUs there).
  std::vector<ForeignJob> foreign_;
  std::map<std::string, std::vector<std::pair<uint32_t, uint32_t>>> foreign_by_node_;
  std::map<uint32_t, std::string> user_names_;  // uid -> name (the password database, once per uid)
  std::shared_ptr<int> alive_;                  // results posted back check it (weak_ptr)
  // Last: destroyed first (the destructor joins it before anything it may touch goes).
  boost::asio::thread_pool worker_{1};
};

}  // namespace phalanx::service
