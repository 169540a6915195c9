#include "service/agent_executor.h"

#include <algorithm>
#include <map>

#include "service/proto_convert.h"
#include "util/log.h"

namespace phalanx::service {
namespace {

std::map<std::string, uint32_t> NodeGpus(const Topology& topo) {
  std::map<std::string, uint32_t> out;
  for (uint32_t n = 0; n < topo.node_count(); ++n)
    out[topo.domain(topo.node_domain(NodeId(n))).name] = topo.node_gpu_count(NodeId(n));
  return out;
}

}  // namespace

AgentExecutor::AgentExecutor(boost::asio::io_context& io, const Topology& topology,
                             const std::set<std::string>& unconfirmed, Options options)
    : options_(std::move(options)), sessions_(io, NodeGpus(topology), unconfirmed, options_.sessions, this) {}

AgentExecutor::~AgentExecutor() = default;

NodeReport AgentExecutor::node(const std::string& name) const {
  NodeReport r;
  r.availability = sessions_.agent_ok(name)      ? NodeAvailability::kAvailable
                   : sessions_.unconfirmed(name) ? NodeAvailability::kUnconfirmed
                                                 : NodeAvailability::kAway;
  r.connected = sessions_.connected(name);
  r.last_report = sessions_.last_report(name);
  return r;
}

// ---- decisions -----------------------------------------------------------------------------

void AgentExecutor::AdoptJob(JobId job, const std::vector<GpuId>& gpus) {
  // Parts as the store left them: launched (launch id unknown until the agents report).
  const Topology& topo = host_->core().topology();
  std::vector<std::string> nodes;
  for (GpuId g : gpus) {
    const std::string& node = topo.domain(topo.node_domain(topo.node_of(g))).name;
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  parts_.Adopt(job, nodes);
}

void AgentExecutor::StartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) {
  LaunchParts(job, gpus, launch_id);
}

void AgentExecutor::RestartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) {
  // Stop every part, then launch anew once all have exited (docs/daemon.md).
  RunningParts::Launch* l = parts_.Find(job);
  if (l == nullptr) return LaunchParts(job, gpus, launch_id);
  l->restarting = true;
  l->relaunch_id = launch_id;
  StopParts(job, "resized: restarting on " + std::to_string(gpus.size()) + " GPUs", false);
  MaybeFinish(job);
}

void AgentExecutor::SignalJob(JobId job, int32_t signal, std::optional<Time> checkpoint_deadline) {
  RunningParts::Launch* l = parts_.Find(job);
  if (l == nullptr) return;
  for (const RunningParts::Part& p : l->parts) {
    if (p.state == RunningParts::PartState::kExited) continue;
    // Signals name the current launch, so a part of an earlier launch still stopping on the
    // same node is not signalled (0, adopted after a restart: every part of the job).
    sessions_.Send(p.node, MakeSignalCommand(job, l->launch_id, signal, checkpoint_deadline));
  }
}

void AgentExecutor::SuspendJob(JobId job, bool resume) {
  RunningParts::Launch* l = parts_.Find(job);
  if (l == nullptr) return;
  for (const RunningParts::Part& p : l->parts) {
    if (p.state == RunningParts::PartState::kExited) continue;
    sessions_.Send(p.node, MakeSuspendCommand(job, l->launch_id, resume));
  }
}

void AgentExecutor::LaunchParts(JobId job, const std::vector<GpuId>& gpus, uint64_t launch_id) {
  const JobRecord* rec = host_->core().job(job);
  if (!HoldsGpus(rec)) {
    PHX_LOG(kInfo) << "job " << job << " no longer runs; launch " << launch_id << " skipped";
    return;
  }
  const LaunchInfo* info = host_->launch_info(job);
  if (info == nullptr) {
    PHX_LOG(kError) << "job " << job << " has no launch info; it cannot be launched";
    return;
  }
  std::vector<LaunchPart> plan = PlanLaunch(
      job, gpus, host_->core().topology(), launch_id, [this](const std::string& n) { return sessions_.AddressOf(n); },
      options_.ports);
  RunningParts::Launch l;
  l.launch_id = launch_id;
  for (const LaunchPart& p : plan) {
    v1::DaemonCommand c;
    *c.mutable_launch() = MakeLaunchCommand(p, *rec, *info, host_->core().topology().name());
    // The partition it runs in, first of spec.partitions (SLURM_JOB_PARTITION on the node).
    {
      const PartitionTable& parts = host_->core().partitions();
      v1::JobSpec* spec = c.mutable_launch()->mutable_spec();
      spec->clear_partitions();
      spec->add_partitions(rec->partition_ids.empty()
                               ? parts.default_name()
                               : parts.at(parts.Holding(rec->partition_ids, gpus, host_->core().topology())).name);
    }
    const bool delivered = sessions_.Send(p.node, std::move(c));
    l.parts.push_back(
        RunningParts::Part{p.node, delivered ? RunningParts::PartState::kSent : RunningParts::PartState::kQueued, 0});
  }
  PHX_LOG(kInfo) << "launch job=" << job << " launch=" << launch_id << " on " << (plan.empty() ? "" : plan[0].nodelist)
                 << " world_size=" << gpus.size() << " master=" << (plan.empty() ? "" : plan[0].master_addr) << ":"
                 << (plan.empty() ? 0 : plan[0].master_port);
  if (const RunningParts::Launch* replaced = parts_.Find(job)) AckReported(*replaced);
  parts_.Launched(job, std::move(l));
}

void AgentExecutor::KillLaunch(const std::string& node, JobId job, uint64_t launch_id, const std::string& reason) {
  sessions_.Send(node, MakeKillCommand(job, launch_id, static_cast<int64_t>(options_.kill_grace_s + 0.999), reason));
}

void AgentExecutor::StopParts(JobId job, const std::string& reason, bool forget) {
  RunningParts::Launch* l = parts_.Find(job);
  if (l == nullptr) return;
  for (RunningParts::Part& p : l->parts) {
    if (p.state == RunningParts::PartState::kExited) continue;
    if (p.state == RunningParts::PartState::kQueued) {
      // Never delivered: take the launch back instead of killing.
      sessions_.TakeBackLaunches(p.node, job);
      p.state = RunningParts::PartState::kExited;
      p.exit_code = -1;
      continue;
    }
    KillLaunch(p.node, job, l->launch_id, reason);
  }
  if (!forget) return;
  AckReported(*l);  // the stop was committed before this call: later exits of the launch are stale
  parts_.Forget(job);
}

// ---- what the agents report ----------------------------------------------------------------

std::vector<JobId> AgentExecutor::Reconcile(const std::string& node, const std::vector<PartRef>& running) {
  RunningParts::Reconciled r = parts_.Reconcile(node, running);
  for (const PartRef& old : r.stale) {
    // An older launch of a job that runs here under a newer one: stop that launch only.
    PHX_LOG(kWarn) << "node " << node << " still runs launch " << old.launch_id << " of job " << old.job
                   << ": killing that launch";
    KillLaunch(node, old.job, old.launch_id, "an old launch of the job");
  }
  for (JobId id : r.unknown) {
    auto p = std::find_if(running.begin(), running.end(), [id](const PartRef& ref) { return ref.job == id; });
    PHX_LOG(kWarn) << "node " << node << " runs job " << id << " (launch " << p->launch_id
                   << ") which phalanxd does not run there: killing it";
  }
  // What the daemon launched there but the agent does not have: never delivered (phalanxd
  // stopped between deciding the launch and sending it) or lost with the agent's state. The
  // job never ended by itself: requeued, as on a node failure. A launch already ending (a part
  // failed) or restarting for a resize just counts the part as exited.
  for (JobId id : r.lost) {
    const std::string why = "lost: the agent on " + node + " registered without it";
    const RunningParts::Launch* l = parts_.Find(id);
    if (l == nullptr) continue;
    if (l->failed || l->restarting) {
      PartGone(id, node, -1, why);
    } else {
      parts_.PartLost(id, node);
      host_->JobLost(id, why);
    }
  }
  // A suspended job's parts stay stopped whatever the agent went through (it may have lost its
  // state dir): the suspend again, queued behind the welcome (idempotent on the agent).
  for (const PartRef& p : running) {
    const JobRecord* rec = host_->core().job(p.job);
    if (HoldsGpus(rec) && rec->spec.suspended && parts_.Owns(node, p))
      sessions_.Send(node, MakeSuspendCommand(p.job, p.launch_id, false));
  }
  return r.unknown;
}

void AgentExecutor::AgentBack(const std::string& node, const std::string& why) {
  host_->NodeAvailabilityChanged(node, why);
}

void AgentExecutor::AgentLost(const std::string& node, const std::string& why) {
  // Its parts will never report: they count as gone (the core requeues or shrinks the jobs).
  parts_.NodeLost(node);
  host_->NodeAvailabilityChanged(node, why);
  // Restarting jobs may now have every part gone.
  for (JobId id : parts_.Restarting()) MaybeFinish(id);
}

void AgentExecutor::Heartbeat(const std::string& node, const AgentHeartbeat& heartbeat) {
  for (const PartRef& p : heartbeat.running) {
    if (parts_.Owns(node, p)) continue;
    // Not ours: a launch the daemon stopped (it may still be dying, and stopping it again is
    // harmless) or one it never knew (e.g. launched before a crash).
    PHX_LOG(kDebug) << "node " << node << " runs job " << p.job << " launch " << p.launch_id
                    << " that phalanxd does not run there: stopping it";
    KillLaunch(node, p.job, p.launch_id, "unknown to phalanxd");
  }
}

void AgentExecutor::PartExited(const std::string& node, const PartExit& e) {
  if (!parts_.Tracks(e.part)) {
    // Stale, or a duplicate (re-sent on a new stream, after a restart of phalanxd): the store
    // already has what it implies, or will once what is being written now has committed.
    PHX_LOG(kDebug) << "node " << node << ": exit of job " << e.part.job << " launch " << e.part.launch_id
                    << " (no longer tracked)";
    AckExit(node, e.part);
    return;
  }
  RunningParts::Launch* l = parts_.Find(e.part.job);
  const std::pair<std::string, PartRef> reported{node, e.part};
  if (std::none_of(l->reported.begin(), l->reported.end(),
                   [&](const auto& r) { return r.first == node && r.second.launch_id == e.part.launch_id; }))
    l->reported.push_back(reported);
  const int32_t code = e.exit_code == 0 && e.term_signal == 0 ? 0 : (e.exit_code != 0 ? e.exit_code : -1);
  PHX_LOG(kInfo) << "job " << e.part.job << " part on " << node << " exited: code " << e.exit_code
                 << (e.term_signal ? " signal " + std::to_string(e.term_signal) : "") << " (" << e.reason << ")";
  PartGone(e.part.job, node, code,
           e.reason.empty() ? "exit " + std::to_string(code) + " on " + node : e.reason + " on " + node);
}

void AgentExecutor::CheckpointReported(const std::string& node, const AgentCheckpoint& c) {
  host_->CheckpointReported(c.job, c.epoch, c.path, node);
}

void AgentExecutor::AckExit(const std::string& node, const PartRef& part) {
  host_->AfterStored([this, node, part] { sessions_.Send(node, MakeExitStoredCommand(part)); });
}

void AgentExecutor::AckReported(const RunningParts::Launch& l) {
  for (const auto& [node, part] : l.reported) AckExit(node, part);
}

void AgentExecutor::PartGone(JobId job, const std::string& node, int32_t code, const std::string& reason) {
  if (parts_.Find(job) == nullptr) return;
  if (parts_.PartExited(job, node, code, reason))
    StopParts(job, "another part of the job failed (" + reason + ")", false);
  MaybeFinish(job);
}

void AgentExecutor::MaybeFinish(JobId job) {
  if (!parts_.AllExited(job)) return;
  const RunningParts::Launch l = std::move(*parts_.Find(job));
  parts_.Forget(job);
  const JobRecord* rec = host_->core().job(job);
  if (l.restarting) {
    if (HoldsGpus(rec)) LaunchParts(job, rec->gpus, l.relaunch_id);
    AckReported(l);  // the resize was committed before the restart began
    return;
  }
  host_->JobPartsEnded(job, !l.failed, l.exit_code, l.failed ? l.fail_reason : "exit 0");
  AckReported(l);  // after the commit JobPartsEnded started: the job's outcome
}

}  // namespace phalanx::service
