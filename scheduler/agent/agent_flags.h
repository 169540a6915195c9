// Command-line flags of phalanx-agent -> AgentOptions.
//
//   --daemon HOST:PORT     phalanxd's agent endpoint (required)
//   --node NAME            this node's name in the topology (default: the short hostname)
//   --address ADDR         how other nodes reach this one (MASTER_ADDR); default: as the daemon sees it
//   --token-file FILE      shared token, sent as "authorization: Bearer <token>"
//   --tls-ca FILE          TLS: CA to verify the daemon; --tls-cert/--tls-key: client cert (mTLS)
//   --gpus N|LIST          GPUs to declare when NVML is unavailable: a count or indices "0,1,3"
//   --state-dir DIR        default /var/lib/phalanx-agent/<node>
//   --heartbeat S          seconds between heartbeats (default 10; the daemon may override)
//   --kill-grace S         SIGTERM -> SIGKILL grace at the walltime and for unknown parts (30)
//   --keepalive S          gRPC keepalive ping interval (default 300; 0 off)
//   --orphan-grace S       keepers stop their job after this long without an agent (30; 0 never)
//   --allow-root-jobs      permit jobs with uid 0 (refused by default)
//   --nvml-library PATH    default libnvidia-ml.so.1; "none" skips NVML
//   --log-level L          debug | info | warn | error (default info)
// At least one of --token-file and --tls-ca is required; --tls-cert and --tls-key go together.
// Thread-safety: pure functions (ParseAgentFlags reads the hostname).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "core/common/result.h"
#include "util/log.h"

namespace phalanx::agent {

struct AgentFlags {
  AgentOptions options;
  LogLevel log_level = LogLevel::kInfo;
  bool help = false;
};

extern const char* const kAgentUsage;

// Flags as util/flags.h parses them (--flag VALUE or --flag=VALUE, each at most once). Fails
// with where = the flag: unknown flag, missing value, a flag given twice, a stray argument, bad
// number, bad HOST:PORT, no credentials, --tls-cert without --tls-key (or the reverse), a
// relative --state-dir.
Result<AgentFlags> ParseAgentFlags(std::span<const std::string> args);

// "8" -> 0..7; "0,1,3" -> {0,1,3}. Fails on anything else (and on duplicates).
Result<std::vector<uint32_t>> ParseGpuList(const std::string& text);

}  // namespace phalanx::agent
