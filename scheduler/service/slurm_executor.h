// SlurmExecutor: phalanxd's Slurm mode. Slurm runs the jobs; Phalanx's core chooses where the
// managed ones go. Every `poll_interval` it reads Slurm (one adapter, slurm_adapter.h) and
//  - syncs nodes into the core through NodeReport: down in Slurm -> away (down), drained ->
//    unconfirmed (drained); GPUs used by jobs Phalanx does not place -> the core's external
//    load of the node (those GPUs busy until the jobs' expected end; the rest placeable);
//  - submits newly seen managed pending jobs to the core (SubmitFn: the Controller's Submit);
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
// Thread-safety: io thread only (Executor's contract); the adapter is called from there.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <map>
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

  SlurmExecutor(boost::asio::io_context& io, slurm::SlurmAdapter* slurm, const Topology& topology,
                SlurmModeOptions options);
  ~SlurmExecutor() override;
  void SetController(SubmitFn submit, CancelFn cancel);

  // One sync round (the timer's; tests call it directly).
  void Poll();
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
    // Where Slurm runs it (the last poll that saw it running): for a shrink in place.
    std::vector<std::string> nodes;
    std::vector<uint32_t> gpus_by_node;
    std::string batch_host;
  };
  // A shrink Slurm can do in place: the new GPUs are all the GPUs Slurm gave the job on a
  // subset of its nodes that keeps the batch host. Those nodes, else empty.
  std::vector<std::string> ShrinkInPlace(const Tracked& t, const std::vector<GpuId>& gpus) const;

  void ArmTimer();
  void Link(slurm::SlurmJobId sid, JobId job);
  void Unlink(slurm::SlurmJobId sid);
  void LinkFromLaunchInfo();
  void SyncNodes(const std::vector<slurm::SlurmNode>& nodes);
  void SyncLoad(const std::vector<slurm::SlurmJob>& external);
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
  boost::asio::steady_timer timer_;
  bool stopped_ = true;
  bool load_failed_ = false;  // the last load failed (log once until it works again)

  std::map<slurm::SlurmJobId, Tracked> tracked_;
  std::map<JobId, slurm::SlurmJobId> by_job_;
  std::set<slurm::SlurmJobId> refused_;        // managed jobs the core refused: left to Slurm
  std::set<slurm::SlurmJobId> lease_failing_;  // jobs whose last lease renewal failed (logged once)
  std::map<std::string, NodeReport> nodes_;
  std::map<std::string, std::string> node_why_;
  struct LoadSent {
    uint32_t want = 0, taken = 0;
    Time until = 0;
  };
  std::map<std::string, LoadSent> load_sent_;  // the external load last given to the core, by node
};

}  // namespace phalanx::service
