// Controller: the parts of running jobs -- launching one part per node, signals and kills,
// exits (a job ends when all its parts have; the first failure stops the rest), restarts after
// a resize, checkpoint reports from agents.
#include <algorithm>

#include "adapters/store/codec.h"
#include "service/controller.h"
#include "service/log.h"
#include "service/proto_convert.h"

namespace phalanx::service {

std::string Controller::AddressOf(const std::string& node) const {
  auto it = nodes_.find(node);
  return it != nodes_.end() && !it->second.address.empty() ? it->second.address : node;
}

bool Controller::Send(NodeInfo& node, v1::DaemonCommand cmd) {
  if (node.link && !node.link->closed()) {
    if (node.link->Send(cmd)) {
      ++stats_.commands_sent;
      return true;
    }
  }
  node.outbox.push_back(std::move(cmd));  // delivered when the agent's stream (re)attaches
  return false;
}

void Controller::KillLaunch(NodeInfo& node, JobId id, uint64_t launch_id, const std::string& reason) {
  v1::DaemonCommand c;
  c.mutable_kill()->set_job_id(id);
  c.mutable_kill()->set_launch_id(launch_id);
  c.mutable_kill()->set_grace_s(static_cast<int64_t>(options_.kill_grace_s + 0.999));
  c.mutable_kill()->set_reason(reason);
  Send(node, std::move(c));
}

void Controller::SendToParts(JobId id, const std::function<v1::DaemonCommand()>& make) {
  auto it = exec_.find(id);
  if (it == exec_.end()) return;
  for (const Part& p : it->second.parts) {
    if (p.state == Part::State::kExited) continue;
    NodeInfo* node = FindNode(p.node);
    if (node == nullptr) continue;
    v1::DaemonCommand c = make();
    // Signals name the current launch, so a part of an earlier launch still stopping on the
    // same node is not signalled (0, adopted after a restart: every part of the job).
    if (c.has_signal()) c.mutable_signal()->set_launch_id(it->second.launch_id);
    Send(*node, std::move(c));
  }
}

void Controller::KillParts(JobId id, const std::string& reason, bool forget) {
  auto it = exec_.find(id);
  if (it == exec_.end()) return;
  for (Part& p : it->second.parts) {
    if (p.state == Part::State::kExited) continue;
    NodeInfo* node = FindNode(p.node);
    if (node == nullptr) continue;
    if (p.state == Part::State::kQueued) {
      // Never delivered: take the launch back instead of killing.
      std::erase_if(node->outbox, [id](const v1::DaemonCommand& c) { return c.has_launch() && c.launch().job_id() == id; });
      p.state = Part::State::kExited;
      p.exit_code = -1;
      continue;
    }
    KillLaunch(*node, id, it->second.launch_id, reason);
  }
  if (forget) exec_.erase(it);
}

void Controller::LaunchParts(JobId id, const std::vector<GpuId>& gpus, uint64_t launch_id) {
  const JobRecord* job = core_->job(id);
  if (job == nullptr || (job->state != JobState::kRunning && job->state != JobState::kCheckpointing)) {
    PHX_LOG(kInfo) << "job " << id << " no longer runs; launch " << launch_id << " skipped";
    return;
  }
  auto info = launch_.find(id);
  if (info == launch_.end()) {
    PHX_LOG(kError) << "job " << id << " has no launch info; it cannot be launched";
    return;
  }
  std::vector<LaunchPart> parts = PlanLaunch(id, gpus, core_->topology(), launch_id,
                                             [this](const std::string& n) { return AddressOf(n); }, options_.ports);
  Execution e;
  e.launch_id = launch_id;
  for (const LaunchPart& p : parts) {
    NodeInfo* node = FindNode(p.node);
    v1::DaemonCommand c;
    *c.mutable_launch() = MakeLaunchCommand(p, *job, info->second);
    const bool delivered = Send(*node, std::move(c));
    e.parts.push_back(Part{p.node, delivered ? Part::State::kSent : Part::State::kQueued, 0});
  }
  PHX_LOG(kInfo) << "launch job=" << id << " launch=" << launch_id << " on " << (parts.empty() ? "" : parts[0].nodelist)
                 << " world_size=" << gpus.size() << " master=" << (parts.empty() ? "" : parts[0].master_addr) << ":"
                 << (parts.empty() ? 0 : parts[0].master_port);
  exec_[id] = std::move(e);
}

void Controller::OnPartExited(const std::string& node, const v1::PartExited& e) {
  auto it = exec_.find(e.job_id());
  if (it == exec_.end() || (it->second.launch_id != 0 && it->second.launch_id != e.launch_id())) {
    PHX_LOG(kDebug) << "node " << node << ": exit of job " << e.job_id() << " launch " << e.launch_id() << " (no longer tracked)";
    return;
  }
  const int32_t code = e.exit_code() == 0 && e.term_signal() == 0 ? 0 : (e.exit_code() != 0 ? e.exit_code() : -1);
  PHX_LOG(kInfo) << "job " << e.job_id() << " part on " << node << " exited: code " << e.exit_code()
                 << (e.term_signal() ? " signal " + std::to_string(e.term_signal()) : "") << " (" << e.reason() << ")";
  PartGone(e.job_id(), node, code, e.reason().empty() ? "exit " + std::to_string(code) + " on " + node : e.reason() + " on " + node);
}

void Controller::PartGone(JobId id, const std::string& node, int32_t code, const std::string& reason) {
  auto it = exec_.find(id);
  if (it == exec_.end()) return;
  Execution& e = it->second;
  for (Part& p : e.parts) {
    if (p.node == node && p.state != Part::State::kExited) {
      p.state = Part::State::kExited;
      p.exit_code = code;
    }
  }
  if (code != 0 && !e.failed && !e.restarting) {
    e.failed = true;
    e.exit_code = code;
    e.fail_reason = reason;
    KillParts(id, "another part of the job failed (" + reason + ")", false);
  }
  MaybeFinish(id);
}

void Controller::MaybeFinish(JobId id) {
  auto it = exec_.find(id);
  if (it == exec_.end()) return;
  Execution& e = it->second;
  for (const Part& p : e.parts) {
    if (p.state != Part::State::kExited) return;
  }
  const JobRecord* job = core_->job(id);
  const bool active = job != nullptr && (job->state == JobState::kRunning || job->state == JobState::kCheckpointing);
  if (e.restarting) {
    const std::vector<GpuId> gpus = job != nullptr ? job->gpus : e.relaunch;
    const uint64_t launch = e.relaunch_id;
    exec_.erase(it);
    if (active) LaunchParts(id, gpus, launch);
    return;
  }
  const bool success = !e.failed;
  const int32_t code = e.exit_code;
  const std::string reason = e.failed ? e.fail_reason : "exit 0";
  exec_.erase(it);
  if (!active || stopped_ || failed_) return;
  const Time now = Now();
  if (auto s = core_->JobEnded(id, now, success); !s) {
    PHX_LOG(kError) << "job " << id << ": " << s.error().ToString();
    return;
  }
  ++stats_.ended;
  SetOutcome(id, code, reason);  // saved with the final state (SaveChanged below)
  PHX_LOG(kInfo) << "job " << id << (success ? " completed" : " failed: " + reason);
  store::Batch b;
  b.RecordEvent(now, "end", id, "success=" + std::string(success ? "1" : "0") + " exit=" + std::to_string(code) +
                                    " reason=" + store::Escape(reason));
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id](grpc::Status st) {
    if (st.ok()) Publish("end", id);
  });
  RequestPass();
}

void Controller::OnCheckpoint(const std::string& node, const v1::CheckpointReport& c) {
  const JobId id = c.job_id();
  const JobRecord* job = core_->job(id);
  if (job == nullptr) return;
  const uint64_t epoch = c.epoch() != 0 ? c.epoch() : job->checkpoint_epoch + 1;
  const Time now = Now();
  if (auto s = core_->CheckpointDone(id, now, epoch, c.path()); !s) {
    // Several parts report the same checkpoint; the first one counts.
    PHX_LOG(kDebug) << "checkpoint of job " << id << " from " << node << ": " << s.error().ToString();
    return;
  }
  PHX_LOG(kInfo) << "checkpoint job=" << id << " epoch=" << epoch << " from " << node << (c.path().empty() ? "" : " path=" + c.path());
  store::Batch b;
  b.RecordCheckpoint(id, epoch, now, c.path());
  b.RecordEvent(now, "checkpoint_done", id, "epoch=" + std::to_string(epoch) + " node=" + node);
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id](grpc::Status st) {
    if (st.ok()) Publish("checkpoint_done", id);
  });
  RequestPass();
}

}  // namespace phalanx::service
