// AgentSessions: phalanxd's connections to its node agents -- who is registered (a session per
// registration), which Connect stream belongs to which node, commands queued while a node has no
// stream (its outbox), heartbeats, and the grace periods after which a node whose agent is gone
// goes down. What the agents report about their parts goes to Events (the AgentExecutor).
//
// Protocol (docs/daemon.md, "Agents"): Register gives a session (and reconciles what the node
// runs); the first report on a Connect stream carries that session, or a hello that registers
// now, and attaches the stream: the node gets `welcome`, then its outbox in order. A report
// with another session is stale (ignored). A stream that breaks, or no report for
// `heartbeat_timeout_s`, starts the node's grace period (`agent_grace_s`; `startup_grace_s` for
// nodes with jobs after a restart); when it expires without the agent back, Events::AgentLost.
// Thread-safety: none; every method, and the timers, run on the io thread. Start after the
// io thread runs; Stop before it ends.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/common/time.h"
#include "phalanx/v1/phalanx.pb.h"
#include "service/agent_messages.h"
#include "service/out_stream.h"
#include "service/reply.h"

namespace phalanx::service {

using AgentLink = OutStream<v1::DaemonCommand>;

class AgentSessions {
 public:
  struct Options {
    double heartbeat_interval_s = 10;
    double heartbeat_timeout_s = 30;
    double agent_grace_s = 60;
    double startup_grace_s = 120;
    // > 0: agents stop their parts after this long without contact (RegisterResponse
    // fence_after_s; their heartbeats are acked). A broken stream then downs the node only
    // heartbeat_timeout_s + agent_grace_s after the agent's last report (not agent_grace_s after
    // the break), the time the fence is computed for (FenceAfterSeconds), for agents that fence
    // (their registration asked for HeartbeatAck).
    int64_t fence_after_s = 0;
  };
  // What the sessions need from, and tell, the executor. Called on the io thread.
  class Events {
   public:
    virtual ~Events() = default;
    // OK, or why phalanxd does not serve (registrations are refused, reports ignored).
    virtual CallStatus Serving() const = 0;
    virtual Time Now() = 0;
    // A registration of `node`: reconcile what it runs; returns the jobs it must kill.
    virtual std::vector<JobId> Reconcile(const std::string& node, const std::vector<PartRef>& running) = 0;
    // The node's agent is there now (registered, or a stream attached after it was lost).
    virtual void AgentBack(const std::string& node, const std::string& why) = 0;
    // Its grace period expired: the node's agent is gone (its session and outbox are).
    virtual void AgentLost(const std::string& node, const std::string& why) = 0;
    // A queued launch of `job` is being delivered on the node's new stream.
    virtual void LaunchDelivered(const std::string& node, JobId job) = 0;
    virtual void Heartbeat(const std::string& node, const AgentHeartbeat& heartbeat) = 0;
    virtual void PartExited(const std::string& node, const PartExit& exit) = 0;
    virtual void CheckpointReported(const std::string& node, const AgentCheckpoint& checkpoint) = 0;
  };

  // `gpus`: every node's name and GPU count (registrations naming other nodes are refused);
  // `unconfirmed`: nodes with jobs after a restart, whose agents get `startup_grace_s`.
  AgentSessions(boost::asio::io_context& io, const std::map<std::string, uint32_t>& gpus,
                const std::set<std::string>& unconfirmed, Options options, Events* events);
  ~AgentSessions();
  AgentSessions(const AgentSessions&) = delete;
  AgentSessions& operator=(const AgentSessions&) = delete;

  // Arms the heartbeat timer and the unconfirmed nodes' grace periods.
  void Start();
  // Cancels the timers, closes every stream (UNAVAILABLE); later reports are ignored.
  void Stop();

  // Register: a new session for the node (its previous stream is closed as superseded);
  // `peer` is the address the agent connects from. Fails: not serving; NOT_FOUND for a node
  // that is not in the topology.
  CallResult<AgentWelcome> Register(const AgentHello& hello, const std::string& peer);
  // A report on a Connect stream (the first one attaches the stream; see above). A stream that
  // cannot be attached is closed.
  void Report(const std::shared_ptr<AgentLink>& link, const std::string& peer, const AgentMessage& report);
  void StreamClosed(const std::shared_ptr<AgentLink>& link);

  // Writes `cmd` to the node's stream: true; false: queued until a stream attaches.
  bool Send(const std::string& node, v1::DaemonCommand cmd);
  // Drops the queued (undelivered) launches of `job` for the node.
  void TakeBackLaunches(const std::string& node, JobId job);
  // The node's agent address (MASTER_ADDR), or its name when it has not given one.
  std::string AddressOf(const std::string& node) const;

  bool agent_ok(const std::string& node) const { return at(node).agent_ok; }
  bool unconfirmed(const std::string& node) const { return at(node).unconfirmed; }
  bool connected(const std::string& node) const;
  Time last_report(const std::string& node) const { return at(node).last_report; }
  size_t connected_count() const;

 private:
  struct Session {
    std::shared_ptr<AgentLink> link;   // the Connect stream, when attached
    std::string id;                    // the current registration's
    std::string address;               // for MASTER_ADDR
    uint32_t gpus = 0;                 // in the topology
    bool agent_ok = false;             // registered and not lost
    bool unconfirmed = false;          // after a restart: jobs run here, agent not back yet
    bool wants_heartbeat_ack = false;  // its registration asked for HeartbeatAck
    Time last_report = 0;              // Unix seconds, for ListNodes
    std::chrono::steady_clock::time_point last_seen{};
    std::deque<v1::DaemonCommand> outbox;  // commands waiting for a stream
    std::unique_ptr<boost::asio::steady_timer> grace;
  };

  const Session& at(const std::string& node) const { return nodes_.at(node); }
  // The first report on a stream: attach it to its node, welcome, deliver the outbox.
  void Attach(const std::shared_ptr<AgentLink>& link, const std::string& peer, const AgentMessage& report);
  void Welcome(const std::shared_ptr<AgentLink>& link, const AgentWelcome& welcome);
  int64_t heartbeat_interval() const;
  void ArmGrace(const std::string& node, double seconds, const std::string& why);
  void Lost(const std::string& node, const std::string& why);
  void ArmHeartbeatTimer();
  void CheckHeartbeats();

  const Options options_;
  Events* const events_;
  std::map<std::string, Session> nodes_;
  boost::asio::steady_timer heartbeat_timer_;
  bool stopped_ = false;
};

}  // namespace phalanx::service
