// AgentExecutor: the Executor whose machines are phalanx-agents, one per node. A start becomes
// one LaunchCommand per node of the placement (launch_plan.h); stops and signals go to the
// parts of the job's current launch (a part not delivered yet is taken back instead of
// killed); what the agents report is reconciled against RunningParts, and a job whose parts
// have all ended is reported to the host. The connections themselves are AgentSessions'
// (the Agents gRPC service talks to sessions()).
// Every PartExited is answered with ExitStored (the agent keeps the ended part until then), only
// once the host has stored what the exit implies (ExecutorHost::AfterStored): for the launch the
// job runs, once the job's outcome is committed (or the launch is stopped or replaced, which
// was committed before); for a launch it no longer tracks (a duplicate re-sent after a restart,
// a stopped launch), once what is being written now is committed.
// Thread-safety: as Executor (io thread only).
#pragma once

#include <boost/asio/io_context.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/topology/topology.h"
#include "service/agent_sessions.h"
#include "service/executor.h"
#include "service/launch_plan.h"
#include "service/running_parts.h"

namespace phalanx::service {

class AgentExecutor final : public Executor, private AgentSessions::Events {
 public:
  struct Options {
    PortRange ports;
    double kill_grace_s = 30;
    AgentSessions::Options sessions;
  };
  // `topology`: the cluster's nodes (read here only); `unconfirmed`: nodes with jobs after a restart, whose
  // agents are waited for (AgentSessions).
  AgentExecutor(boost::asio::io_context& io, const Topology& topology, const std::set<std::string>& unconfirmed,
                Options options);
  ~AgentExecutor() override;

  AgentSessions& sessions() { return sessions_; }

  // Executor
  void Attach(ExecutorHost* host) override { host_ = host; }
  void AdoptJob(JobId job, const std::vector<GpuId>& gpus) override;
  void Start() override { sessions_.Start(); }
  void Stop() override { sessions_.Stop(); }
  void StartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) override;
  void RestartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) override;
  void StopJob(JobId job, const std::string& reason) override { StopParts(job, reason, true); }
  void SignalJob(JobId job, int32_t signal, std::optional<Time> checkpoint_deadline) override;
  bool CanSuspend() const override { return true; }
  void SuspendJob(JobId job, bool resume) override;
  NodeReport node(const std::string& name) const override;
  size_t connected_nodes() const override { return sessions_.connected_count(); }

 private:
  // AgentSessions::Events
  CallStatus Serving() const override { return host_->Serving(); }
  Time Now() override { return host_->Now(); }
  std::vector<JobId> Reconcile(const std::string& node, const std::vector<PartRef>& running) override;
  void AgentBack(const std::string& node, const std::string& why) override;
  void AgentLost(const std::string& node, const std::string& why) override;
  void LaunchDelivered(const std::string& node, JobId job) override { parts_.Delivered(node, job); }
  void Heartbeat(const std::string& node, const AgentHeartbeat& heartbeat) override;
  void PartExited(const std::string& node, const PartExit& exit) override;
  void CheckpointReported(const std::string& node, const AgentCheckpoint& checkpoint) override;

  // Launches one part per node of `gpus` (the job must still run and have launch info).
  void LaunchParts(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id);
  // Stops the job's parts that have not exited; `forget`: stop tracking the job.
  void StopParts(JobId job, const std::string& reason, bool forget);
  // Stops the parts of one launch of `job` on `node` (launch 0: every part of the job there).
  void KillLaunch(const std::string& node, JobId job, uint64_t launch_id, const std::string& reason);
  void PartGone(JobId job, const std::string& node, int32_t code, const std::string& reason);
  // ExitStored for the part's PartExited, once what the host wrote so far has committed.
  void AckExit(const std::string& node, const PartRef& part);
  // AckExit for every PartExited of the launch (it is no longer tracked, or its outcome is written).
  void AckReported(const RunningParts::Launch& l);
  // When every part of the job has exited: relaunch (resize) or report the job's end.
  void MaybeFinish(JobId job);

  const Options options_;
  ExecutorHost* host_ = nullptr;
  AgentSessions sessions_;
  RunningParts parts_;
};

}  // namespace phalanx::service
