// Controller: agents -- registration and reconciliation, reports on their streams, lost streams
// and heartbeats, the node states that follow from them.
#include <boost/asio/post.hpp>

#include <algorithm>
#include <random>

#include "adapters/store/codec.h"
#include "service/controller.h"
#include "service/log.h"
#include "service/proto_convert.h"

namespace phalanx::service {
namespace {

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1000.0));
}

}  // namespace

Controller::NodeInfo* Controller::FindNode(const std::string& name) {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

std::string Controller::NewSession() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

// ---- registration and reports ------------------------------------------------------------

void Controller::Reconcile(const std::string& name, const google::protobuf::RepeatedPtrField<v1::RunningPart>& running,
                           std::vector<JobId>* kill) {
  std::set<JobId> listed;
  for (const v1::RunningPart& rp : running) {
    const JobId id = rp.job_id();
    auto it = exec_.find(id);
    Part* part = nullptr;
    if (it != exec_.end()) {
      for (Part& p : it->second.parts) {
        if (p.node == name && p.state != Part::State::kExited) part = &p;
      }
    }
    const bool ours = part != nullptr && (it->second.launch_id == 0 || it->second.launch_id == rp.launch_id());
    if (ours) {
      if (it->second.launch_id == 0) it->second.launch_id = rp.launch_id();
      part->state = Part::State::kRunning;
      listed.insert(id);
    } else if (part != nullptr) {
      // An older launch of a job that runs here under a newer one: stop that launch only.
      PHX_LOG(kWarn) << "node " << name << " still runs launch " << rp.launch_id() << " of job " << id << ": killing that launch";
      KillLaunch(nodes_.at(name), id, rp.launch_id(), "an old launch of the job");
    } else if (std::find(kill->begin(), kill->end(), id) == kill->end()) {
      PHX_LOG(kWarn) << "node " << name << " runs job " << id << " (launch " << rp.launch_id()
                     << ") which phalanxd does not run there: killing it";
      kill->push_back(id);
    }
  }
  // What the daemon launched there (and the agent got) but the agent no longer has: lost.
  std::vector<JobId> lost;
  for (auto& [id, e] : exec_) {
    for (const Part& p : e.parts) {
      if (p.node == name && (p.state == Part::State::kSent || p.state == Part::State::kRunning) && !listed.contains(id))
        lost.push_back(id);
    }
  }
  for (JobId id : lost) PartGone(id, name, -1, "lost: the agent on " + name + " registered without it");
}

void Controller::AgentRegister(const v1::RegisterRequest& req, const std::string& peer_address, Reply<v1::RegisterResponse> done) {
  if (stopped_ || failed_) return done(Unavailable(), v1::RegisterResponse());
  NodeInfo* node = FindNode(req.node());
  if (node == nullptr)
    return done(grpc::Status(grpc::StatusCode::NOT_FOUND, "node " + req.node() + " is not in the topology"), v1::RegisterResponse());
  const std::string name = req.node();
  const uint32_t expect = core_->topology().node_gpu_count(node->id);
  if (req.gpus_size() > 0 && static_cast<uint32_t>(req.gpus_size()) != expect)
    PHX_LOG(kWarn) << "node " << name << " reports " << req.gpus_size() << " GPUs, the topology has " << expect;
  if (node->link) {
    node->link->Close(grpc::Status(grpc::StatusCode::ABORTED, "superseded by a new registration of " + name));
    node->link.reset();
  }
  node->grace->cancel();
  node->session = NewSession();
  node->address = !req.address().empty() ? req.address() : peer_address;
  node->agent_ok = true;
  node->unconfirmed = false;
  node->last_seen = std::chrono::steady_clock::now();
  node->last_report = Now();
  v1::RegisterResponse resp;
  resp.set_session(node->session);
  resp.set_heartbeat_interval_s(std::max<int64_t>(1, static_cast<int64_t>(options_.heartbeat_interval_s)));
  std::vector<JobId> kill;
  Reconcile(name, req.running(), &kill);
  for (JobId id : kill) resp.add_kill_jobs(id);
  PHX_LOG(kInfo) << "agent registered: node " << name << " at " << node->address << " (" << req.running_size()
                 << " parts running, " << kill.size() << " to kill, version " << req.version() << ")";
  ApplyNodeState(name, "agent registered");
  done(grpc::Status::OK, resp);
}

void Controller::AgentReport(const std::shared_ptr<AgentLink>& link, const std::string& peer_address, const v1::AgentReport& report) {
  if (stopped_ || failed_) return;
  // Which node is this stream? Attached streams are found by pointer.
  std::string name;
  for (auto& [n, info] : nodes_) {
    if (info.link == link) {
      name = n;
      break;
    }
  }
  if (name.empty()) {
    // The first report attaches the stream: to the registration whose session it carries (the
    // agent called Register; its hello, if any, repeats that request), or a hello registers now.
    v1::RegisterResponse welcome;
    for (auto& [n, info] : nodes_) {
      if (!report.session().empty() && info.session == report.session()) name = n;
    }
    if (!name.empty() && report.has_hello() && report.hello().node() != name) name.clear();
    if (!name.empty()) {
      welcome.set_session(report.session());
      welcome.set_heartbeat_interval_s(std::max<int64_t>(1, static_cast<int64_t>(options_.heartbeat_interval_s)));
    } else if (report.has_hello()) {
      grpc::Status status;
      AgentRegister(report.hello(), peer_address, [&](grpc::Status st, v1::RegisterResponse r) {
        status = st;
        welcome = std::move(r);
      });
      if (!status.ok()) {
        link->Close(status);
        return;
      }
      name = report.hello().node();
    } else {
      link->Close(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "unknown session: register first (Register, or a hello)"));
      return;
    }
    NodeInfo& node = nodes_.at(name);
    if (node.link && node.link != link) node.link->Close(grpc::Status(grpc::StatusCode::ABORTED, "superseded by a new stream"));
    node.link = link;
    node.grace->cancel();
    if (!node.agent_ok) {
      node.agent_ok = true;
      ApplyNodeState(name, "agent stream attached");
    }
    v1::DaemonCommand w;
    *w.mutable_welcome() = welcome;
    link->Send(std::move(w));
    // Commands that waited for a stream, in order; their parts are now delivered.
    std::deque<v1::DaemonCommand> out;
    out.swap(node.outbox);
    for (v1::DaemonCommand& c : out) {
      if (c.has_launch()) {
        auto it = exec_.find(c.launch().job_id());
        if (it != exec_.end()) {
          for (Part& p : it->second.parts) {
            if (p.node == name && p.state == Part::State::kQueued) p.state = Part::State::kSent;
          }
        }
      }
      Send(node, std::move(c));
    }
    PHX_LOG(kInfo) << "agent stream attached: node " << name << " (" << out.size() << " queued commands delivered)";
    node.last_seen = std::chrono::steady_clock::now();
    node.last_report = Now();
    if (!report.has_hello()) AgentReport(link, peer_address, report);  // a first report with content
    return;
  }
  NodeInfo& node = nodes_.at(name);
  if (!report.session().empty() && report.session() != node.session) {
    PHX_LOG(kWarn) << "node " << name << ": report with a stale session ignored";
    return;
  }
  node.last_seen = std::chrono::steady_clock::now();
  node.last_report = Now();
  switch (report.report_case()) {
    case v1::AgentReport::kHello: {
      // Re-registration on the same stream.
      grpc::Status status;
      v1::RegisterResponse welcome;
      node.link.reset();
      AgentRegister(report.hello(), peer_address, [&](grpc::Status st, v1::RegisterResponse r) {
        status = st;
        welcome = std::move(r);
      });
      if (!status.ok()) {
        link->Close(status);
        return;
      }
      NodeInfo& again = nodes_.at(name);
      again.link = link;
      v1::DaemonCommand w;
      *w.mutable_welcome() = welcome;
      link->Send(std::move(w));
      break;
    }
    case v1::AgentReport::kHeartbeat:
      // Parts the daemon does not know there are killed (e.g. launched before a crash).
      for (const v1::RunningPart& rp : report.heartbeat().running()) {
        auto it = exec_.find(rp.job_id());
        bool here = false;
        if (it != exec_.end()) {
          for (const Part& p : it->second.parts) here |= p.node == name && p.state != Part::State::kExited;
          if (here && it->second.launch_id == 0) it->second.launch_id = rp.launch_id();
          if (here && it->second.launch_id == rp.launch_id()) continue;
        }
        // Not ours: a launch the daemon stopped (it may still be dying, and stopping it again
        // is harmless) or one it never knew (e.g. launched before a crash).
        PHX_LOG(kDebug) << "node " << name << " runs job " << rp.job_id() << " launch " << rp.launch_id()
                        << " that phalanxd does not run there: stopping it";
        KillLaunch(node, rp.job_id(), rp.launch_id(), "unknown to phalanxd");
      }
      break;
    case v1::AgentReport::kExited: OnPartExited(name, report.exited()); break;
    case v1::AgentReport::kCheckpoint: OnCheckpoint(name, report.checkpoint()); break;
    case v1::AgentReport::REPORT_NOT_SET: break;
  }
}

void Controller::AgentStreamClosed(const std::shared_ptr<AgentLink>& link) {
  for (auto& [name, node] : nodes_) {
    if (node.link != link) continue;
    node.link.reset();
    if (stopped_) return;
    PHX_LOG(kWarn) << "agent stream of node " << name << " closed; node goes down in " << options_.agent_grace_s
                   << " s unless it reconnects";
    ArmGrace(name, options_.agent_grace_s, "its agent's stream broke");
    return;
  }
}

void Controller::ArmGrace(const std::string& name, double seconds, const std::string& why) {
  NodeInfo& node = nodes_.at(name);
  node.grace->expires_after(Millis(seconds));
  node.grace->async_wait([this, name, why](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    AgentLost(name, why);
  });
}

void Controller::AgentLost(const std::string& name, const std::string& why) {
  NodeInfo& node = nodes_.at(name);
  if (node.link && !node.link->closed()) return;  // came back meanwhile
  PHX_LOG(kWarn) << "node " << name << " down: " << why;
  node.link.reset();
  node.agent_ok = false;
  node.unconfirmed = false;
  node.outbox.clear();
  // Its parts will never report: they count as gone (the core requeues or shrinks the jobs).
  for (auto& [id, e] : exec_) {
    for (Part& p : e.parts) {
      if (p.node == name && p.state != Part::State::kExited) {
        p.state = Part::State::kExited;
        p.exit_code = -1;
      }
    }
  }
  ApplyNodeState(name, why);
  // Restarting jobs may now have every part gone.
  std::vector<JobId> restarting;
  for (const auto& [id, e] : exec_) {
    if (e.restarting) restarting.push_back(id);
  }
  for (JobId id : restarting) MaybeFinish(id);
}

void Controller::ApplyNodeState(const std::string& name, const std::string& why) {
  NodeInfo& node = nodes_.at(name);
  const NodeState want = node.agent_ok ? node.admin.state : node.unconfirmed ? NodeState::kDrain : NodeState::kDown;
  if (core_->topology().node_state(node.id) == want || stopped_ || failed_) return;
  const Time now = Now();
  if (auto s = core_->SetNodeState(name, want, now); !s) {
    PHX_LOG(kError) << "node " << name << ": " << s.error().ToString();
    return;
  }
  PHX_LOG(kInfo) << "node " << name << " is " << NodeStateName(want) << " (" << why << ")";
  store::Batch b;
  b.RecordEvent(now, "node", kNoJob, "node=" + name + " state=" + std::string(NodeStateName(want)) + " reason=" + store::Escape(why));
  SaveChanged(b);  // a node going down requeues or shrinks its jobs
  Commit(std::move(b), [](grpc::Status) {});
  RequestPass();
}

void Controller::ArmHeartbeatTimer() {
  heartbeat_timer_.expires_after(Millis(std::max(0.05, options_.heartbeat_interval_s / 2)));
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    CheckHeartbeats();
    ArmHeartbeatTimer();
  });
}

void Controller::CheckHeartbeats() {
  const auto now = std::chrono::steady_clock::now();
  const auto limit = Millis(options_.heartbeat_timeout_s);
  for (auto& [name, node] : nodes_) {
    if (!node.agent_ok || now - node.last_seen <= limit) continue;
    if (node.link) {
      PHX_LOG(kWarn) << "node " << name << ": no report for " << options_.heartbeat_timeout_s << " s; closing its stream";
      node.link->Close(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no heartbeat"));
      node.link.reset();
      ArmGrace(name, options_.agent_grace_s, "no heartbeat from its agent");
    } else if (node.grace->expiry() <= std::chrono::steady_clock::now()) {
      // Registered but never attached a stream.
      ArmGrace(name, 0, "its agent registered but never connected");
    }
  }
}

}  // namespace phalanx::service
