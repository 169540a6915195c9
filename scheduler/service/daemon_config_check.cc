// The daemon configuration's checks across keys (ValidateDaemonConfig: run after the YAML file and the
// command line are both read) and the agents' fence time they derive (daemon_config.h).
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "call_auth.h"
#include "service/daemon_config.h"

namespace phalanx::service {

namespace {
double FenceRaw(const DaemonConfig& c) {
  return c.heartbeat_timeout_s + c.agent_grace_s - c.kill_grace_s - c.fence_margin_s;
}
std::string Num(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}
}  // namespace

int64_t FenceAfterSeconds(const DaemonConfig& c) {
  if (c.fence.has_value() && !*c.fence) return 0;
  const double raw = FenceRaw(c);
  return raw >= 1 ? static_cast<int64_t>(raw) : 0;
}

std::string FenceFormula(const DaemonConfig& c) {
  return "heartbeat_timeout + grace - kill_grace - fence_margin = " + Num(c.heartbeat_timeout_s) + " + " +
         Num(c.agent_grace_s) + " - " + Num(c.kill_grace_s) + " - " + Num(c.fence_margin_s) + " = " + Num(FenceRaw(c)) +
         " s";
}

Status ValidateDaemonConfig(const DaemonConfig& c) {
  const std::string where = c.config_path.empty() ? "config" : c.config_path;
  if (c.socket_path.empty()) return Fail(where, "socket: must not be empty");
  if (c.db_path.empty()) return Fail(where, "store.path: must not be empty");
  if (c.store_backend == store::Backend::kPostgres && c.store_dsn.empty())
    return Fail(where,
                "store.dsn: backend postgresql needs a libpq connection string (e.g. "
                "\"host=/run/postgresql dbname=phalanx\")");
  if (c.store_lease_renew_s * 2 > c.store_lease_s) {
    std::ostringstream m;
    m << "store.lease_renew: " << c.store_lease_renew_s << " s is more than half of store.lease (" << c.store_lease_s
      << " s): one late renewal would lose the lease";
    return Fail(where, m.str());
  }
  if (c.master_port_min == 0 || c.master_port_min > c.master_port_max)
    return Fail(where, "agents.master_port_min/max: need 0 < min <= max (got " + std::to_string(c.master_port_min) +
                           ".." + std::to_string(c.master_port_max) + ")");
  if (c.heartbeat_interval_s <= 0) return Fail(where, "agents.heartbeat_interval: must be > 0");
  if (c.heartbeat_timeout_s < c.heartbeat_interval_s)
    return Fail(where, "agents.heartbeat_timeout: must be at least heartbeat_interval");
  if (c.fence_margin_s < 0) return Fail(where, "agents.fence_margin: must be >= 0");
  if (c.fence.value_or(false) && FenceAfterSeconds(c) <= 0)
    return Fail(where, "agents.fence: the agents' fence would be " + FenceFormula(c) +
                           ", it must be at least 1 s: raise agents.grace or heartbeat_timeout, lower "
                           "kill_grace or fence_margin, or set fence: false");
  if (c.pass_interval_s <= 0) return Fail(where, "scheduler.pass_interval: must be > 0");
  if (c.history_interval_s > 0 && c.history_interval_s < 1)
    return Fail(where, "history.interval: must be 0 (off) or at least 1 second");
  if (c.user_limits.requests_per_second > 0 && c.user_limits.request_burst == 0)
    return Fail(where, "user_limits.request_burst: must be >= 1 when requests_per_second is set (0 turns both off)");
  if (c.mode == "slurm") {
    if (c.slurm.topology.empty()) return Fail(where, "slurm.topology: needed with mode: slurm (Slurm's topology.conf)");
    if (c.slurm.poll_interval_s <= 0) return Fail(where, "slurm.poll_interval: must be > 0");
    if (c.slurm.fallback_delay_s < 2 * c.slurm.poll_interval_s)
      return Fail(where, "slurm.fallback_delay: must be at least twice slurm.poll_interval");
    if (!c.agents.listen.empty()) return Fail(where, "agents.listen: there are no agents in mode: slurm");
    if (!c.slurm.report_socket.empty() && (c.slurm.report_socket[0] != '/' || c.slurm.report_socket.size() >= 108))
      return Fail(where, "slurm.report_socket: '" + c.slurm.report_socket +
                             "' must be an absolute path shorter than 108 bytes");
  }
  if (c.scheduler.default_walltime <= 0 || c.scheduler.max_walltime < c.scheduler.default_walltime)
    return Fail(where, "scheduler: need 0 < default_walltime <= max_walltime");
  std::vector<std::string> classes;
  for (const PriorityClassSpec& cls : c.scheduler.classes.classes) classes.push_back(cls.name);
  if (auto rules = AccessRules::Build(c.access, classes); !rules) return Fail(where, rules.error().ToString());
  for (const PartitionOptions& p : c.partitions) {
    if (!p.default_class.empty() && std::find(classes.begin(), classes.end(), p.default_class) == classes.end())
      return Fail(where, "partitions." + p.name + ".default_qos: unknown class '" + p.default_class + "'");
  }
  for (const std::string& o : c.http.allowed_origins) {
    if (!o.starts_with("http://") && !o.starts_with("https://"))
      return Fail(where, "http.allowed_origins: '" + o + "' is not an origin (http://host[:port] or https://...)");
  }
  const UserTcpConfig& u = c.users_tcp;
  if (u.tls_cert.empty() != u.tls_key.empty())
    return Fail(where, "users_tcp.tls_cert and users_tcp.tls_key go together");
  if (u.listen.empty() && !u.tls_cert.empty()) return Fail(where, "users_tcp.tls_cert: needs users_tcp.listen");
  if (!u.listen.empty() && !auth::HaveMunge())
    return Fail(where, "users_tcp.listen: this phalanxd was built without libmunge (install libmunge-dev, rebuild)");
  const AgentListenerConfig& a = c.agents;
  if (a.tls_cert.empty() != a.tls_key.empty()) return Fail(where, "agents.tls_cert and agents.tls_key go together");
  if (!a.tls_client_ca.empty() && a.tls_cert.empty())
    return Fail(where, "agents.tls_client_ca needs tls_cert and tls_key");
  if (!a.listen.empty() && a.token_file.empty() && a.tls_client_ca.empty())
    return Fail(where,
                "agents.listen: an agent listener needs a token_file or TLS client certificates (tls_client_ca)");
  return {};
}

}  // namespace phalanx::service
