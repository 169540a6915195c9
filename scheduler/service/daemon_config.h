// DaemonConfig: every option of phalanxd, with its default, read from a YAML file
// (config/phalanxd.example.yaml documents each) and overridden by command-line flags.
//
// Errors name the place and the key: "phalanxd.yaml:12: agents.grace: expected a number of
// seconds, got 'soon'", "phalanxd.yaml:3: unknown key 'sokcet'", "--agent-listen: ...".
// Nothing listens on TCP unless configured: the agent listener and the HTTP endpoint are off
// by default; an agent listener needs a token file or TLS client certificates.
// Thread-safety: plain values and pure functions (LoadDaemonConfig reads one file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "adapters/store/store.h"
#include "core/common/result.h"
#include "core/queue/access.h"
#include "core/sched/config.h"
#include "service/caller.h"
#include "service/user_limits.h"
#include "util/log.h"

namespace phalanx::service {

struct AgentListenerConfig {
  std::string listen;             // "host:port"; empty: no TCP listener for agents
  std::string token_file;         // shared secret ("authorization: Bearer <token>")
  std::string tls_cert, tls_key;  // server certificate and key (PEM): TLS when both are set
  std::string tls_client_ca;      // CA of agent certificates: mutual TLS (agents must present one)
};

// Users over TCP (docs/daemon.md, "Users over TCP"): gRPC for gsub/gq/... from other machines,
// each call authenticated by a MUNGE credential (service/call_authenticator.h). Off by default;
// refused when phalanxd was built without libmunge.
struct UserTcpConfig {
  std::string listen;             // "host:port"; empty: no TCP listener for users
  std::string tls_cert, tls_key;  // server certificate and key (PEM): TLS when both are set
  std::string munge_socket;       // munged's socket; empty: libmunge's default
};

// mode: slurm (docs/slurm.md): Slurm runs the jobs, Phalanx places the managed ones.
struct SlurmSection {
  std::string conf;      // slurm.conf for libslurm; empty: $SLURM_CONF or Slurm's default
  std::string topology;  // Slurm's topology.conf (the cluster's tree)
  std::string gres;      // gres.conf or slurm.conf (GPUs per node); empty: the node model's
  double poll_interval_s = 2;
  Duration fallback_delay_s = 30;            // the lease a managed job waits for phalanxd (job_submit.lua's)
  Duration start_timeout_s = 30;             // a released job Slurm has not started by then is taken back
  std::vector<std::string> partitions, qos;  // every job there is managed (besides --phx-* tags)
  bool comments = true;                      // Phalanx's wait reason into the job's Comment
  // The compute nodes' step reports (step_report_server.h): a Unix socket the SPANK plugin and
  // phalanx-ckpt-done send MUNGE-signed reports to; empty: none taken.
  std::string report_socket;
  std::string report_listen;              // the same over TCP, "ADDRESS:PORT" (numeric); empty: none
  std::string munge_socket;               // munged's socket; empty: libmunge's default
  std::vector<std::string> report_users;  // besides root and the job's owner (SlurmUser)
};

// Who may read the HTTP side (docs/http.md, "Access").
struct HttpAccessConfig {
  std::string admin_token_file;              // "Authorization: Bearer <token>": the admin view
  std::vector<std::string> allowed_hosts;    // Host names besides localhost, 127.0.0.1, ::1, the bound host
  std::vector<std::string> allowed_origins;  // Origins besides this server's own ("http://host:port")
};

// A partition's service-side options (its nodes, state and limits are the core's, in
// DaemonConfig::scheduler.partitions, in the same order).
struct PartitionOptions {
  std::string name;
  std::string default_class;  // jobs that name no --qos get it (empty: the class table's default)
  AccessList allow;           // users, groups, accounts allowed (Slurm's AllowGroups/AllowAccounts)
  bool restricted = false;    // any allow_* list given: only those (and admins) may submit
  std::string nodes_text;     // the hostlist as written (empty: every node)
};

struct DaemonConfig {
  std::string config_path;          // the file read, if any (for messages)
  std::string mode = "standalone";  // or "slurm": Slurm runs the jobs (the `slurm:` section)
  SlurmSection slurm;

  // Users' side.
  std::string socket_path = "/run/phalanx/phalanxd.sock";  // mode 0666, in a directory we create
  std::vector<std::string> admins;                         // user names that may act on every job (root always may)
  UserLimits user_limits;                 // per-uid connections and request rate, idle timeout (issue 12.1)
  std::vector<std::string> admin_groups;  // members of these groups are admins too
  PrivateData private_data;               // what others see of a job (caller.h)
  AccessConfig access;                    // who may use which class and account
  UserTcpConfig users_tcp;                // users from other machines (off by default)

  // State.
  std::string db_path = "/var/lib/phalanx/phalanxd.db";
  store::SyncMode sync = store::SyncMode::kNormal;
  // store.backend: sqlite (db_path, the default) or postgresql (store_dsn, a libpq connection
  // string). On PostgreSQL phalanxd takes the store's leadership lease at start and renews it
  // every store_lease_renew_s; while another phalanxd holds it, a standby (store_standby, the
  // default) refuses every call and tries again every store_lease_renew_s until it can take
  // over (docs/deployment.md, "High availability"); store_standby false: exit instead.
  store::Backend store_backend = store::Backend::kSqlite;
  std::string store_dsn;
  double store_lease_s = 10;
  double store_lease_renew_s = 2;
  bool store_standby = true;
  // Free-space reserve (store_space.h): user writes are refused below this many free bytes on
  // the store's file system; 0: off (a full disk then stops phalanxd at the failed commit).
  uint64_t store_min_free = uint64_t{64} << 20;
  std::string topology = "gen:demo";  // a file (any format topology_loader reads) or gen:NAME
  std::string topology_format = "auto";
  bool force_topology = false;  // start even if the topology changed under running jobs

  // Agents.
  AgentListenerConfig agents;
  double heartbeat_interval_s = 10;  // told to agents at registration
  double heartbeat_timeout_s = 30;   // no report for this long: the stream is considered broken
  double agent_grace_s = 60;         // a node whose agent is gone this long goes down
  double startup_grace_s = 120;      // after a (re)start: time for agents to come back
  uint32_t master_port_min = 29500;  // MASTER_PORT = min + job id mod (max - min + 1)
  uint32_t master_port_max = 29999;
  double kill_grace_s = 30;  // SIGTERM .. SIGKILL for kills, preemptions, cancels
  // Agent fencing (docs/agent.md "When the agent is cut off"): agents stop their parts after
  // FenceAfterSeconds() without contact. Unset: on when that is > 0 (off, with a warning at
  // start, for short test timeouts); true with a fence <= 0 is refused.
  std::optional<bool> fence;
  double fence_margin_s = 15;

  // Scheduling.
  std::string policy = "phalanx";  // preset (core/sched/config.h), then the knobs below
  SchedulerConfig scheduler;
  std::vector<PartitionOptions> partitions;  // `partitions:` (docs/daemon.md); empty: one "default"
  double pass_interval_s = 1;                // periodic pass (walltimes, deadlines, checkpoints)

  // Operations.
  LogLevel log_level = LogLevel::kInfo;
  std::string http_listen;  // "host:port" for /metrics, /healthz, /api/v1; empty: off
  HttpAccessConfig http;

  // History for dashboards (docs/monitoring.md): one sample of every series each interval,
  // kept in the store for `retention` seconds. interval 0: no sampling.
  double history_interval_s = 60;
  Duration history_retention_s = 30 * 86400;
};

// Reads `path` over the defaults (a missing key keeps its default; unknown keys are errors).
Result<DaemonConfig> LoadDaemonConfig(const std::string& path);
// Parses YAML text; `name` is used in error positions (tests).
Result<DaemonConfig> ParseDaemonConfig(const std::string& text, const std::string& name);

// Applies command-line flags (argv[1..], parsed by util/flags.h: --flag VALUE or --flag=VALUE,
// each flag once except --admin) over the defaults. "--config FILE" is read first, then every
// other flag overrides. Sets *help when --help was given. Errors name the flag ("--sokcet:
// unknown option (see --help)", "--socket: given twice").
Result<DaemonConfig> ConfigFromArgs(int argc, const char* const* argv, bool* help);
std::string DaemonUsage();

// Cross-field checks (port range, durations, TLS pairs, a listener without credentials).
// heartbeat_timeout + grace - kill_grace - fence_margin, whole seconds rounded down: the agent's
// parts are dead (fence + the agent's kill grace) before the daemon declares the node down.
// 0 when agents.fence is false or the value is <= 0 (see `fence`).
int64_t FenceAfterSeconds(const DaemonConfig& c);
// The sum FenceAfterSeconds takes, spelled out for messages ("30 + 60 - 30 - 15 = 45 s").
std::string FenceFormula(const DaemonConfig& c);

Status ValidateDaemonConfig(const DaemonConfig& config);

}  // namespace phalanx::service
