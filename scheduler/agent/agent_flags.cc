#include "agent/agent_flags.h"

#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "util/flags.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx::agent {

const char* const kAgentUsage =
    "usage: phalanx-agent --daemon HOST:PORT[,HOST:PORT...] (--token-file F | --tls-ca F [--tls-cert F --tls-key F]) "
    "[options]\n"
    "       phalanx-agent checkpoint-done [--epoch N] [--path P]\n"
    "\n"
    "The Phalanx node agent: registers this node's GPUs with phalanxd, runs the job parts it is\n"
    "sent, and reports their exits and checkpoints. See docs/agent.md.\n"
    "\n"
    "  --daemon HOST:PORT   phalanxd's agent endpoint (required); a comma-separated list for a\n"
    "                       leader and its standbys: the agent finds whichever leads\n"
    "  --node NAME          this node's name in the topology (default: the short hostname)\n"
    "  --address ADDR       how other nodes reach this one (default: as the daemon sees it)\n"
    "  --token-file FILE    shared token, sent as \"authorization: Bearer <token>\"\n"
    "  --tls-ca FILE        use TLS, verifying the daemon with this CA\n"
    "  --tls-cert FILE      client certificate (with --tls-key) for mutual TLS\n"
    "  --tls-key FILE       client key\n"
    "  --gpus N|LIST        GPUs to declare when NVML is unavailable (\"8\" or \"0,1,3\")\n"
    "  --state-dir DIR      running parts survive agent restarts here (/var/lib/phalanx-agent/NODE)\n"
    "  --heartbeat S        seconds between heartbeats (default 10)\n"
    "  --kill-grace S       seconds from SIGTERM to SIGKILL at the walltime (default 30)\n"
    "  --keepalive S        seconds between gRPC keepalive pings (default 300; 0: none)\n"
    "  --orphan-grace S     a job part whose agent is gone this long is stopped by its keeper\n"
    "                       (SIGTERM, SIGKILL after --kill-grace; default 30; 0: never)\n"
    "  --allow-root-jobs    run jobs submitted by uid 0 (refused by default)\n"
    "  --nvml-library PATH  NVML to dlopen (default libnvidia-ml.so.1; \"none\" to skip)\n"
    "  --log-level L        debug, info, warn or error (default info)\n";

namespace {

// A whole number in [lo, hi]; errors name the flag and the value.
Result<int64_t> Number(std::string_view flag, std::string_view value, int64_t lo, int64_t hi) {
  auto n = ParseWholeNumber<int64_t>(flag, value);
  PHX_RETURN_IF_ERROR(n);
  if (*n < lo || *n > hi) {
    return Fail(std::string(flag),
                std::to_string(*n) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return *n;
}

Status CheckTarget(const std::string& target) {
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos || colon == 0) return Fail("--daemon", "'" + target + "' is not HOST:PORT");
  if (auto port = Number("--daemon", target.substr(colon + 1), 1, 65535); !port) {
    return Fail("--daemon", "'" + target + "': port " + port.error().message);
  }
  return {};
}

std::string ShortHostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  std::string name = buf;
  return name.substr(0, name.find('.'));
}

}  // namespace

Result<std::vector<uint32_t>> ParseGpuList(const std::string& text) {
  std::vector<uint32_t> out;
  if (text.find(',') == std::string::npos) {
    PHX_ASSIGN_OR_RETURN(auto n, Number("--gpus", text, 0, 1024));
    for (uint32_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::string_view item : Split(text, ',')) {
    auto n = Number("--gpus", item, 0, 1023);
    PHX_RETURN_IF_ERROR(n);
    if (std::find(out.begin(), out.end(), *n) != out.end())
      return Fail("--gpus", "GPU " + std::to_string(*n) + " is listed twice");
    out.push_back(static_cast<uint32_t>(*n));
  }
  return out;
}

Result<AgentFlags> ParseAgentFlags(std::span<const std::string> args) {
  static constexpr FlagSpec kFlags[] = {
      {"daemon", "HOST:PORT", ""}, {"node", "NAME", ""},    {"token-file", "FILE", ""},  {"tls-ca", "FILE", ""},
      {"tls-cert", "FILE", ""},    {"tls-key", "FILE", ""}, {"gpus", "N|LIST", ""},      {"state-dir", "DIR", ""},
      {"heartbeat", "S", ""},      {"kill-grace", "S", ""}, {"allow-root-jobs", "", ""}, {"nvml-library", "PATH", ""},
      {"log-level", "L", ""},      {"help", "", ""},        {"address", "ADDR", ""},     {"keepalive", "S", ""},
      {"orphan-grace", "S", ""}};
  auto parsed = ParseFlags(args, kFlags, /*allow_positional=*/false);
  PHX_RETURN_IF_ERROR(parsed);
  const ParsedFlags& given = *parsed;
  AgentFlags flags;
  if (given.Has("help")) {
    flags.help = true;
    return flags;
  }
  AgentOptions& o = flags.options;
  o.link.target = given.Get("daemon");
  if (o.link.target.empty()) return Fail("--daemon", "required (HOST:PORT of phalanxd's agent endpoint)");
  for (std::string_view t : Split(o.link.target, ',')) PHX_RETURN_IF_ERROR(CheckTarget(std::string(Trim(t))));
  o.node = given.Has("node") ? given.Get("node") : ShortHostname();
  if (o.node.empty() || o.node.find('/') != std::string::npos)
    return Fail("--node", "'" + o.node + "' is not a node name");
  o.address = given.Get("address");
  if (given.Has("address") && o.address.empty()) return Fail("--address", "must not be empty");
  o.link.token_file = given.Get("token-file");
  o.link.tls_ca = given.Get("tls-ca");
  o.link.tls_cert = given.Get("tls-cert");
  o.link.tls_key = given.Get("tls-key");
  if (o.link.tls_cert.empty() != o.link.tls_key.empty())
    return Fail("--tls-cert", "--tls-cert and --tls-key go together");
  if (!o.link.tls_cert.empty() && o.link.tls_ca.empty()) return Fail("--tls-cert", "needs --tls-ca");
  if (o.link.token_file.empty() && o.link.tls_ca.empty())
    return Fail("--token-file", "the daemon needs credentials: give --token-file or --tls-ca");
  if (given.Has("gpus")) {
    PHX_ASSIGN_OR_RETURN(auto gpus, ParseGpuList(given.Get("gpus")));
    o.gpus.declared = gpus;
  }
  o.state_dir = given.Has("state-dir") ? given.Get("state-dir") : "/var/lib/phalanx-agent/" + o.node;
  if (o.state_dir.empty() || o.state_dir[0] != '/')
    return Fail("--state-dir", "'" + o.state_dir + "' is not an absolute path");
  if (given.Has("heartbeat")) {
    PHX_ASSIGN_OR_RETURN(auto s, Number("--heartbeat", given.Get("heartbeat"), 1, 3600));
    o.heartbeat = std::chrono::seconds(s);
  }
  if (given.Has("kill-grace")) {
    PHX_ASSIGN_OR_RETURN(auto s, Number("--kill-grace", given.Get("kill-grace"), 0, 3600));
    o.kill_grace = o.supervisor.walltime_grace = std::chrono::seconds(s);
  }
  if (given.Has("orphan-grace")) {
    PHX_ASSIGN_OR_RETURN(auto s, Number("--orphan-grace", given.Get("orphan-grace"), 0, 86400));
    o.orphan_grace = std::chrono::seconds(s);
  }
  if (given.Has("keepalive")) {
    PHX_ASSIGN_OR_RETURN(auto s, Number("--keepalive", given.Get("keepalive"), 0, 86400));
    o.link.keepalive = std::chrono::seconds(s);
  }
  o.identity.allow_root_jobs = given.Has("allow-root-jobs");
  if (given.Has("nvml-library"))
    o.gpus.nvml_library = given.Get("nvml-library") == "none" ? "" : given.Get("nvml-library");
  if (given.Has("log-level")) {
    const auto level = ParseLogLevel(given.Get("log-level"));
    if (!level) return Fail("--log-level", "'" + given.Get("log-level") + "' is not one of debug, info, warn, error");
    flags.log_level = *level;
  }
  return flags;
}

}  // namespace phalanx::agent
