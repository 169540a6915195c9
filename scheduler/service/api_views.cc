#include "service/api_views.h"

#include <algorithm>
#include <array>
#include <set>

#include "adapters/topology/topology_text.h"
#include "core/topology/fragmentation.h"
#include "service/proto_convert.h"
#include "service/rpc_util.h"
#include "util/hostlist.h"

namespace phalanx::service::views {

void Redact(const PrivateData& rules, v1::Job* job) {
  v1::JobSpec* spec = job->mutable_spec();
  spec->clear_script();
  spec->clear_command();
  spec->clear_env();
  spec->clear_working_dir();
  spec->clear_stdout_pattern();
  spec->clear_stderr_pattern();
  for (const char* f :
       {"spec.script", "spec.command", "spec.env", "spec.working_dir", "spec.stdout_pattern", "spec.stderr_pattern"})
    job->add_hidden_fields(f);
  if (rules.names) {
    spec->clear_name();
    job->add_hidden_fields("spec.name");
  }
  if (rules.users) {
    job->clear_user();
    job->clear_uid();
    job->clear_gid();
    spec->clear_account();
    for (const char* f : {"user", "uid", "gid", "spec.account"}) job->add_hidden_fields(f);
  }
}

bool FillJob(Controller& c, const JobRecord& job, const Caller& viewer, bool include_env, v1::Job* out) {
  const JobView view = ViewOf(c.private_data(), viewer, job.spec.user);
  if (view == JobView::kHidden) return false;
  JobExtras extras;
  extras.launch = c.FindLaunchInfo(job);
  extras.partitions = &c.core().partitions();
  phalanx::service::FillJob(job, extras, c.core().topology(), include_env && view == JobView::kFull, out);
  if (const uint32_t sid = c.executor().foreign_id(job.spec.id); sid != 0) out->set_slurm_job_id(sid);
  if (view == JobView::kPublic) Redact(c.private_data(), out);
  return true;
}

bool FillSlurmJob(const Controller& c, const ForeignJob& f, const Caller& viewer, v1::Job* out) {
  const JobView view = ViewOf(c.private_data(), viewer, f.user);
  if (view == JobView::kHidden) return false;
  out->set_slurm_job_id(f.id);
  out->set_user(f.user);
  out->set_uid(f.uid);
  out->set_state(f.running ? v1::JOB_STATE_RUNNING : v1::JOB_STATE_PENDING);
  out->set_reason(f.reason);
  out->set_submit_time(f.submit);
  out->set_start_time(f.running ? f.start : 0);
  out->set_end_time(f.end);
  out->set_walltime_s(f.time_limit);
  out->set_partition(f.partition);
  out->set_nodelist(CompressHostlist(f.nodes));
  v1::JobSpec* spec = out->mutable_spec();
  spec->set_name(f.name);
  spec->set_gpus(f.gpus);
  spec->set_nodes(f.node_count);
  spec->set_walltime_s(f.time_limit);
  v1::SlurmJobInfo* s = out->mutable_slurm();
  s->set_job_id(f.id);
  s->set_state(f.state);
  s->set_reason(f.reason);
  for (size_t k = 0; k < f.nodes.size(); ++k) {
    v1::SlurmJobNode* n = s->add_nodes();
    n->set_node(f.nodes[k]);
    n->set_gpus(k < f.gpus_by_node.size() ? f.gpus_by_node[k] : 0);
  }
  if (view == JobView::kPublic) Redact(c.private_data(), out);
  return true;
}

grpc::Status ListSlurmJobs(Controller& c, const Caller& who, const v1::SlurmJobListRequest& req,
                           v1::ListJobsResponse* out) {
  if (auto st = CheckUserFilter(c, who, req.user()); !st.ok()) return st;
  for (const ForeignJob& f : c.executor().foreign_jobs()) {
    if (!req.user().empty() && f.user != req.user()) continue;
    v1::Job job;
    if (FillSlurmJob(c, f, who, &job)) *out->add_jobs() = std::move(job);
  }
  return grpc::Status::OK;
}

grpc::Status GetSlurmJob(Controller& c, const Caller& who, const v1::SlurmJobRequest& req, v1::Job* out) {
  const std::string what = "Slurm job " + std::to_string(req.job_id());
  if (const JobId id = c.executor().core_job_of(req.job_id()); id != kNoJob && FillJob(c, id, who, false, out))
    return grpc::Status::OK;
  for (const ForeignJob& f : c.executor().foreign_jobs()) {
    if (f.id == req.job_id() && FillSlurmJob(c, f, who, out)) return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      what + ": not known to phalanxd (not pending or running in Slurm, or not in Slurm mode)");
}

bool FillJob(Controller& c, JobId id, const Caller& viewer, bool include_env, v1::Job* out) {
  const JobRecord* j = c.core().job(id);
  return j != nullptr && FillJob(c, *j, viewer, include_env, out);
}

grpc::Status CheckUserFilter(const Controller& c, const Caller& who, const std::string& user) {
  if (user.empty() || !c.private_data().users || who.admin || (!who.user.empty() && user == who.user)) return {};
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      "user: only your own jobs may be selected by user (private_data: users hides other users)");
}

void FillNode(const Controller& c, const std::string& name, v1::Node* out) {
  const std::optional<NodeStatus> status = c.node(name);
  if (!status) return;
  const Topology& topo = c.core().topology();
  const DomainId d = topo.node_domain(status->id);
  const Domain& dom = topo.domain(d);
  out->set_name(dom.name);
  out->set_state(ToProto(topo.node_state(status->id)));
  switch (status->report.availability) {
    case NodeAvailability::kAvailable: out->set_reason(status->admin.reason); break;
    case NodeAvailability::kUnconfirmed: out->set_reason("waiting for its agent after a restart"); break;
    case NodeAvailability::kAway: out->set_reason("no agent"); break;
  }
  if (status->report.availability == NodeAvailability::kAvailable && status->admin.state != NodeState::kUp) {
    out->set_reason_user(status->admin.user);
    out->set_reason_time(status->admin.since);
  }
  for (const Partition& p : c.core().partitions().all()) {
    if (p.has_node[status->id.value]) out->add_partitions(p.name);
  }
  out->set_gpus(dom.gpu_count);
  out->set_gpus_free(topo.free_gpus(d));
  out->set_model(dom.kind);
  for (DomainId p = dom.parent; p.valid(); p = topo.domain(p).parent) {
    if (topo.domain(p).level >= Level::kLeaf) {
      out->set_leaf(topo.domain(p).name);
      break;
    }
  }
  out->set_agent_connected(status->report.connected);
  out->set_last_heartbeat(status->report.last_report);
  std::set<JobId> jobs;
  for (uint32_t g = dom.first_gpu; g < dom.first_gpu + dom.gpu_count; ++g) {
    const JobId owner = topo.owner(GpuId(g));
    // Slurm's own jobs' GPUs (external load) belong to no Phalanx job.
    if (owner != kNoJob && owner != Topology::kHeld && !Topology::IsExternal(owner)) jobs.insert(owner);
  }
  for (JobId j : jobs) out->add_jobs(j);
  // Slurm mode: what Slurm's own jobs hold there (already not in gpus_free: the core's external load).
  uint32_t slurm_gpus = 0;
  for (const auto& [id, gpus] : c.executor().foreign_on_node(dom.name)) {
    slurm_gpus += gpus;
    out->add_slurm_jobs(id);
  }
  out->set_gpus_slurm(std::min(slurm_gpus, dom.gpu_count));
}

grpc::Status GetJob(Controller& c, const Caller& who, const v1::GetJobRequest& req, v1::Job* out) {
  auto job = c.FindJob(req.job_id());
  if (!job) return ToGrpcStatus(job.error());
  const JobView view = ViewOf(c.private_data(), who, (*job)->spec.user);
  if (view == JobView::kHidden)  // the same answer as for a job that does not exist
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "job " + std::to_string(req.job_id()) + ": no such job");
  if (req.include_env()) {
    if (auto st = c.CheckOwner(who, **job, "read the environment of"); !st) return ToGrpcStatus(st.error());
  }
  FillJob(c, **job, who, req.include_env(), out);
  return grpc::Status::OK;
}

grpc::Status ListJobs(Controller& c, const Caller& who, const v1::ListJobsRequest& req, v1::ListJobsResponse* out) {
  if (auto st = CheckUserFilter(c, who, req.user()); !st.ok()) return st;
  std::set<int> states(req.states().begin(), req.states().end());
  for (int s : states) {
    if (!v1::JobState_IsValid(s) || s == v1::JOB_STATE_UNSPECIFIED)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "states: unknown state " + std::to_string(s));
  }
  for (const auto& [id, job] : c.core().jobs()) {
    if (req.limit() > 0 && static_cast<uint32_t>(out->jobs_size()) >= req.limit()) break;
    if (!states.empty()) {
      if (!states.contains(ToProto(job.state))) continue;
    } else if (IsFinal(job.state) && !req.include_finished()) {
      continue;
    }
    if (!req.user().empty() && job.spec.user != req.user()) continue;
    if (ViewOf(c.private_data(), who, job.spec.user) == JobView::kHidden) continue;
    FillJob(c, job, who, false, out->add_jobs());
  }
  return grpc::Status::OK;
}

grpc::Status GetTopology(const Controller& c, v1::GetTopologyResponse* out) {
  const Topology& topo = c.core().topology();
  out->set_text(TopologySummary(topo) + "\n" + TopologyTree(topo));
  out->set_fingerprint(c.topology_fingerprint());
  out->set_gpus(static_cast<uint32_t>(topo.gpu_count()));
  out->set_nodes(static_cast<uint32_t>(topo.node_count()));
  return grpc::Status::OK;
}

grpc::Status ListNodes(const Controller& c, v1::ListNodesResponse* out) {
  const Topology& topo = c.core().topology();
  for (uint32_t n = 0; n < topo.node_count(); ++n)
    FillNode(c, topo.domain(topo.node_domain(NodeId(n))).name, out->add_nodes());
  return grpc::Status::OK;
}

grpc::Status ListPartitions(const Controller& c, v1::PartitionListResponse* out) {
  const Topology& topo = c.core().topology();
  const PartitionTable& table = c.core().partitions();
  for (uint32_t i = 0; i < table.size(); ++i) {
    const Partition& p = table.at(i);
    v1::Partition* o = out->add_partitions();
    o->set_name(p.name);
    o->set_state(std::string(PartitionStateName(p.state)));
    o->set_is_default(i == table.default_index());
    std::vector<std::string> nodes;
    uint32_t free = 0;
    for (uint32_t n = 0; n < topo.node_count(); ++n) {
      if (!p.has_node[n]) continue;
      nodes.push_back(topo.domain(topo.node_domain(NodeId(n))).name);
      free += topo.free_gpus(topo.node_domain(NodeId(n)));
    }
    for (const std::string& n : nodes) o->add_nodes(n);
    o->set_nodelist(CompressHostlist(nodes));
    o->set_default_walltime_s(p.default_walltime);
    o->set_max_walltime_s(p.max_walltime);
    o->set_max_walltime_unlimited(p.max_walltime >= kUnlimitedWalltime);
    o->set_max_gpus_per_job(p.max_gpus_per_job);
    o->set_gpus(p.gpus);
    o->set_gpus_free(free);
    for (const PartitionOptions& opt : c.partition_options()) {
      if (opt.name != p.name) continue;
      o->set_default_qos(opt.default_class);
      for (const std::string& x : opt.allow.users) o->add_allow_users(x);
      for (const std::string& x : opt.allow.groups) o->add_allow_groups(x);
      for (const std::string& x : opt.allow.accounts) o->add_allow_accounts(x);
    }
  }
  return grpc::Status::OK;
}

grpc::Status GetStats(Controller& c, v1::GetStatsResponse* out) {
  const Topology& topo = c.core().topology();
  uint32_t allocated = 0, unavailable = 0;
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    const JobId owner = topo.owner(GpuId(g));
    if (owner != kNoJob && owner != Topology::kHeld) ++allocated;
    if (topo.node_state(topo.node_of(GpuId(g))) != NodeState::kUp) ++unavailable;
  }
  out->set_gpus_total(static_cast<uint32_t>(topo.gpu_count()));
  out->set_gpus_allocated(allocated);
  out->set_gpus_unavailable(unavailable);
  auto& by_state = *out->mutable_jobs_by_state();
  for (const auto& [id, job] : c.core().jobs()) by_state[std::string(JobStateName(job.state))] += 1;
  out->set_passes(c.stats().passes);
  out->set_last_pass_ms(c.stats().last_pass_ms);
  out->set_now(c.Now());
  return grpc::Status::OK;
}

grpc::Status GetFragmentation(const Controller& c, v1::GetFragmentationResponse* out) {
  const Topology& topo = c.core().topology();
  const auto largest = LargestFreeBlocks(topo);
  struct Row {
    uint32_t domains = 0, whole_free = 0, domain_gpus = 0;
  };
  std::array<Row, kLevelCount> rows{};
  for (uint32_t d = 0; d < topo.domain_count(); ++d) {
    const Domain& dom = topo.domain(DomainId(d));
    Row& r = rows[static_cast<int>(dom.level)];
    ++r.domains;
    if (topo.free_gpus(DomainId(d)) == dom.gpu_count) ++r.whole_free;
    r.domain_gpus = std::max(r.domain_gpus, dom.gpu_count);
  }
  for (int l = kLevelCount - 1; l > static_cast<int>(Level::kGpu); --l) {
    if (rows[l].domains == 0) continue;
    v1::LevelFragmentation* f = out->add_levels();
    f->set_level(std::string(LevelName(static_cast<Level>(l))));
    f->set_domains(rows[l].domains);
    f->set_whole_free(rows[l].whole_free);
    f->set_largest_free_block(largest[l]);
    f->set_domain_gpus(rows[l].domain_gpus);
  }
  // FGD over the shapes of the jobs the daemon knows (the usual powers of two when none).
  std::vector<uint32_t> sizes;
  for (const auto& [id, job] : c.core().jobs()) sizes.push_back(job.spec.shape.gpus);
  if (sizes.empty()) {
    for (uint32_t g = 1; g <= 2 * topo.max_gpus_per_node(); g *= 2) sizes.push_back(g);
  }
  // The rate the simulator reports: fragmented GPUs / idle GPUs (0..1; 0 when none is idle).
  FragmentationProbe probe(topo, ShapeMix(sizes));
  const uint32_t idle = topo.free_gpus(topo.root());
  out->set_fgd(idle == 0 ? 0.0 : probe.FragmentedGpus(topo) / idle);
  return grpc::Status::OK;
}

grpc::Status ExplainPending(const Controller& c, const Caller& who, const v1::ExplainPendingRequest& req,
                            v1::ExplainPendingResponse* out) {
  auto found = c.FindJob(req.job_id());
  if (!found) return ToGrpcStatus(found.error());
  const JobRecord& job = **found;
  if (ViewOf(c.private_data(), who, job.spec.user) == JobView::kHidden)
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "job " + std::to_string(req.job_id()) + ": no such job");
  if (job.state != JobState::kPending)
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        "job " + std::to_string(req.job_id()) + " is " + std::string(JobStateName(job.state)) + ", not pending");
  out->set_reason(std::string(WaitKindName(job.wait.kind)));
  out->set_detail(job.wait.detail);
  if (job.wait.predicted_start < kForever) out->set_predicted_start(job.wait.predicted_start);
  const auto& queue = c.core().queue();
  if (auto it = std::find(queue.begin(), queue.end(), job.spec.id); it != queue.end())
    out->set_queue_position(static_cast<uint32_t>(it - queue.begin()) + 1);
  for (const Reservation& r : c.core().reservations()) {
    if (r.job != job.spec.id) continue;
    FillGpuRefs(r.gpus, c.core().topology(), out->mutable_reserved_gpus());
    if (out->predicted_start() == 0) out->set_predicted_start(r.start);
    break;
  }
  return grpc::Status::OK;
}

}  // namespace phalanx::service::views
