// The sections of phalanxd's config that set up its own parts (daemon_config_yaml.h); the
// scheduling sections (scheduler, partitions, access) are read in daemon_config.cc.
#include <string>

#include "call_auth.h"
#include "service/daemon_config_yaml.h"
#include "service/store_space.h"

namespace phalanx::service::detail {

Status ParseUserLimits(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "user_limits.");
  Conv tc{t};
  UserLimits& u = c.user_limits;
  t.On("max_connections",
       [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &u.max_connections); });
  t.On("max_connections_per_uid",
       [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &u.max_connections_per_uid); });
  t.On("requests_per_second",
       [&](const YAML::Node& x, const std::string& key) { return tc.NonNegative(x, key, &u.requests_per_second); });
  t.On("request_burst", [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &u.request_burst); });
  t.On("idle_timeout",
       [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &u.idle_timeout_s); });
  t.On("exempt_uids", [&](const YAML::Node& x, const std::string& key) -> Status {
    if (x.IsNull()) {
      u.exempt_uids.clear();
      return {};
    }
    if (!x.IsSequence()) return tc.Bad(x, key, "a list of uids");
    u.exempt_uids.clear();
    for (const YAML::Node& n : x) {
      uint32_t uid = 0;
      if (auto st = tc.U32(n, key, &uid); !st) return st;
      u.exempt_uids.insert(uid);
    }
    return {};
  });
  return t.Run();
}

Status ParseStore(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "store.");
  Conv tc{t};
  t.On("path", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.db_path); });
  t.On("backend", [&](const YAML::Node& x, const std::string& key) -> Status {
    const auto backend = store::ParseBackend(Scalar(x));
    if (!backend) return tc.Bad(x, key, "sqlite or postgresql");
    if (*backend == store::Backend::kPostgres && !store::PostgresBuilt())
      return Fail(t.Where(x), key +
                                  ": postgresql: this phalanxd was built without the PostgreSQL backend "
                                  "(libpq-dev was not found when it was configured); use sqlite, or rebuild");
    c.store_backend = *backend;
    return {};
  });
  t.On("dsn", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.store_dsn); });
  t.On("lease", [&](const YAML::Node& x, const std::string& key) -> Status {
    double d = 0;
    if (auto st = tc.Seconds(x, key, &d); !st) return st;
    if (d < 1) return tc.Bad(x, key, "a number of seconds >= 1");
    c.store_lease_s = d;
    return {};
  });
  t.On("lease_renew", [&](const YAML::Node& x, const std::string& key) -> Status {
    double d = 0;
    if (auto st = tc.Seconds(x, key, &d); !st) return st;
    if (d < 0.1) return tc.Bad(x, key, "a number of seconds >= 0.1");
    c.store_lease_renew_s = d;
    return {};
  });
  t.On("standby", [&](const YAML::Node& x, const std::string& key) { return tc.Bool(x, key, &c.store_standby); });
  t.On("sync", [&](const YAML::Node& x, const std::string& key) -> Status {
    const std::string m = Scalar(x);
    if (m == "normal") c.sync = store::SyncMode::kNormal;
    else if (m == "full") c.sync = store::SyncMode::kFull;
    else return tc.Bad(x, key, "normal or full");
    return {};
  });
  t.On("min_free", [&](const YAML::Node& x, const std::string& key) -> Status {
    auto b = x.IsScalar() ? ParseByteSize(x.Scalar()) : std::unexpected(Error{"", ""});
    if (!b) return tc.Bad(x, key, "a size in bytes (a number, or with a unit: 64MiB, 512KiB, 2GiB; 0: off)");
    c.store_min_free = *b;
    return {};
  });
  return t.Run();
}

Status ParseTopologySection(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "topology.");
  Conv tc{t};
  t.On("source", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.topology); });
  t.On("format", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.topology_format); });
  return t.Run();
}

Status ParseUsersTcp(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "users_tcp.");
  Conv tc{t};
  UserTcpConfig& u = c.users_tcp;
  t.On("listen", [&](const YAML::Node& x, const std::string& key) -> Status {
    PHX_RETURN_IF_ERROR(tc.Str(x, key, &u.listen));
    if (!u.listen.empty() && !auth::HaveMunge())
      return Fail(t.Where(x), key +
                                  ": this phalanxd was built without libmunge (libmunge-dev was not installed "
                                  "when it was configured): install it and rebuild to serve users over TCP");
    return {};
  });
  t.On("tls_cert", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &u.tls_cert); });
  t.On("tls_key", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &u.tls_key); });
  t.On("munge_socket", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &u.munge_socket); });
  return t.Run();
}

Status ParseAgents(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "agents.");
  Conv tc{t};
  AgentListenerConfig& a = c.agents;
  t.On("listen", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.listen); });
  t.On("token_file", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.token_file); });
  t.On("tls_cert", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.tls_cert); });
  t.On("tls_key", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.tls_key); });
  t.On("tls_client_ca", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &a.tls_client_ca); });
  t.On("heartbeat_interval",
       [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.heartbeat_interval_s); });
  t.On("heartbeat_timeout",
       [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.heartbeat_timeout_s); });
  t.On("grace", [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.agent_grace_s); });
  t.On("startup_grace",
       [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.startup_grace_s); });
  t.On("kill_grace", [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.kill_grace_s); });
  t.On("fence", [&](const YAML::Node& x, const std::string& key) -> Status {
    bool on = false;
    PHX_RETURN_IF_ERROR(tc.Bool(x, key, &on));
    c.fence = on;
    return Status{};
  });
  t.On("fence_margin",
       [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.fence_margin_s); });
  t.On("master_port_min",
       [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &c.master_port_min, 65535); });
  t.On("master_port_max",
       [&](const YAML::Node& x, const std::string& key) { return tc.U32(x, key, &c.master_port_max, 65535); });
  return t.Run();
}

Status ParseSlurm(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "slurm.");
  Conv tc{t};
  SlurmSection& sl = c.slurm;
  t.On("conf", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.conf); });
  t.On("topology", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.topology); });
  t.On("gres", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.gres); });
  t.On("poll_interval",
       [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &sl.poll_interval_s); });
  t.On("fallback_delay",
       [&](const YAML::Node& x, const std::string& key) { return tc.WholeSeconds(x, key, &sl.fallback_delay_s); });
  t.On("start_timeout",
       [&](const YAML::Node& x, const std::string& key) { return tc.WholeSeconds(x, key, &sl.start_timeout_s); });
  t.On("comments", [&](const YAML::Node& x, const std::string& key) { return tc.Bool(x, key, &sl.comments); });
  t.On("report_socket", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.report_socket); });
  t.On("report_listen", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.report_listen); });
  t.On("munge_socket", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &sl.munge_socket); });
  for (auto [name, list] : {std::pair{"partitions", &sl.partitions}, std::pair{"qos", &sl.qos},
                            std::pair{"report_users", &sl.report_users}}) {
    t.On(name, [&tc, list](const YAML::Node& x, const std::string& key) { return NameList(tc, x, key, list); });
  }
  return t.Run();
}

Status ParseHttp(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "http.");
  Conv tc{t};
  t.On("listen", [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.http_listen); });
  t.On("admin_token_file",
       [&](const YAML::Node& x, const std::string& key) { return tc.Str(x, key, &c.http.admin_token_file); });
  t.On("allowed_hosts",
       [&](const YAML::Node& x, const std::string& key) { return NameList(tc, x, key, &c.http.allowed_hosts); });
  t.On("allowed_origins",
       [&](const YAML::Node& x, const std::string& key) { return NameList(tc, x, key, &c.http.allowed_origins); });
  return t.Run();
}

Status ParseHistory(const YAML::Node& v, const std::string& file, DaemonConfig& c) {
  Section t(v, file, "history.");
  Conv tc{t};
  t.On("interval",
       [&](const YAML::Node& x, const std::string& key) { return tc.Seconds(x, key, &c.history_interval_s); });
  t.On("retention",
       [&](const YAML::Node& x, const std::string& key) { return tc.WholeSeconds(x, key, &c.history_retention_s); });
  return t.Run();
}

}  // namespace phalanx::service::detail
