// Controller: cluster calls (topology, nodes, drain/resume, stats, fragmentation, explain).
#include <algorithm>

#include "adapters/topology/topology_text.h"
#include "service/controller.h"
#include "service/log.h"
#include "service/proto_convert.h"
#include "sim/metrics.h"

namespace phalanx::service {

grpc::Status Controller::GetTopology(v1::GetTopologyResponse* out) {
  const Topology& topo = core_->topology();
  out->set_text(TopologySummary(topo) + "\n" + TopologyTree(topo));
  out->set_fingerprint(options_.topology_fingerprint);
  out->set_gpus(static_cast<uint32_t>(topo.gpu_count()));
  out->set_nodes(static_cast<uint32_t>(topo.node_count()));
  return grpc::Status::OK;
}

grpc::Status Controller::ListNodes(v1::ListNodesResponse* out) {
  const Topology& topo = core_->topology();
  for (uint32_t n = 0; n < topo.node_count(); ++n) {
    const DomainId d = topo.node_domain(NodeId(n));
    const Domain& dom = topo.domain(d);
    const NodeInfo& info = nodes_.at(dom.name);
    v1::Node* node = out->add_nodes();
    node->set_name(dom.name);
    const NodeState state = topo.node_state(NodeId(n));
    node->set_state(ToProto(state));
    if (!info.agent_ok) node->set_reason(info.unconfirmed ? "waiting for its agent after a restart" : "no agent");
    else node->set_reason(info.admin.reason);
    node->set_gpus(dom.gpu_count);
    node->set_gpus_free(topo.free_gpus(d));
    node->set_model(dom.kind);
    for (DomainId p = dom.parent; p.valid(); p = topo.domain(p).parent) {
      if (topo.domain(p).level >= Level::kLeaf) {
        node->set_leaf(topo.domain(p).name);
        break;
      }
    }
    node->set_agent_connected(info.link != nullptr && !info.link->closed());
    node->set_last_heartbeat(info.last_report);
    std::set<JobId> jobs;
    for (uint32_t g = dom.first_gpu; g < dom.first_gpu + dom.gpu_count; ++g) {
      const JobId owner = topo.owner(GpuId(g));
      if (owner != kNoJob && owner != Topology::kHeld) jobs.insert(owner);
    }
    for (JobId j : jobs) node->add_jobs(j);
  }
  return grpc::Status::OK;
}

void Controller::SetNodeAdmin(const Caller& who, const v1::NodeRequest& req, NodeState state, Reply<v1::Node> done) {
  const char* verb = state == NodeState::kDrain ? "drain" : "resume";
  if (!who.admin)
    return done(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(verb) + " node: admins only (" + who.user + " is not one)"), v1::Node());
  NodeInfo* node = FindNode(req.node());
  if (node == nullptr) return done(grpc::Status(grpc::StatusCode::NOT_FOUND, "node " + req.node() + ": no such node"), v1::Node());
  if (stopped_ || failed_) return done(Unavailable(), v1::Node());
  node->admin = NodeAdmin{state, state == NodeState::kDrain ? req.reason() : std::string()};
  PHX_LOG(kInfo) << verb << " node " << req.node() << " by " << who.user << (req.reason().empty() ? "" : ": " + req.reason());
  const Time now = Now();
  store::Batch b;
  b.SetNodeState(req.node(), state, now, node->admin.reason);
  b.RecordEvent(now, verb, kNoJob, "node=" + req.node() + " by=" + who.user);
  ApplyNodeState(req.node(), std::string(verb) + " by " + who.user);
  const std::string name = req.node();
  Commit(std::move(b), [this, name, done](grpc::Status st) {
    v1::Node out;
    if (st.ok()) {
      v1::ListNodesResponse all;
      (void)ListNodes(&all);
      for (const v1::Node& n : all.nodes()) {
        if (n.name() == name) out = n;
      }
    }
    done(st, out);
  });
}

grpc::Status Controller::GetStats(v1::GetStatsResponse* out) {
  const Topology& topo = core_->topology();
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
  for (const auto& [id, job] : core_->jobs()) by_state[std::string(JobStateName(job.state))] += 1;
  out->set_passes(stats_.passes);
  out->set_last_pass_ms(stats_.last_pass_ms);
  out->set_now(Now());
  return grpc::Status::OK;
}

grpc::Status Controller::GetFragmentation(v1::GetFragmentationResponse* out) {
  const Topology& topo = core_->topology();
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
  for (const auto& [id, job] : core_->jobs()) sizes.push_back(job.spec.shape.gpus);
  if (sizes.empty()) {
    for (uint32_t g = 1; g <= 2 * topo.max_gpus_per_node(); g *= 2) sizes.push_back(g);
  }
  // The rate the simulator reports: fragmented GPUs / idle GPUs (0..1; 0 when none is idle).
  FragmentationProbe probe(topo, ShapeMix(sizes));
  const uint32_t idle = topo.free_gpus(topo.root());
  out->set_fgd(idle == 0 ? 0.0 : probe.FragmentedGpus(topo) / idle);
  return grpc::Status::OK;
}

grpc::Status Controller::ExplainPending(const Caller&, const v1::ExplainPendingRequest& req, v1::ExplainPendingResponse* out) {
  const JobRecord* job = core_->job(req.job_id());
  if (job == nullptr) return grpc::Status(grpc::StatusCode::NOT_FOUND, "job " + std::to_string(req.job_id()) + ": no such job");
  if (job->state != JobState::kPending)
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "job " + std::to_string(req.job_id()) + " is " + std::string(JobStateName(job->state)) + ", not pending");
  out->set_reason(std::string(WaitKindName(job->wait.kind)));
  out->set_detail(job->wait.detail);
  if (job->wait.predicted_start < kForever) out->set_predicted_start(job->wait.predicted_start);
  const auto& queue = core_->queue();
  if (auto it = std::find(queue.begin(), queue.end(), job->spec.id); it != queue.end())
    out->set_queue_position(static_cast<uint32_t>(it - queue.begin()) + 1);
  for (const Reservation& r : core_->reservations()) {
    if (r.job != job->spec.id) continue;
    FillGpuRefs(r.gpus, core_->topology(), out->mutable_reserved_gpus());
    if (out->predicted_start() == 0) out->set_predicted_start(r.start);
    break;
  }
  return grpc::Status::OK;
}

}  // namespace phalanx::service
