// What node agents tell phalanxd (the Agents service's RegisterRequest and AgentReport), as the
// daemon reads it: proto_convert.h converts the wire messages into these, AgentSessions and
// AgentExecutor act on them. docs/daemon.md, "Agents", describes the protocol.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/common/ids.h"
#include "service/running_parts.h"

namespace phalanx::service {

// A registration (Register, or a hello on the Connect stream).
struct AgentHello {
  std::string node;
  uint32_t gpus = 0;    // GPUs the agent found; 0: it did not say
  std::string address;  // MASTER_ADDR for jobs whose first node it is; empty: the peer's
  std::string version;
  std::vector<PartRef> running;      // parts that survived an agent or daemon restart
  bool wants_heartbeat_ack = false;  // the agent fences: answer its heartbeats (HeartbeatAck)
};

// The answer to a registration (RegisterResponse; the `welcome` command on a stream).
struct AgentWelcome {
  std::string session;
  int64_t heartbeat_interval_s = 0;
  std::vector<JobId> kill_jobs;  // parts the daemon does not run there: kill them
  int64_t fence_after_s = 0;     // the agent's fence (0: none); AgentSessions::Options
};

struct AgentHeartbeat {
  std::vector<PartRef> running;
  int64_t time = 0;  // the agent's clock (Unix seconds), echoed in HeartbeatAck
};

struct PartExit {
  PartRef part;
  int32_t exit_code = 0;  // -1 when killed by a signal
  int32_t term_signal = 0;
  std::string reason;  // "exited", "walltime", "killed", "launch failed: ...", ...
};

struct AgentCheckpoint {
  JobId job = kNoJob;
  uint64_t epoch = 0;  // 0: the one after the job's last
  std::string path;
};

// One report on a Connect stream; `body` is empty (monostate) when the agent sent none.
struct AgentMessage {
  std::string session;
  std::variant<std::monostate, AgentHello, AgentHeartbeat, PartExit, AgentCheckpoint> body;
};

}  // namespace phalanx::service
