#include "service/agent_sessions.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "service/proto_convert.h"
#include "service/rpc_util.h"
#include "util/log.h"
#include "util/rate_limited_log.h"

namespace phalanx::service {
namespace {

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1000.0));
}

std::string NewSessionId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

}  // namespace

AgentSessions::AgentSessions(boost::asio::io_context& io, const std::map<std::string, uint32_t>& gpus,
                             const std::set<std::string>& unconfirmed, Options options, Events* events)
    : options_(options), events_(events), heartbeat_timer_(io) {
  for (const auto& [name, count] : gpus) {
    Session& s = nodes_[name];
    s.gpus = count;
    s.unconfirmed = unconfirmed.contains(name);
    s.grace = std::make_unique<boost::asio::steady_timer>(io);
  }
}

AgentSessions::~AgentSessions() = default;

void AgentSessions::Start() {
  for (const auto& [name, s] : nodes_) {
    if (s.unconfirmed) ArmGrace(name, options_.startup_grace_s, "its agent did not come back after the restart");
  }
  ArmHeartbeatTimer();
}

void AgentSessions::Stop() {
  if (stopped_) return;
  stopped_ = true;
  heartbeat_timer_.cancel();
  for (auto& [name, s] : nodes_) {
    s.grace->cancel();
    if (s.link) s.link->Close(grpc::Status(grpc::StatusCode::UNAVAILABLE, "phalanxd is shutting down"));
  }
}

int64_t AgentSessions::heartbeat_interval() const {
  return std::max<int64_t>(1, static_cast<int64_t>(options_.heartbeat_interval_s));
}

bool AgentSessions::connected(const std::string& node) const {
  const Session& s = at(node);
  return s.link != nullptr && !s.link->closed();
}

size_t AgentSessions::connected_count() const {
  size_t n = 0;
  for (const auto& [name, s] : nodes_) n += s.link && !s.link->closed() ? 1 : 0;
  return n;
}

std::string AgentSessions::AddressOf(const std::string& node) const {
  auto it = nodes_.find(node);
  return it != nodes_.end() && !it->second.address.empty() ? it->second.address : node;
}

// ---- registration and reports ------------------------------------------------------------

CallResult<AgentWelcome> AgentSessions::Register(const AgentHello& hello, const std::string& peer) {
  if (auto s = events_->Serving(); !s) return std::unexpected(s.error());  // a CallError, not an Error
  auto it = nodes_.find(hello.node);
  if (it == nodes_.end())
    return std::unexpected(Error{"", "node " + hello.node + " is not in the topology", ErrorCode::kNotFound});
  const std::string& name = it->first;
  Session& s = it->second;
  if (hello.gpus > 0 && hello.gpus != s.gpus)
    PHX_LOG(kWarn) << "node " << name << " reports " << hello.gpus << " GPUs, the topology has " << s.gpus;
  if (s.link) {
    s.link->Close(grpc::Status(grpc::StatusCode::ABORTED, "superseded by a new registration of " + name));
    s.link.reset();
  }
  s.grace->cancel();
  s.id = NewSessionId();
  s.address = !hello.address.empty() ? hello.address : peer;
  s.agent_ok = true;
  s.unconfirmed = false;
  s.wants_heartbeat_ack = hello.wants_heartbeat_ack;
  s.last_seen = std::chrono::steady_clock::now();
  s.last_report = events_->Now();
  AgentWelcome welcome;
  welcome.session = s.id;
  welcome.heartbeat_interval_s = heartbeat_interval();
  welcome.fence_after_s = options_.fence_after_s;
  welcome.kill_jobs = events_->Reconcile(name, hello.running);
  PHX_LOG(kInfo) << "agent registered: node " << name << " at " << s.address << " (" << hello.running.size()
                 << " parts running, " << welcome.kill_jobs.size() << " to kill, version " << hello.version << ")";
  events_->AgentBack(name, "agent registered");
  return welcome;
}

void AgentSessions::Welcome(const std::shared_ptr<AgentLink>& link, const AgentWelcome& welcome) {
  link->Send(MakeWelcomeCommand(welcome));
}

void AgentSessions::Attach(const std::shared_ptr<AgentLink>& link, const std::string& peer,
                           const AgentMessage& report) {
  // To the registration whose session the report carries (the agent called Register; its hello,
  // if any, repeats that request), or a hello registers now.
  const AgentHello* hello = std::get_if<AgentHello>(&report.body);
  std::string name;
  for (const auto& [n, s] : nodes_) {
    if (!report.session.empty() && s.id == report.session) name = n;
  }
  if (!name.empty() && hello != nullptr && hello->node != name) name.clear();
  AgentWelcome welcome;
  if (!name.empty()) {
    welcome.session = report.session;
    welcome.heartbeat_interval_s = heartbeat_interval();
    welcome.fence_after_s = options_.fence_after_s;
  } else if (hello != nullptr) {
    auto registered = Register(*hello, peer);
    if (!registered) {
      link->Close(ToGrpcStatus(registered.error()));
      return;
    }
    welcome = std::move(*registered);
    name = hello->node;
  } else {
    link->Close(
        grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "unknown session: register first (Register, or a hello)"));
    return;
  }
  Session& s = nodes_.at(name);
  if (s.link && s.link != link) s.link->Close(grpc::Status(grpc::StatusCode::ABORTED, "superseded by a new stream"));
  s.link = link;
  s.grace->cancel();
  if (!s.agent_ok) {
    s.agent_ok = true;
    events_->AgentBack(name, "agent stream attached");
  }
  Welcome(link, welcome);
  // Commands that waited for a stream, in order; their parts are now delivered.
  std::deque<v1::DaemonCommand> out;
  out.swap(s.outbox);
  for (v1::DaemonCommand& c : out) {
    if (c.has_launch()) events_->LaunchDelivered(name, c.launch().job_id());
    Send(name, std::move(c));
  }
  PHX_LOG(kInfo) << "agent stream attached: node " << name << " (" << out.size() << " queued commands delivered)";
  s.last_seen = std::chrono::steady_clock::now();
  s.last_report = events_->Now();
  if (hello == nullptr) Report(link, peer, report);  // a first report with content
}

void AgentSessions::Report(const std::shared_ptr<AgentLink>& link, const std::string& peer,
                           const AgentMessage& report) {
  if (!events_->Serving()) return;
  // Which node is this stream? Attached streams are found by pointer.
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.second.link == link; });
  if (it == nodes_.end()) return Attach(link, peer, report);
  const std::string name = it->first;
  Session& s = it->second;
  if (!report.session.empty() && report.session != s.id) {
    // Once per report: an agent stuck on an old session would write a line per message.
    static RateLimitedLog stale_log;
    stale_log.Log(LogLevel::kWarn, "stale:" + name, "node " + name + ": report with a stale session ignored");
    return;
  }
  s.last_seen = std::chrono::steady_clock::now();
  s.last_report = events_->Now();
  if (const auto* hello = std::get_if<AgentHello>(&report.body)) {
    // Re-registration on the same stream.
    s.link.reset();
    auto registered = Register(*hello, peer);
    if (!registered) {
      link->Close(ToGrpcStatus(registered.error()));
      return;
    }
    nodes_.at(name).link = link;
    Welcome(link, *registered);
  } else if (const auto* heartbeat = std::get_if<AgentHeartbeat>(&report.body)) {
    if (s.wants_heartbeat_ack) link->Send(MakeHeartbeatAckCommand(heartbeat->time));
    events_->Heartbeat(name, *heartbeat);
  } else if (const auto* exit = std::get_if<PartExit>(&report.body)) {
    events_->PartExited(name, *exit);
  } else if (const auto* checkpoint = std::get_if<AgentCheckpoint>(&report.body)) {
    events_->CheckpointReported(name, *checkpoint);
  }
}

void AgentSessions::StreamClosed(const std::shared_ptr<AgentLink>& link) {
  for (auto& [name, s] : nodes_) {
    if (s.link != link) continue;
    s.link.reset();
    if (stopped_) return;
    // A fencing agent may be alive but cut off: it stops its parts fence_after_s after its last
    // contact, which is computed against heartbeat_timeout + grace from there.
    double wait = options_.agent_grace_s;
    if (options_.fence_after_s > 0 && s.agent_ok && s.wants_heartbeat_ack) {
      const double since = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.last_seen).count();
      wait = std::max(wait, options_.heartbeat_timeout_s + options_.agent_grace_s - since);
    }
    PHX_LOG(kWarn) << "agent stream of node " << name << " closed; node goes down in " << wait
                   << " s unless it reconnects";
    ArmGrace(name, wait, "its agent's stream broke");
    return;
  }
}

// ---- commands ----------------------------------------------------------------------------

bool AgentSessions::Send(const std::string& node, v1::DaemonCommand cmd) {
  Session& s = nodes_.at(node);
  if (s.link && !s.link->closed() && s.link->Send(cmd)) return true;
  s.outbox.push_back(std::move(cmd));  // delivered when the agent's stream (re)attaches
  return false;
}

void AgentSessions::TakeBackLaunches(const std::string& node, JobId job) {
  std::erase_if(nodes_.at(node).outbox,
                [job](const v1::DaemonCommand& c) { return c.has_launch() && c.launch().job_id() == job; });
}

// ---- grace periods and heartbeats --------------------------------------------------------

void AgentSessions::ArmGrace(const std::string& node, double seconds, const std::string& why) {
  Session& s = nodes_.at(node);
  s.grace->expires_after(Millis(seconds));
  s.grace->async_wait([this, node, why](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    Lost(node, why);
  });
}

void AgentSessions::Lost(const std::string& node, const std::string& why) {
  Session& s = nodes_.at(node);
  if (s.link && !s.link->closed()) return;  // came back meanwhile
  PHX_LOG(kWarn) << "node " << node << " down: " << why;
  s.link.reset();
  s.agent_ok = false;
  s.unconfirmed = false;
  s.outbox.clear();
  events_->AgentLost(node, why);
}

void AgentSessions::ArmHeartbeatTimer() {
  heartbeat_timer_.expires_after(Millis(std::max(0.05, options_.heartbeat_interval_s / 2)));
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    CheckHeartbeats();
    ArmHeartbeatTimer();
  });
}

void AgentSessions::CheckHeartbeats() {
  const auto now = std::chrono::steady_clock::now();
  const auto limit = Millis(options_.heartbeat_timeout_s);
  for (auto& [name, s] : nodes_) {
    if (!s.agent_ok || now - s.last_seen <= limit) continue;
    if (s.link) {
      PHX_LOG(kWarn) << "node " << name << ": no report for " << options_.heartbeat_timeout_s
                     << " s; closing its stream";
      s.link->Close(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "no heartbeat"));
      s.link.reset();
      ArmGrace(name, options_.agent_grace_s, "no heartbeat from its agent");
    } else if (s.grace->expiry() <= std::chrono::steady_clock::now()) {
      // Registered but never attached a stream.
      ArmGrace(name, 0, "its agent registered but never connected");
    }
  }
}

}  // namespace phalanx::service
