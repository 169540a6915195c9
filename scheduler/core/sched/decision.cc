#include "core/sched/decision.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/topology/topology.h"

namespace phalanx {

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kPending: return "pending";
    case JobState::kRunning: return "running";
    case JobState::kCheckpointing: return "checkpointing";
    case JobState::kCompleted: return "completed";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
    case JobState::kKilled: return "killed";
  }
  return "pending";
}

std::string_view WaitKindName(WaitKind kind) {
  switch (kind) {
    case WaitKind::kNone: return "None";
    case WaitKind::kPriority: return "Priority";
    case WaitKind::kResources: return "Resources";
    case WaitKind::kTopologyBlock: return "TopologyBlock";
    case WaitKind::kReservedFor: return "ReservedFor";
    case WaitKind::kUserLimit: return "UserLimit";
    case WaitKind::kAccountLimit: return "AccountLimit";
    case WaitKind::kHeld: return "Held";
    case WaitKind::kDependency: return "Dependency";
    case WaitKind::kUnsatisfiable: return "Unsatisfiable";
    case WaitKind::kPartitionDown: return "PartitionDown";
    case WaitKind::kPreempting: return "Preempting";
    case WaitKind::kDependencyNever: return "DependencyNeverSatisfied";
    case WaitKind::kArrayTaskLimit: return "JobArrayTaskLimit";
    case WaitKind::kBeginTime: return "BeginTime";
  }
  return "None";
}

std::string WaitReason::ToString() const {
  std::string out(WaitKindName(kind));
  if (!detail.empty()) out += "(" + detail + ")";
  if (predicted_start != kForever) out += " start=" + std::to_string(predicted_start);
  return out;
}

std::string_view DecisionKindName(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kStart: return "start";
    case DecisionKind::kCheckpoint: return "checkpoint";
    case DecisionKind::kPreempt: return "preempt";
    case DecisionKind::kResize: return "resize";
    case DecisionKind::kKill: return "kill";
    case DecisionKind::kWait: return "wait";
  }
  return "wait";
}

std::string FormatGpus(const std::vector<GpuId>& gpus, const Topology& t) {
  // node (in GPU order) -> sorted local indices
  std::vector<GpuId> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  size_t i = 0;
  while (i < sorted.size()) {
    const NodeId node = t.node_of(sorted[i]);
    std::vector<uint32_t> locals;
    for (; i < sorted.size() && t.node_of(sorted[i]) == node; ++i) locals.push_back(t.local_index(sorted[i]));
    std::sort(locals.begin(), locals.end());
    if (!out.empty()) out += ",";
    out += t.domain(t.node_domain(node)).name + ":";
    for (size_t a = 0; a < locals.size();) {
      size_t b = a;
      while (b + 1 < locals.size() && locals[b + 1] == locals[b] + 1) ++b;
      if (a > 0) out += "+";
      out += std::to_string(locals[a]);
      if (b > a) out += "-" + std::to_string(locals[b]);
      a = b + 1;
    }
  }
  return out;
}

std::string FormatDecision(const Decision& d, const Topology& t) {
  std::string out =
      "t=" + std::to_string(d.at) + " " + std::string(DecisionKindName(d.kind)) + " job=" + std::to_string(d.job);
  switch (d.kind) {
    case DecisionKind::kStart: out += " gpus=" + FormatGpus(d.gpus, t); break;
    case DecisionKind::kCheckpoint: out += " deadline=" + std::to_string(d.deadline); break;
    case DecisionKind::kPreempt: out += d.requeue ? " requeue" : " no-requeue"; break;
    case DecisionKind::kResize:
      out += " gpus=" + FormatGpus(d.gpus, t);
      if (!d.added.empty()) out += " added=" + FormatGpus(d.added, t);
      if (!d.removed.empty()) out += " removed=" + FormatGpus(d.removed, t);
      break;
    case DecisionKind::kKill: break;
    case DecisionKind::kWait: out += " " + d.wait.ToString(); break;
  }
  if (!d.reason.empty()) out += " (" + d.reason + ")";
  return out;
}

}  // namespace phalanx
