// Job builders and state views shared by the core's scheduler tests (restore, ValidateSpec).
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/topology.h"

namespace phalanx::testing {

// Fairshare off: its usage is not in the store, so restored copies could not agree on it.
inline SchedulerConfig TestConfig() {
  SchedulerConfig c;
  c.weights.fairshare = 0;
  return c;
}

inline std::unique_ptr<Scheduler> Make(const TopologySpec& spec, const SchedulerConfig& config) {
  auto t = Topology::Build(spec);
  if (!t) throw std::runtime_error(t.error().ToString());
  auto s = Scheduler::Create(std::move(*t), config);
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

inline JobSpec Job(JobId id, uint32_t gpus, std::string cls = "normal", std::string user = "alice") {
  JobSpec s;
  s.id = id;
  s.user = std::move(user);
  s.account = "lab";
  s.priority_class = std::move(cls);
  s.shape.gpus = gpus;
  s.walltime = 7200;
  return s;
}

inline std::string Ids(const std::vector<GpuId>& gpus) {
  std::string out;
  for (GpuId g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g.value);
  return out;
}

inline std::string Ids(const std::vector<JobId>& jobs) {
  std::string out;
  for (JobId j : jobs) out += (out.empty() ? "" : ",") + std::to_string(j);
  return out;
}

// Every field of a record the store keeps, plus those the core derives from the spec.
inline std::string Persistent(const JobRecord& j) {
  std::ostringstream o;
  o << JobStateName(j.state) << " gpus=" << Ids(j.gpus) << " start=" << j.start << " end=" << j.end
    << " walltime=" << j.walltime << "/" << j.run_walltime << " progress=" << j.progress
    << " ckpt=" << j.checkpoint_epoch << ":" << j.checkpoint_path << "@" << j.last_checkpoint
    << " req=" << j.last_checkpoint_request << " deadline=" << j.checkpoint_deadline
    << " after=" << static_cast<int>(j.after_checkpoint) << " shrink_to=" << Ids(j.shrink_to)
    << " for=" << j.preempted_for << " victims=" << Ids(j.victims) << " claim=" << Ids(j.claim)
    << " preemptions=" << j.preemptions << " resizes=" << j.resizes << " lost=" << j.gpu_seconds_lost
    << " idle=" << j.idle_since << " held=" << j.spec.held << " after_ok=" << Ids(j.spec.after_ok)
    << " class=" << j.class_rank << " preemptible=" << j.preemptible;
  return o.str();
}

inline std::string Dump(const Scheduler& s) {
  std::ostringstream out;
  out << "now=" << s.now() << "\n";
  for (const auto& [id, j] : s.jobs()) out << id << ": " << Persistent(j) << "\n";
  const Topology& t = s.topology();
  for (uint32_t g = 0; g < t.gpu_count(); ++g) out << t.owner(GpuId(g)) << (g + 1 == t.gpu_count() ? "\n" : " ");
  for (uint32_t d = 0; d < t.domain_count(); ++d)
    out << t.free_gpus(DomainId(d)) << "/" << t.crossing_gbs(DomainId(d)) << " ";
  return out.str();
}

}  // namespace phalanx::testing
