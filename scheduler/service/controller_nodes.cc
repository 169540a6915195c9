// Controller: nodes -- admins' drain and resume, and the node state the core gets from the
// admin's choice and the executor's view of the node.
#include "adapters/store/codec.h"
#include "service/controller.h"
#include "util/log.h"

namespace phalanx::service {

std::optional<NodeStatus> Controller::node(const std::string& name) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  return NodeStatus{it->second.id, it->second.admin, executor_->node(name)};
}

void Controller::SetNodeAdmin(const Caller& who, const std::string& name, NodeState state, const std::string& reason,
                              Reply<void> done) {
  const char* verb = state == NodeState::kDrain ? "drain" : state == NodeState::kDown ? "down" : "resume";
  if (!who.admin)
    return done(std::unexpected(Error{"", std::string(verb) + " node: admins only (" + who.user + " is not one)",
                                      ErrorCode::kPermissionDenied}));
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return done(std::unexpected(Error{"node " + name, "no such node", ErrorCode::kNotFound}));
  if (auto s = Serving(); !s) return done(s);
  Node& node = it->second;
  const Time now = Now();
  const bool up = state == NodeState::kUp;
  node.admin = NodeAdmin{state, up ? std::string() : reason, up ? std::string() : who.user, now};
  PHX_LOG(kInfo) << verb << " node " << name << " by " << who.user << (reason.empty() ? "" : ": " + reason);
  store::Batch b;
  b.SetNodeState(name, state, now, node.admin.reason, node.admin.user);
  b.RecordEvent(now, verb, kNoJob, "node=" + name + " by=" + who.user);
  ApplyNodeState(name, std::string(verb) + " by " + who.user);
  Commit(std::move(b), std::move(done));
}

void Controller::NodeAvailabilityChanged(const std::string& node, const std::string& why) { ApplyNodeState(node, why); }

uint32_t Controller::SetExternalLoad(const std::string& node, const std::vector<Scheduler::ExternalPiece>& pieces) {
  if (stopped_ || failed_) return 0;
  auto taken = core_->SetExternalLoad(node, pieces, Now());
  if (!taken) {
    PHX_LOG(kError) << "external load: " << taken.error().ToString();
    return 0;
  }
  RequestPass();  // GPUs freed or taken: the queue may move
  return *taken;
}

void Controller::ApplyNodeState(const std::string& name, const std::string& why) {
  const Node& node = nodes_.at(name);
  const NodeAvailability availability = executor_->node(name).availability;
  const NodeState want = availability == NodeAvailability::kAvailable     ? node.admin.state
                         : availability == NodeAvailability::kUnconfirmed ? NodeState::kDrain
                                                                          : NodeState::kDown;
  if (core_->topology().node_state(node.id) == want || stopped_ || failed_) return;
  const Time now = Now();
  if (auto s = core_->SetNodeState(name, want, now); !s) {
    PHX_LOG(kError) << "node " << name << ": " << s.error().ToString();
    return;
  }
  PHX_LOG(kInfo) << "node " << name << " is " << NodeStateName(want) << " (" << why << ")";
  store::Batch b;
  b.RecordEvent(now, "node", kNoJob,
                "node=" + name + " state=" + std::string(NodeStateName(want)) + " reason=" + store::Escape(why));
  SaveChanged(b);  // a node going down requeues or shrinks its jobs
  Commit(std::move(b), [](CallStatus) {});
  RequestPass();
}

}  // namespace phalanx::service
