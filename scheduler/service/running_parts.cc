#include "service/running_parts.h"

#include <algorithm>
#include <set>

namespace phalanx::service {

void RunningParts::Adopt(JobId job, const std::vector<std::string>& nodes) {
  Launch l;
  for (const std::string& node : nodes) l.parts.push_back(Part{node, PartState::kSent, 0});
  jobs_[job] = std::move(l);
}

RunningParts::Launch* RunningParts::Find(JobId job) {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::vector<JobId> RunningParts::Restarting() const {
  std::vector<JobId> out;
  for (const auto& [id, l] : jobs_) {
    if (l.restarting) out.push_back(id);
  }
  return out;
}

RunningParts::Reconciled RunningParts::Reconcile(const std::string& node, const std::vector<PartRef>& listed) {
  Reconciled out;
  std::set<JobId> confirmed;
  for (const PartRef& ref : listed) {
    Launch* l = Find(ref.job);
    Part* part = nullptr;
    bool exited_here = false;  // this launch's part here has exited (the agent awaits ExitStored)
    if (l != nullptr) {
      for (Part& p : l->parts) {
        if (p.node == node && p.state != PartState::kExited) part = &p;
        exited_here = exited_here || (p.node == node && p.state == PartState::kExited);
      }
    }
    if (part == nullptr && exited_here && l->launch_id == ref.launch_id) continue;  // nothing to kill
    if (part != nullptr && (l->launch_id == 0 || l->launch_id == ref.launch_id)) {
      if (l->launch_id == 0) l->launch_id = ref.launch_id;
      part->state = PartState::kRunning;
      confirmed.insert(ref.job);
    } else if (part != nullptr) {
      out.stale.push_back(ref);
    } else if (std::find(out.unknown.begin(), out.unknown.end(), ref.job) == out.unknown.end()) {
      out.unknown.push_back(ref.job);
    }
  }
  for (const auto& [id, l] : jobs_) {
    for (const Part& p : l.parts) {
      if (p.node == node && (p.state == PartState::kSent || p.state == PartState::kRunning) && !confirmed.contains(id))
        out.lost.push_back(id);
    }
  }
  return out;
}

bool RunningParts::Owns(const std::string& node, const PartRef& part) {
  Launch* l = Find(part.job);
  if (l == nullptr) return false;
  bool here = false;
  for (const Part& p : l->parts) here |= p.node == node && p.state != PartState::kExited;
  if (!here) return false;
  if (l->launch_id == 0) l->launch_id = part.launch_id;
  return l->launch_id == part.launch_id;
}

bool RunningParts::Tracks(const PartRef& part) const {
  auto it = jobs_.find(part.job);
  return it != jobs_.end() && (it->second.launch_id == 0 || it->second.launch_id == part.launch_id);
}

bool RunningParts::PartExited(JobId job, const std::string& node, int32_t code, const std::string& reason) {
  Launch* l = Find(job);
  if (l == nullptr) return false;
  for (Part& p : l->parts) {
    if (p.node == node && p.state != PartState::kExited) {
      p.state = PartState::kExited;
      p.exit_code = code;
    }
  }
  if (code == 0 || l->failed || l->restarting) return false;
  l->failed = true;
  l->exit_code = code;
  l->fail_reason = reason;
  return true;
}

void RunningParts::Delivered(const std::string& node, JobId job) {
  Launch* l = Find(job);
  if (l == nullptr) return;
  for (Part& p : l->parts) {
    if (p.node == node && p.state == PartState::kQueued) p.state = PartState::kSent;
  }
}

bool RunningParts::PartLost(JobId job, const std::string& node) {
  Launch* l = Find(job);
  if (l == nullptr) return false;
  for (Part& p : l->parts) {
    if (p.node == node && p.state != PartState::kExited) {
      p.state = PartState::kExited;
      p.exit_code = -1;
    }
  }
  return true;
}

void RunningParts::NodeLost(const std::string& node) {
  for (auto& [id, l] : jobs_) {
    for (Part& p : l.parts) {
      if (p.node == node && p.state != PartState::kExited) {
        p.state = PartState::kExited;
        p.exit_code = -1;
      }
    }
  }
}

bool RunningParts::AllExited(JobId job) const {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return false;
  return std::all_of(it->second.parts.begin(), it->second.parts.end(),
                     [](const Part& p) { return p.state == PartState::kExited; });
}

}  // namespace phalanx::service
