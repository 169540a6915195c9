#include "service/recovery.h"

#include <charconv>
#include <cstdio>

#include "service/proto_convert.h"
#include "util/numbers.h"

namespace phalanx::service {
namespace {

// The job as if preempted without a checkpoint: pending, no GPUs, no protocol in progress.
void RequeueForNewTopology(JobRecord& j) {
  j.state = JobState::kPending;
  j.gpus.clear();
  j.after_checkpoint = JobRecord::After::kNothing;
  j.shrink_to.clear();
  j.checkpoint_deadline = 0;
  ++j.preemptions;
}

// "job 7: ..." -> 7; 0 when the note names no job.
JobId NoteJob(const std::string& note) {
  if (!note.starts_with("job ")) return kNoJob;
  JobId id = kNoJob;
  std::from_chars(note.data() + 4, note.data() + note.size(), id);
  return id;
}

}  // namespace

std::string TopologyFingerprint(const Topology& topo) {
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0xff;
    h *= 1099511628211ull;
  };
  for (uint32_t d = 0; d < topo.domain_count(); ++d) {
    const Domain& dom = topo.domain(DomainId(d));
    if (dom.level == Level::kGpu) continue;  // covered by the GPU count of its node
    mix(LevelName(dom.level));
    mix(dom.name);
    mix(dom.parent.valid() ? topo.domain(dom.parent).name : std::string());
    mix(std::to_string(dom.gpu_count));
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Result<Recovered> Recover(store::Store& store, Topology topology, SchedulerConfig config,
                          const RecoveryOptions& options) {
  PHX_ASSIGN_OR_RETURN(auto loaded, store.LoadAll());
  store::RecoveredState& state = loaded;
  Recovered r;
  r.jobs = state.jobs.size();
  r.next_job_id = state.next_job_id;

  const std::string fingerprint = TopologyFingerprint(topology);
  PHX_ASSIGN_OR_RETURN(auto stored, store.GetMeta("topology"));
  const bool changed = stored.has_value() && *stored != fingerprint;
  size_t holders = 0;
  for (const JobRecord& j : state.jobs) holders += HoldsGpus(j) ? 1 : 0;
  if (changed && holders > 0 && !options.force_topology)
    return Fail(store.path(), "the topology changed since this store was written (fingerprint " + *stored + ", now " +
                                  fingerprint + ") and " + std::to_string(holders) +
                                  " jobs hold GPUs by index; start with the old topology, or with --force-topology to "
                                  "requeue those jobs (what still runs is killed when the agents reconnect)");
  if (changed) {
    r.notes.push_back("topology changed (fingerprint " + *stored + " -> " + fingerprint +
                      "): " + std::to_string(holders) + " running jobs requeued, claims dropped");
    for (JobRecord& j : state.jobs) {
      if (HoldsGpus(j)) RequeueForNewTopology(j);
      j.claim.clear();
      j.victims.clear();
      j.preempted_for = kNoJob;
      if (!IsFinal(j.state)) r.batch.SaveJobState(j);
    }
  }

  // Node states, before any job (Restore refuses GPUs on down nodes).
  for (const store::StoredNode& n : state.nodes) {
    if (!topology.find_node(n.name).valid()) {
      r.notes.push_back("stored node " + n.name + " is not in the topology; ignored");
      continue;
    }
    if (n.state != NodeState::kUp) r.admin[n.name] = NodeAdmin{n.state, n.reason, n.reason_user, n.since};
  }
  std::set<NodeId> busy;
  for (const JobRecord& j : state.jobs) {
    if (!HoldsGpus(j)) continue;
    for (GpuId g : j.gpus) {
      if (g.value < topology.gpu_count()) busy.insert(topology.node_of(g));
    }
  }
  std::vector<std::pair<std::string, NodeState>> initial;
  for (uint32_t n = 0; n < topology.node_count(); ++n) {
    const std::string& name = topology.domain(topology.node_domain(NodeId(n))).name;
    if (busy.contains(NodeId(n))) {
      r.unconfirmed.insert(name);
      initial.emplace_back(name, NodeState::kDrain);
    } else {
      initial.emplace_back(name, NodeState::kDown);
    }
  }
  PHX_ASSIGN_OR_RETURN(auto core, Scheduler::Create(std::move(topology), std::move(config)));
  for (const auto& [name, st] : initial) {
    PHX_RETURN_IF_ERROR(core->SetNodeState(name, st, options.now));
  }

  for (JobRecord& j : state.jobs) {
    const JobId id = j.spec.id;
    if (!IsFinal(j.state)) ++r.unfinished;
    if (HoldsGpus(j)) ++r.running;
    if (auto s = core->Restore(std::move(j), options.now); !s)
      return Fail(store.path(), "job " + std::to_string(id) + " cannot be restored: " + s.error().ToString());
  }
  if (r.jobs > 0) {  // FinishRestore ends a restore that began with a Restore
    PHX_ASSIGN_OR_RETURN(auto notes, core->FinishRestore(options.now));
    for (const std::string& note : notes) {
      r.notes.push_back(note);
      if (const JobRecord* j = core->job(NoteJob(note))) r.batch.SaveJobState(*j);
    }
  }
  r.batch.SetMeta("topology", fingerprint);

  for (const auto& [id, blob] : state.launch) {
    auto info = DecodeLaunchInfo(blob, id);
    if (!info) return Fail(store.path(), info.error().ToString());
    r.launch.emplace(id, std::move(*info));
  }
  PHX_ASSIGN_OR_RETURN(auto launch_id, store.GetMeta("next_launch_id"));
  if (launch_id.has_value()) {
    const std::string& s = *launch_id;
    const auto v = ParseNumber<uint64_t>(s);
    if (!v || *v == 0) return Fail(store.path(), "meta next_launch_id is not a number ('" + s + "')");
    r.next_launch_id = *v;
  }
  r.core = std::move(core);
  return r;
}

}  // namespace phalanx::service
