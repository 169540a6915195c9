#include "agent/agent_flags.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>

namespace phalanx::agent {

const char* const kAgentUsage =
    "usage: phalanx-agent --daemon HOST:PORT (--token-file F | --tls-ca F [--tls-cert F --tls-key F]) [options]\n"
    "       phalanx-agent checkpoint-done [--epoch N] [--path P]\n"
    "\n"
    "The Phalanx node agent: registers this node's GPUs with phalanxd, runs the job parts it is\n"
    "sent, and reports their exits and checkpoints. See docs/agent.md.\n"
    "\n"
    "  --daemon HOST:PORT   phalanxd's agent endpoint (required)\n"
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
    "  --allow-root-jobs    run jobs submitted by uid 0 (refused by default)\n"
    "  --nvml-library PATH  NVML to dlopen (default libnvidia-ml.so.1; \"none\" to skip)\n"
    "  --log-level L        debug, info, warn or error (default info)\n";

namespace {

Result<int64_t> Number(const std::string& flag, const std::string& value, int64_t lo, int64_t hi) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
    return Fail(flag, "'" + value + "' is not a whole number");
  }
  if (n < lo || n > hi) return Fail(flag, std::to_string(n) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return n;
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
    auto n = Number("--gpus", text, 0, 1024);
    if (!n) return std::unexpected(n.error());
    for (uint32_t i = 0; i < *n; ++i) out.push_back(i);
    return out;
  }
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    auto n = Number("--gpus", text.substr(start, comma == std::string::npos ? std::string::npos : comma - start), 0, 1023);
    if (!n) return std::unexpected(n.error());
    if (std::find(out.begin(), out.end(), *n) != out.end()) return Fail("--gpus", "GPU " + std::to_string(*n) + " is listed twice");
    out.push_back(static_cast<uint32_t>(*n));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<AgentFlags> ParseAgentFlags(std::span<const std::string> args) {
  static const std::map<std::string, bool> kFlags = {  // name -> takes a value
      {"daemon", true},     {"node", true},      {"token-file", true},    {"tls-ca", true},
      {"tls-cert", true},   {"tls-key", true},   {"gpus", true},          {"state-dir", true},
      {"heartbeat", true},  {"kill-grace", true}, {"allow-root-jobs", false}, {"nvml-library", true},
      {"log-level", true},  {"help", false},     {"address", true},       {"keepalive", true}};
  std::map<std::string, std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-h") arg = "--help";
    if (!arg.starts_with("--")) return Fail(arg, "unexpected argument (see --help)");
    std::string name = arg.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) value = name.substr(eq + 1), name = name.substr(0, eq);
    auto spec = kFlags.find(name);
    if (spec == kFlags.end()) return Fail("--" + name, "unknown option");
    if (seen.count(name) > 0) return Fail("--" + name, "given twice");
    if (spec->second && !inline_value) {
      if (i + 1 == args.size()) return Fail("--" + name, "needs a value");
      value = args[++i];
    } else if (!spec->second && inline_value) {
      return Fail("--" + name, "takes no value");
    }
    seen[name] = value;
  }
  AgentFlags flags;
  if (seen.count("help") > 0) {
    flags.help = true;
    return flags;
  }
  AgentOptions& o = flags.options;
  auto get = [&seen](const char* name) { auto it = seen.find(name); return it == seen.end() ? std::string() : it->second; };
  o.link.target = get("daemon");
  if (o.link.target.empty()) return Fail("--daemon", "required (HOST:PORT of phalanxd's agent endpoint)");
  if (auto s = CheckTarget(o.link.target); !s) return std::unexpected(s.error());
  o.node = seen.count("node") > 0 ? get("node") : ShortHostname();
  if (o.node.empty() || o.node.find('/') != std::string::npos) return Fail("--node", "'" + o.node + "' is not a node name");
  o.address = get("address");
  if (seen.count("address") > 0 && o.address.empty()) return Fail("--address", "must not be empty");
  o.link.token_file = get("token-file");
  o.link.tls_ca = get("tls-ca");
  o.link.tls_cert = get("tls-cert");
  o.link.tls_key = get("tls-key");
  if (o.link.tls_cert.empty() != o.link.tls_key.empty()) return Fail("--tls-cert", "--tls-cert and --tls-key go together");
  if (!o.link.tls_cert.empty() && o.link.tls_ca.empty()) return Fail("--tls-cert", "needs --tls-ca");
  if (o.link.token_file.empty() && o.link.tls_ca.empty()) return Fail("--token-file", "the daemon needs credentials: give --token-file or --tls-ca");
  if (seen.count("gpus") > 0) {
    auto gpus = ParseGpuList(get("gpus"));
    if (!gpus) return std::unexpected(gpus.error());
    o.gpus.declared = *gpus;
  }
  o.state_dir = seen.count("state-dir") > 0 ? get("state-dir") : "/var/lib/phalanx-agent/" + o.node;
  if (o.state_dir.empty() || o.state_dir[0] != '/') return Fail("--state-dir", "'" + o.state_dir + "' is not an absolute path");
  if (seen.count("heartbeat") > 0) {
    auto s = Number("--heartbeat", get("heartbeat"), 1, 3600);
    if (!s) return std::unexpected(s.error());
    o.heartbeat = std::chrono::seconds(*s);
  }
  if (seen.count("kill-grace") > 0) {
    auto s = Number("--kill-grace", get("kill-grace"), 0, 3600);
    if (!s) return std::unexpected(s.error());
    o.kill_grace = o.supervisor.walltime_grace = std::chrono::seconds(*s);
  }
  if (seen.count("keepalive") > 0) {
    auto s = Number("--keepalive", get("keepalive"), 0, 86400);
    if (!s) return std::unexpected(s.error());
    o.link.keepalive = std::chrono::seconds(*s);
  }
  o.identity.allow_root_jobs = seen.count("allow-root-jobs") > 0;
  if (seen.count("nvml-library") > 0) o.gpus.nvml_library = get("nvml-library") == "none" ? "" : get("nvml-library");
  if (seen.count("log-level") > 0) {
    auto level = ParseLogLevel(get("log-level"));
    if (!level) return std::unexpected(level.error());
    flags.log_level = *level;
  }
  return flags;
}

}  // namespace phalanx::agent
