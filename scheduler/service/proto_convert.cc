#include "service/proto_convert.h"

#include <map>

#include "job_spec_check.h"
#include "util/dependency.h"
#include "util/hostlist.h"
#include "util/job_fields.h"

namespace phalanx::service {
namespace {

// An invalid field of the spec, as the error of any Result.
std::unexpected<Error> Bad(std::string field, std::string message) {
  return Fail("spec." + std::move(field), std::move(message));
}

Status CheckLevel(const v1::JobSpec& p, PlacementRequest& shape) {
  switch (p.topology()) {
    case v1::TOPOLOGY_LEVEL_ANY:
      shape.level = Level::kCore;
      shape.fit = FitMode::kAny;
      return {};
    case v1::TOPOLOGY_LEVEL_NODE: shape.level = Level::kNode; break;
    case v1::TOPOLOGY_LEVEL_NVLINK: shape.level = Level::kNvlDomain; break;
    case v1::TOPOLOGY_LEVEL_LEAF: shape.level = Level::kLeaf; break;
    case v1::TOPOLOGY_LEVEL_SPINE: shape.level = Level::kSpine; break;
    default: return Bad("topology", "unknown topology level " + std::to_string(p.topology()));
  }
  shape.fit = p.topology_prefer() ? FitMode::kPrefer : FitMode::kRequire;
  return {};
}

std::vector<PartRef> PartRefs(const google::protobuf::RepeatedPtrField<v1::RunningPart>& running) {
  std::vector<PartRef> out;
  out.reserve(running.size());
  for (const v1::RunningPart& p : running) out.push_back(PartRef{p.job_id(), p.launch_id()});
  return out;
}

}  // namespace

Result<JobSpec> CoreSpecFromProto(const v1::JobSpec& p, const Caller& who) {
  // Every field's rules (gsub runs the same check before it sends); the mapping below relies
  // on them.
  PHX_RETURN_IF_ERROR(CheckJobSpec(p));
  JobSpec s;
  s.name = p.name();
  s.user = who.user;
  s.account = p.account();
  s.priority_class = p.priority_class();
  s.shape.gpus = p.gpus();
  s.shape.nodes = p.nodes();
  s.shape.gpus_per_node = p.gpus_per_node();
  s.shape.exclusive = p.exclusive();
  PHX_RETURN_IF_ERROR(CheckLevel(p, s.shape));
  s.min_gpus = p.min_gpus();
  switch (p.elastic_step_kind()) {
    case v1::ELASTIC_STEP_MULTIPLE:
      s.step_kind = ElasticStep::kMultiple;
      s.step = p.elastic_step();
      break;
    case v1::ELASTIC_STEP_POWER_OF_TWO: s.step_kind = ElasticStep::kPowerOfTwo; break;
    default: s.step_kind = ElasticStep::kAny; break;
  }
  s.walltime = p.walltime_s();
  if (p.walltime_max() && p.walltime_s() != 0)
    return Bad("walltime_max",
               "walltime_max (-t UNLIMITED) goes with walltime_s 0, got " + std::to_string(p.walltime_s()));
  s.partitions.assign(p.partitions().begin(), p.partitions().end());
  for (const std::string& part : s.partitions) {
    if (auto st = CheckLabel("partitions", part); !st) return Bad("partitions", st.error().message);
    if (part.empty() || part.find(',') != std::string::npos)
      return Bad("partitions", "'" + part + "' is not a partition name (empty, or with a comma)");
  }
  if (p.has_preemptible()) s.preemptible = p.preemptible();
  s.checkpoint_interval = p.checkpoint_interval_s();
  s.checkpoint_grace = p.checkpoint_warning_s();  // the checkpoint deadline comes this long after the signal
  s.held = p.hold();
  s.after_ok.assign(p.after_ok().begin(), p.after_ok().end());
  if (!p.dependency().empty()) {
    auto d = ParseDependencies(p.dependency());  // checked by CheckJobSpec
    if (!d) return Fail("spec.dependency", d.error().message);
    s.depends = std::move(*d);
  }
  // --begin, -w, -x, -C (CheckJobSpec checked the hostlists and the constraint's syntax; the
  // core checks the names and the constraint against the topology).
  s.begin = p.begin_time();
  const auto hosts = [](const std::string& list, std::string_view field, std::vector<std::string>* out) -> Status {
    if (list.empty()) return {};
    auto names = ExpandHostlist(list, field);
    PHX_RETURN_IF_ERROR(names);
    *out = std::move(*names);
    return {};
  };
  PHX_RETURN_IF_ERROR(hosts(p.nodelist(), "spec.nodelist", &s.nodelist));
  PHX_RETURN_IF_ERROR(hosts(p.exclude(), "spec.exclude", &s.exclude));
  s.constraint = p.constraint();
  s.no_requeue = p.has_requeue() && !p.requeue();
  return s;
}

v1::Job MakeLaunchInfo(const v1::JobSpec& spec, const Caller& who) {
  v1::Job info;
  *info.mutable_spec() = spec;
  info.set_user(who.user);
  info.set_uid(who.uid);
  info.set_gid(who.gid);
  return info;
}

std::string EncodeLaunchInfo(const v1::Job& info) {
  std::string out;
  (void)info.SerializeToString(&out);
  return out;
}

Result<v1::Job> DecodeLaunchInfo(std::string_view blob, JobId job) {
  v1::Job info;
  if (!info.ParseFromArray(blob.data(), static_cast<int>(blob.size())))
    return Fail("job " + std::to_string(job), "launch info does not decode");
  return info;
}

Scheduler::JobUpdate JobUpdateFromProto(const v1::UpdateJobRequest& req) {
  Scheduler::JobUpdate u;
  if (req.has_walltime_s()) u.walltime = req.walltime_s();
  if (req.has_priority_class()) u.priority_class = req.priority_class();
  if (req.has_name()) u.name = req.name();
  return u;
}

v1::JobState ToProto(JobState state) {
  switch (state) {
    case JobState::kPending: return v1::JOB_STATE_PENDING;
    case JobState::kRunning: return v1::JOB_STATE_RUNNING;
    case JobState::kCheckpointing: return v1::JOB_STATE_CHECKPOINTING;
    case JobState::kCompleted: return v1::JOB_STATE_COMPLETED;
    case JobState::kFailed: return v1::JOB_STATE_FAILED;
    case JobState::kCancelled: return v1::JOB_STATE_CANCELLED;
    case JobState::kKilled: return v1::JOB_STATE_KILLED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

v1::JobState ApiState(const JobRecord& job) {
  return job.state == JobState::kRunning && job.spec.suspended ? v1::JOB_STATE_SUSPENDED : ToProto(job.state);
}

v1::NodeState ToProto(NodeState state) {
  switch (state) {
    case NodeState::kUp: return v1::NODE_STATE_UP;
    case NodeState::kDrain: return v1::NODE_STATE_DRAIN;
    case NodeState::kDown: return v1::NODE_STATE_DOWN;
  }
  return v1::NODE_STATE_UNSPECIFIED;
}

void FillGpuRefs(const std::vector<GpuId>& gpus, const Topology& topo,
                 google::protobuf::RepeatedPtrField<v1::GpuRef>* out) {
  for (GpuId g : gpus) {
    if (g.value >= topo.gpu_count()) continue;
    v1::GpuRef* r = out->Add();
    r->set_node(topo.domain(topo.node_domain(topo.node_of(g))).name);
    r->set_index(topo.local_index(g));
  }
}

std::string NodelistOf(const std::vector<GpuId>& gpus, const Topology& topo) {
  std::map<NodeId, bool> nodes;
  for (GpuId g : gpus) {
    if (g.value < topo.gpu_count()) nodes[topo.node_of(g)] = true;
  }
  std::vector<std::string> names;
  for (const auto& [n, _] : nodes) names.push_back(topo.domain(topo.node_domain(n)).name);
  return FormatHostlist(names);
}

void FillJob(const JobRecord& job, const JobExtras& extras, const Topology& topo, bool include_env, v1::Job* out) {
  out->Clear();
  out->set_id(job.spec.id);
  v1::JobSpec* spec = out->mutable_spec();
  if (extras.launch) {
    *spec = extras.launch->spec();
    out->set_uid(extras.launch->uid());
    out->set_gid(extras.launch->gid());
  }
  if (!include_env) spec->clear_env();
  // The core's view of the resource fields (normalised, updated) wins over what was sent.
  const JobSpec& s = job.spec;
  spec->set_name(s.name);
  spec->set_account(s.account);
  spec->set_priority_class(s.priority_class);
  spec->set_gpus(s.shape.gpus);
  spec->set_min_gpus(s.min_gpus);
  spec->set_nodes(s.shape.nodes);
  spec->set_gpus_per_node(s.shape.gpus_per_node);
  spec->set_exclusive(s.shape.exclusive);
  spec->set_walltime_s(s.walltime);
  spec->clear_partitions();
  for (const std::string& part : s.partitions) spec->add_partitions(part);
  spec->set_hold(s.held);
  spec->clear_after_ok();
  for (JobId d : s.after_ok) spec->add_after_ok(d);
  spec->set_dependency(s.depends.empty() ? "" : FormatDependencies(s.depends));
  out->set_array_job_id(s.array_id);
  out->set_array_task_id(s.array_task);
  out->set_user(s.user);
  out->set_state(ApiState(job));
  if (s.suspended) out->set_suspend_time(s.suspended_at);
  out->set_held(s.held);
  if (job.state == JobState::kPending) {
    out->set_reason(std::string(WaitKindName(job.wait.kind)));
    out->set_reason_detail(job.wait.detail);
    if (job.wait.predicted_start < kForever) out->set_predicted_start(job.wait.predicted_start);
  }
  const v1::Job* outcome = IsFinal(job.state) ? extras.launch : nullptr;
  if (IsFinal(job.state)) {
    out->set_reason(outcome == nullptr || outcome->reason().empty() ? std::string(JobStateName(job.state))
                                                                    : outcome->reason());
  }
  out->set_submit_time(s.submit);
  out->set_start_time(job.start);
  out->set_end_time(job.end);
  if (outcome != nullptr && job.gpus.empty()) {
    *out->mutable_gpus() = outcome->gpus();
    out->set_nodelist(outcome->nodelist());
  } else {
    FillGpuRefs(job.gpus, topo, out->mutable_gpus());
    out->set_nodelist(NodelistOf(job.gpus, topo));
  }
  out->set_exit_code(outcome != nullptr ? outcome->exit_code() : 0);
  out->set_busbw_gbs(job.busbw_gbs);
  out->set_preemptions(job.preemptions);
  out->set_resizes(job.resizes);
  out->set_checkpoint_epoch(job.checkpoint_epoch);
  out->set_walltime_s(job.walltime);
  out->set_priority(job.priority);
  if (extras.partitions != nullptr) {
    const PartitionTable& t = *extras.partitions;
    if (!job.partition_ids.empty()) {
      out->set_partition(t.at(t.Holding(job.partition_ids, job.gpus, topo)).name);
    } else {
      out->set_partition(s.partitions.empty() ? t.default_name() : s.partitions.front());
    }
  }
}

void SetLastPlacement(const std::vector<GpuId>& gpus, const Topology& topo, v1::Job* info) {
  info->clear_gpus();
  FillGpuRefs(gpus, topo, info->mutable_gpus());
  info->set_nodelist(NodelistOf(gpus, topo));
}

AgentHello AgentHelloFromProto(const v1::RegisterRequest& req) {
  AgentHello h;
  h.node = req.node();
  h.gpus = static_cast<uint32_t>(req.gpus_size());
  h.address = req.address();
  h.version = req.version();
  h.running = PartRefs(req.running());
  h.wants_heartbeat_ack = req.wants_heartbeat_ack();
  return h;
}

AgentMessage AgentMessageFromProto(const v1::AgentReport& report) {
  AgentMessage m;
  m.session = report.session();
  switch (report.report_case()) {
    case v1::AgentReport::kHello: m.body = AgentHelloFromProto(report.hello()); break;
    case v1::AgentReport::kHeartbeat:
      m.body = AgentHeartbeat{PartRefs(report.heartbeat().running()), report.heartbeat().time()};
      break;
    case v1::AgentReport::kExited: {
      const v1::PartExited& e = report.exited();
      m.body = PartExit{PartRef{e.job_id(), e.launch_id()}, e.exit_code(), e.term_signal(), e.reason()};
      break;
    }
    case v1::AgentReport::kCheckpoint: {
      const v1::CheckpointReport& c = report.checkpoint();
      m.body = AgentCheckpoint{c.job_id(), c.epoch(), c.path()};
      break;
    }
    case v1::AgentReport::REPORT_NOT_SET: break;
  }
  return m;
}

v1::RegisterResponse ToProto(const AgentWelcome& welcome) {
  v1::RegisterResponse r;
  r.set_session(welcome.session);
  r.set_heartbeat_interval_s(welcome.heartbeat_interval_s);
  for (JobId id : welcome.kill_jobs) r.add_kill_jobs(id);
  r.set_stores_exits(true);
  r.set_fence_after_s(welcome.fence_after_s);
  return r;
}

v1::DaemonCommand MakeHeartbeatAckCommand(int64_t time) {
  v1::DaemonCommand c;
  c.mutable_heartbeat_ack()->set_time(time);
  return c;
}

v1::DaemonCommand MakeWelcomeCommand(const AgentWelcome& welcome) {
  v1::DaemonCommand c;
  *c.mutable_welcome() = ToProto(welcome);
  return c;
}

v1::DaemonCommand MakeSuspendCommand(JobId job, uint64_t launch_id, bool resume) {
  v1::DaemonCommand c;
  v1::SuspendCommand* s = c.mutable_suspend();
  s->set_job_id(job);
  s->set_launch_id(launch_id);
  s->set_resume(resume);
  return c;
}

v1::DaemonCommand MakeSignalCommand(JobId job, uint64_t launch_id, int32_t signal,
                                    std::optional<Time> checkpoint_deadline) {
  v1::DaemonCommand c;
  v1::SignalCommand* s = c.mutable_signal();
  s->set_job_id(job);
  s->set_signal(signal);
  if (checkpoint_deadline) {
    s->set_checkpoint(true);
    s->set_deadline(*checkpoint_deadline);
  }
  s->set_launch_id(launch_id);
  return c;
}

v1::DaemonCommand MakeKillCommand(JobId job, uint64_t launch_id, int64_t grace_s, const std::string& reason) {
  v1::DaemonCommand c;
  v1::KillCommand* k = c.mutable_kill();
  k->set_job_id(job);
  k->set_launch_id(launch_id);
  k->set_grace_s(grace_s);
  k->set_reason(reason);
  return c;
}

v1::DaemonCommand MakeExitStoredCommand(const PartRef& part) {
  v1::DaemonCommand c;
  c.mutable_exit_stored()->set_job_id(part.job);
  c.mutable_exit_stored()->set_launch_id(part.launch_id);
  return c;
}

v1::LaunchCommand MakeLaunchCommand(const LaunchPart& part, const JobRecord& job, const v1::Job& launch,
                                    const std::string& cluster_name) {
  v1::LaunchCommand c;
  c.set_job_id(part.job);
  c.set_launch_id(part.launch_id);
  *c.mutable_spec() = launch.spec();
  c.mutable_spec()->set_name(job.spec.name);
  c.set_user(launch.user());
  c.set_uid(launch.uid());
  c.set_gid(launch.gid());
  for (uint32_t i : part.gpu_indices) c.add_gpu_indices(i);
  c.set_nodelist(part.nodelist);
  c.set_master_addr(part.master_addr);
  c.set_master_port(part.master_port);
  c.set_world_size(part.world_size);
  c.set_node_rank(part.node_rank);
  c.set_nnodes(part.nnodes);
  // The core's walltime kill (a Kill decision) is the one that counts; the agent's own timer is a
  // backstop for a daemon that is away, so it fires a minute later (else a part started late in
  // a second could be killed by the agent first and end FAILED instead of KILLED).
  constexpr int64_t kAgentWalltimeMargin = 60;
  c.set_walltime_s((job.run_walltime > 0 ? job.run_walltime : job.walltime) + kAgentWalltimeMargin);
  c.set_checkpoint_epoch(job.checkpoint_epoch);
  c.set_checkpoint_path(job.checkpoint_path);
  c.set_array_job_id(job.spec.array_id);
  c.set_array_task_id(job.spec.array_task);
  c.set_cluster_name(cluster_name);
  c.set_restart_count(job.preemptions);
  return c;
}

}  // namespace phalanx::service
