// Agent: phalanx-agent put together. Owns an Asio io_context on one thread (the PartSupervisor,
// the heartbeat timer and all agent state live there) and a DaemonLink (its own thread; gRPC
// callbacks are posted onto the io thread).
//
// Protocol (proto/phalanx/v1/phalanx.proto, service Agents):
//   - Register and the stream's hello list this node's GPUs and the parts still running (and
//     ended ones whose ExitStored has not come, see below); the parts in
//     RegisterResponse.kill_jobs (and in the stream's welcome) are stopped with reason
//     "killed". heartbeat_interval_s > 0 in either replaces the configured interval.
//   - Heartbeat{time, running} every interval, and right after each launch.
//   - PartExited and CheckpointReport as they happen, re-sent on the next stream until done (so
//     the daemon may see one twice: it dedupes on launch_id). A CheckpointReport is done once
//     written to a stream. A PartExited is done once the daemon answers it with ExitStored (it
//     has stored the outcome): until then the ended part keeps its record and files, and
//     Register lists it, so that a daemon killed before its commit learns the exit after its
//     restart; then the part is forgotten. A daemon whose registration answer lacks
//     stores_exits (an older one) sends no ExitStored: its PartExited is done once written.
//   - launch -> PartSupervisor::Launch; a failure is reported as PartExited{exit_code 127,
//     reason "launch failed: <why>"}. A launch_id already known here is ignored. A launch whose
//     GPUs an earlier part still holds (in its kill grace) waits until that part has exited
//     (listed with pid 0 meanwhile; see part_supervisor.h); the command is kept in the state dir
//     so that a restarted agent queues it again.
//     signal -> Signal(job, launch_id, signal, checkpoint); kill -> Stop(job, launch_id, grace_s,
//     "killed"): launch_id 0 means every part of the job (for signals: those not being stopped).
//     Each part's PartExited carries its own launch_id.
//   - Fence (docs/agent.md "When the agent is cut off"): the registration asks for HeartbeatAck
//     and gets fence_after_s; every message from the daemon is a contact (FenceTimer). After
//     fence_after_s without one, every running part is stopped (TERM, KILL after kill_grace)
//     with reason "fenced: no contact with phalanxd for N s", reported like any other end once
//     the link is back. fence_after_s 0 (an older daemon, agents.fence: false): never.
// Thread-safety: Start/Stop/Running are thread-safe; everything else runs on the io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/daemon_link.h"
#include "agent/fence_timer.h"
#include "agent/gpu_discovery.h"
#include "agent/part_supervisor.h"
#include "agent/user_identity.h"

namespace phalanx::agent {

struct AgentOptions {
  std::string node;
  std::string address;  // RegisterRequest.address ("" : the daemon uses the connection's peer)
  std::string state_dir;
  LinkOptions link;
  GpuDiscoveryOptions gpus;
  IdentityPolicy identity;
  SupervisorOptions supervisor;
  std::chrono::milliseconds heartbeat{10'000};
  std::chrono::milliseconds kill_grace{30'000};  // for RegisterResponse.kill_jobs
  // Keepers take their job down after this long without an agent (TERM, then KILL after
  // kill_grace); an agent restarted sooner re-adopts them. 0: never (docs/agent.md).
  std::chrono::milliseconds orphan_grace{30'000};
  std::string version = "phalanx-agent";
};

class Agent {
 public:
  // Opens the state dir and takes its lock (fails when another agent holds it), discovers the
  // GPUs, prepares the link. Starts nothing.
  static Result<std::unique_ptr<Agent>> Create(AgentOptions options);
  ~Agent();  // Stop()

  void Start();  // adopts the parts of the state dir, then connects
  void Stop();   // disconnects and releases the state dir's lock; the parts keep running (a
                 // next agent re-adopts them; their keepers stop them after the orphan grace)

  const GpuInventory& gpus() const { return gpus_; }
  std::vector<PartInfo> Running();  // empty unless started

 private:
  Agent(AgentOptions options, PartStateDir state, GpuInventory gpus, int lock_fd);
  template <typename F>
  auto OnIo(F f);  // runs f on the io thread and waits for its result
  template <typename F>
  void Guarded(F f);  // posts f to the io thread; dropped there if Stop already ran

  v1::RegisterRequest Hello();
  void ApplyWelcome(const v1::RegisterResponse& welcome);
  void OnConnected(uint64_t generation);
  void OnCommand(const v1::DaemonCommand& command);
  void OnLaunch(const v1::LaunchCommand& launch);
  void RequeuePending();  // launches that waited for GPUs when the previous agent stopped
  void OnDelivered(uint64_t token);
  void OnExitStored(const v1::ExitStored& stored);
  void Report(v1::AgentReport report, LaunchId forget_when_done);
  void Heartbeat();
  void ArmHeartbeat();
  void Contact();
  void ArmFence();
  void FenceParts();

  AgentOptions options_;
  GpuInventory gpus_;
  int lock_fd_ = -1;  // holds PartStateDir::AgentLockPath() from Create until Stop
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::unique_ptr<PartSupervisor> supervisor_;  // io thread; null once stopping
  std::unique_ptr<DaemonLink> link_;
  std::thread io_thread_;
  bool started_ = false;  // guarded by being set/cleared by Start/Stop only

  // io thread only:
  struct Pending {
    v1::AgentReport report;
    LaunchId forget = 0;      // a PartExited: Forget this launch once done (see above)
    uint64_t generation = 0;  // the stream it was last handed to (0: none)
  };
  std::map<uint64_t, Pending> pending_;  // by token, in creation order
  // The last registration's answer had stores_exits: PartExited waits for ExitStored.
  bool daemon_stores_exits_ = false;
  uint64_t next_token_ = 1;
  std::chrono::milliseconds heartbeat_;
  // The last message from the daemon (or the stream's start): with no answer to three
  // heartbeats the stream is dropped, so a stopped leader is left for the next address.
  std::chrono::steady_clock::time_point last_heard_{};
  boost::asio::steady_timer heartbeat_timer_;
  FenceTimer fence_;
  boost::asio::steady_timer fence_timer_;
};

}  // namespace phalanx::agent
