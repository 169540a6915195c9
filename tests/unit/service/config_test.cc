// DaemonConfig: the example file parses, errors name file:line and the key, flags override the
// file, cross-field checks.
#include <gtest/gtest.h>

#include <fstream>

#include "call_auth.h"
#include "daemon_harness.h"
#include "service/daemon_config.h"

namespace phalanx::service {
namespace {

TEST(DaemonConfig, ExampleFileParsesAndKeepsTcpOff) {
  auto c = LoadDaemonConfig(std::string(PHALANX_SOURCE_DIR) + "/config/phalanxd.example.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->topology, "gen:demo");
  EXPECT_TRUE(c->agents.listen.empty());
  EXPECT_TRUE(c->http_listen.empty());
  EXPECT_EQ(c->policy, "phalanx");
  // The example shows the preset's values: loading it must not change the policy.
  auto preset = PolicyPreset("phalanx");
  ASSERT_TRUE(preset);
  EXPECT_EQ(c->scheduler.order, preset->order);
  EXPECT_EQ(c->scheduler.service_queues, preset->service_queues);
  EXPECT_EQ(c->scheduler.service_min_run, preset->service_min_run);
  EXPECT_EQ(c->scheduler.backfill, preset->backfill);
  EXPECT_EQ(c->scheduler.reserve_depth, preset->reserve_depth);
  EXPECT_EQ(c->scheduler.reserve_large_gpus, preset->reserve_large_gpus);
  EXPECT_EQ(c->scheduler.reserve_after_wait, preset->reserve_after_wait);
  EXPECT_EQ(c->scheduler.reserve_larger, preset->reserve_larger);
  EXPECT_EQ(c->scheduler.node_fit_tolerance, preset->node_fit_tolerance);
  EXPECT_EQ(c->scheduler.placement_comm_share, preset->placement_comm_share);
  EXPECT_EQ(c->scheduler.patience_depth, preset->patience_depth);
  EXPECT_EQ(c->scheduler.patience_replan, preset->patience_replan);
  EXPECT_EQ(c->scheduler.patience_far_keep, preset->patience_far_keep);
  EXPECT_EQ(c->scheduler.reserve_replan, preset->reserve_replan);
  EXPECT_EQ(c->scheduler.reserve_horizon, preset->reserve_horizon);
  EXPECT_EQ(c->scheduler.runtime, preset->runtime);
  EXPECT_EQ(c->scheduler.charge_period, preset->charge_period);
  EXPECT_EQ(c->scheduler.placement, preset->placement);
  EXPECT_EQ(c->scheduler.preemption, preset->preemption);
  EXPECT_EQ(c->scheduler.elastic, preset->elastic);
}

TEST(DaemonConfig, DefaultsWhenEmpty) {
  auto c = ParseDaemonConfig("", "empty.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->socket_path, "/run/phalanx/phalanxd.sock");
  EXPECT_EQ(c->scheduler.default_walltime, 3600);
  EXPECT_EQ(c->scheduler.max_array_size, 1001u);  // Slurm's MaxArraySize default
  auto big = ParseDaemonConfig("scheduler:\n  max_array_size: 20001\n", "a.yaml");
  ASSERT_TRUE(big) << big.error().ToString();
  EXPECT_EQ(big->scheduler.max_array_size, 20001u);
}

TEST(DaemonConfig, HistorySection) {
  auto d = ParseDaemonConfig("", "empty.yaml");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->history_interval_s, 60);
  EXPECT_EQ(d->history_retention_s, 30 * 86400);
  auto c = ParseDaemonConfig("history:\n  interval: 5\n  retention: 3600\n", "h.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->history_interval_s, 5);
  EXPECT_EQ(c->history_retention_s, 3600);
  auto off = ParseDaemonConfig("history:\n  interval: 0\n", "h.yaml");
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_EQ(off->history_interval_s, 0);
  const std::pair<std::string, std::string> bad[] = {
      {"history:\n  interval: often\n", "h.yaml:2: history.interval: expected a number of seconds >= 0, got 'often'"},
      {"history:\n  retention: 30d\n",
       "h.yaml:2: history.retention: expected a whole number of seconds >= 0, got '30d'"},
      {"history:\n  retension: 5\n", "h.yaml:2: unknown key 'history.retension'"},
      {"history:\n  interval: 0.5\n", "history.interval: must be 0 (off) or at least 1 second"},
  };
  for (const auto& [text, expect] : bad) {
    auto r = ParseDaemonConfig(text, "h.yaml");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().ToString().find(expect), std::string::npos) << r.error().ToString() << "\nwanted: " << expect;
  }
}

// The agents' fence: heartbeat_timeout + grace - kill_grace - fence_margin (30 + 60 - 30 - 15 =
// 45 s by default); off when asked, or (with a warning at start) when short timeouts leave it
// <= 0 and it was not asked for; refused when asked for and <= 0.
TEST(DaemonConfig, FenceAfterFromTheTimeouts) {
  auto defaults = ParseDaemonConfig("", "f.yaml");
  ASSERT_TRUE(defaults) << defaults.error().ToString();
  EXPECT_EQ(FenceAfterSeconds(*defaults), 45);
  EXPECT_EQ(FenceFormula(*defaults),
            "heartbeat_timeout + grace - kill_grace - fence_margin = 30 + 60 - 30 - 15 = 45 s");
  auto off = ParseDaemonConfig("agents:\n  fence: false\n", "f.yaml");
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_EQ(FenceAfterSeconds(*off), 0);
  auto tuned = ParseDaemonConfig(
      "agents:\n  heartbeat_interval: 1\n  heartbeat_timeout: 3\n  grace: 5\n  kill_grace: 2\n  fence: true\n"
      "  fence_margin: 2\n",
      "f.yaml");
  ASSERT_TRUE(tuned) << tuned.error().ToString();
  EXPECT_EQ(FenceAfterSeconds(*tuned), 4);
  auto short_unasked = ParseDaemonConfig(
      "agents:\n  heartbeat_interval: 1\n  heartbeat_timeout: 3\n  grace: 1\n  kill_grace: 2\n", "f.yaml");
  ASSERT_TRUE(short_unasked) << short_unasked.error().ToString();
  EXPECT_EQ(FenceAfterSeconds(*short_unasked), 0);
  auto refused = ParseDaemonConfig(
      "agents:\n  heartbeat_interval: 1\n  heartbeat_timeout: 3\n  grace: 1\n  kill_grace: 2\n  fence: true\n",
      "f.yaml");
  ASSERT_FALSE(refused);
  EXPECT_NE(
      refused.error().ToString().find("agents.fence: the agents' fence would be heartbeat_timeout + grace - "
                                      "kill_grace - fence_margin = 3 + 1 - 2 - 15 = -13 s, it must be at least 1 s"),
      std::string::npos)
      << refused.error().ToString();
  auto bad = ParseDaemonConfig("agents:\n  fence: maybe\n", "f.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().ToString().find("f.yaml:2: agents.fence: expected true or false"), std::string::npos)
      << bad.error().ToString();
}

// partitions: a list; nodes as a hostlist, walltimes as seconds or Slurm times, UNLIMITED for
// the maximum; a policy preset read after them keeps them. Errors name the file, line and key.
TEST(DaemonConfig, Partitions) {
  auto c = ParseDaemonConfig(
      "partitions:\n"
      "  - name: gpu\n"
      "    nodes: node[0-1]\n"
      "    default: true\n"
      "    default_walltime: 1:00:00\n"
      "    max_walltime: UNLIMITED\n"
      "    max_gpus_per_job: 16\n"
      "    max_gpus_per_user: 24\n"
      "    default_qos: high\n"
      "    allow_groups: [ml]\n"
      "  - name: debug\n"
      "    nodes: node3\n"
      "    state: drain\n"
      "    max_walltime: 1800\n"
      "scheduler:\n"
      "  policy: slurm-like\n",
      "p.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_EQ(c->scheduler.partitions.size(), 2u);
  const PartitionConfig& gpu = c->scheduler.partitions[0];
  EXPECT_EQ(gpu.name, "gpu");
  EXPECT_EQ(gpu.nodes, (std::vector<std::string>{"node0", "node1"}));
  EXPECT_TRUE(gpu.is_default);
  EXPECT_EQ(gpu.default_walltime, 3600);
  EXPECT_EQ(gpu.max_walltime, kUnlimitedWalltime);
  EXPECT_EQ(gpu.max_gpus_per_job, 16u);
  EXPECT_EQ(gpu.max_gpus_per_user, 24u);
  EXPECT_EQ(c->scheduler.partitions[1].max_gpus_per_user, 0u) << "left out: no limit";
  EXPECT_EQ(c->scheduler.partitions[1].state, PartitionState::kDrain);
  EXPECT_EQ(c->scheduler.partitions[1].max_walltime, 1800);
  ASSERT_EQ(c->partitions.size(), 2u);
  EXPECT_EQ(c->partitions[0].default_class, "high");
  EXPECT_TRUE(c->partitions[0].restricted);
  EXPECT_EQ(c->partitions[0].allow.groups, std::vector<std::string>{"ml"});
  EXPECT_FALSE(c->partitions[1].restricted);
  EXPECT_TRUE(ValidateDaemonConfig(*c));

  auto bad = ParseDaemonConfig("partitions:\n  - name: gpu\n    max_walltime: forever\n", "b.yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(),
            "b.yaml:3: partitions[0].max_walltime: expected seconds or a Slurm time (D-HH:MM:SS) in 1 s..365 days or "
            "UNLIMITED, got 'forever'");
  bad = ParseDaemonConfig("partitions:\n  - name: gpu\n    colour: red\n", "b.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().ToString().find("b.yaml:3: unknown key 'partitions[0].colour'"), std::string::npos)
      << bad.error().ToString();
  bad = ParseDaemonConfig("partitions:\n  - nodes: n[1-2]\n", "b.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().ToString().find("partitions[0].name: every partition needs a name"), std::string::npos);
  bad = ParseDaemonConfig("partitions:\n  - name: gpu\n    state: sleepy\n", "b.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().ToString().find("expected UP, DOWN, DRAIN or INACTIVE, got 'sleepy'"), std::string::npos);
  auto qos = ParseDaemonConfig("partitions:\n  - name: gpu\n    default_qos: vip\n", "q.yaml");
  ASSERT_FALSE(qos);
  EXPECT_NE(qos.error().message.find("partitions.gpu.default_qos: unknown class 'vip'"), std::string::npos)
      << qos.error().ToString();
}

TEST(DaemonConfig, ErrorsNameFileLineAndKey) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"socket: /tmp/s\nsokcet: x\n", "d.yaml:2: unknown key 'sokcet'"},
      {"agents:\n  grace: soon\n", "d.yaml:2: agents.grace: expected a number of seconds >= 0, got 'soon'"},
      {"scheduler:\n  policy: sjf\n", "d.yaml:2: scheduler.policy: unknown policy 'sjf'"},
      {"scheduler:\n  backfill: maybe\n", "d.yaml:2: scheduler.backfill: easy, conservative or none, not 'maybe'"},
      {"scheduler:\n  node_fit_tolerance: 2\n", "d.yaml:2: scheduler.node_fit_tolerance: must be in [0, 1], got '2'"},
      {"scheduler:\n  placement: random\n",
       "d.yaml:2: scheduler.placement: topology, node-best-fit or first-fit, not 'random'"},
      {"store:\n  sync: sometimes\n", "d.yaml:2: store.sync: expected normal or full"},
      {"log_level: loud\n", "d.yaml:1: log_level: expected debug, info, warn or error"},
      {"agents:\n  master_port_max: 70000\n", "d.yaml:2: agents.master_port_max: expected a whole number in 0..65535"},
      {"admins: alice\n", "d.yaml:1: admins: expected a list of user names"},
      {"scheduler:\n  max_array_size: 0\n",
       "d.yaml:2: scheduler.max_array_size: expected a whole number in 1..4000001, got '0'"},
      {"scheduler:\n  max_array_size: 5000000\n",
       "d.yaml:2: scheduler.max_array_size: expected a whole number in 1..4000001, got '5000000'"},
      {"scheduler:\n  limits:\n    user_max_gpus: 3\n", "d.yaml:3: unknown key 'scheduler.limits.user_max_gpus'"},
      {"socket: [unclosed\n", "d.yaml:2: not valid YAML"},
      {"user_limits:\n  max_connections_per_uid: many\n",
       "d.yaml:2: user_limits.max_connections_per_uid: expected a whole number in 0..4294967295, got 'many'"},
      {"user_limits:\n  requests_per_second: -1\n",
       "d.yaml:2: user_limits.requests_per_second: expected a number >= 0"},
      {"user_limits:\n  exempt_uids: [0, bob]\n", "d.yaml:2: user_limits.exempt_uids: expected a whole number"},
      {"user_limits:\n  idle: 5\n", "d.yaml:2: unknown key 'user_limits.idle'"},
      {"user_limits:\n  request_burst: 0\n", "user_limits.request_burst: must be >= 1 when requests_per_second is set"},
      {"agents:\n  listen: 0.0.0.0:7070\n",
       "agents.listen: an agent listener needs a token_file or TLS client certificates"},
  };
  for (const Case& c : cases) {
    auto r = ParseDaemonConfig(c.text, "d.yaml");
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().ToString().find(c.expect), std::string::npos)
        << r.error().ToString() << "\nwanted: " << c.expect;
  }
}

// store.backend: sqlite by default; postgresql with a dsn (and a lease), in a build with libpq.
TEST(DaemonConfig, StoreBackend) {
  auto d = ParseDaemonConfig("", "s.yaml");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->store_backend, store::Backend::kSqlite);
  EXPECT_EQ(d->store_lease_s, 10);
  EXPECT_EQ(d->store_lease_renew_s, 2);
  EXPECT_TRUE(d->store_standby);
  const std::string pg =
      "store:\n  backend: postgresql\n  dsn: host=/run/postgresql dbname=phalanx\n  lease: 12\n  lease_renew: 0.5\n"
      "  standby: false\n";
  auto c = ParseDaemonConfig(pg, "s.yaml");
  if (store::PostgresBuilt()) {
    ASSERT_TRUE(c) << c.error().ToString();
    EXPECT_EQ(c->store_backend, store::Backend::kPostgres);
    EXPECT_EQ(c->store_dsn, "host=/run/postgresql dbname=phalanx");
    EXPECT_EQ(c->store_lease_s, 12);
    EXPECT_EQ(c->store_lease_renew_s, 0.5);
    EXPECT_FALSE(c->store_standby);
    EXPECT_TRUE(ValidateDaemonConfig(*c));
    c->store_lease_renew_s = 7;  // one late renewal would lose the lease
    auto v = ValidateDaemonConfig(*c);
    ASSERT_FALSE(v);
    EXPECT_NE(v.error().message.find("store.lease_renew: 7 s is more than half of store.lease (12 s)"),
              std::string::npos)
        << v.error().ToString();
  } else {
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().ToString().find("s.yaml:2: store.backend: postgresql: this phalanxd was built without"),
              std::string::npos)
        << c.error().ToString();
  }
  const std::pair<std::string, std::string> bad[] = {
      {"store:\n  backend: mysql\n", "s.yaml:2: store.backend: expected sqlite or postgresql, got 'mysql'"},
      {"store:\n  lease: 0.5\n", "s.yaml:2: store.lease: expected a number of seconds >= 1, got '0.5'"},
      {"store:\n  lease_renew: 0.01\n", "s.yaml:2: store.lease_renew: expected a number of seconds >= 0.1, got '0.01'"},
      {"store:\n  standby: maybe\n", "s.yaml:2: store.standby"},
  };
  for (const auto& [text, expect] : bad) {
    auto r = ParseDaemonConfig(text, "s.yaml");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().ToString().find(expect), std::string::npos) << r.error().ToString() << "\nwanted: " << expect;
  }
  if (store::PostgresBuilt()) {
    auto r = ParseDaemonConfig("store:\n  backend: postgresql\n", "s.yaml");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().ToString().find("store.dsn: backend postgresql needs a libpq connection string"),
              std::string::npos)
        << r.error().ToString();
    // The high-availability example both scheduler hosts run (docs/deployment.md).
    auto ha = LoadDaemonConfig(std::string(PHALANX_SOURCE_DIR) + "/config/ha/phalanxd.yaml");
    ASSERT_TRUE(ha) << ha.error().ToString();
    EXPECT_EQ(ha->store_backend, store::Backend::kPostgres);
    EXPECT_EQ(ha->store_lease_s, 10);
    EXPECT_EQ(ha->store_lease_renew_s, 2);
    EXPECT_TRUE(ha->store_standby);
    EXPECT_EQ(ha->agents.listen, "0.0.0.0:7070");
    EXPECT_TRUE(ValidateDaemonConfig(*ha));
  }
}

TEST(DaemonConfig, UserLimitsHaveDefaultsAndAreRead) {
  auto d = ParseDaemonConfig("", "empty.yaml");
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->user_limits.max_connections_per_uid, 64u);
  EXPECT_EQ(d->user_limits.requests_per_second, 50);
  EXPECT_EQ(d->user_limits.exempt_uids, std::set<uint32_t>{0});
  auto c = ParseDaemonConfig(
      "user_limits:\n  max_connections: 100\n  max_connections_per_uid: 8\n  requests_per_second: 2.5\n"
      "  request_burst: 10\n  idle_timeout: 30\n  exempt_uids: [0, 990]\n",
      "u.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->user_limits.max_connections, 100u);
  EXPECT_EQ(c->user_limits.max_connections_per_uid, 8u);
  EXPECT_EQ(c->user_limits.requests_per_second, 2.5);
  EXPECT_EQ(c->user_limits.request_burst, 10u);
  EXPECT_EQ(c->user_limits.idle_timeout_s, 30);
  EXPECT_EQ(c->user_limits.exempt_uids, (std::set<uint32_t>{0, 990}));
  auto off =
      ParseDaemonConfig("user_limits:\n  requests_per_second: 0\n  request_burst: 0\n  exempt_uids:\n", "o.yaml");
  ASSERT_TRUE(off) << off.error().ToString();
  EXPECT_TRUE(off->user_limits.exempt_uids.empty());
}

TEST(DaemonConfig, PrivacyAccessAndHttpAccess) {
  const std::string text =
      "admin_groups: [wheel]\n"
      "private_data: [jobs, users]\n"
      "access:\n"
      "  classes:\n"
      "    urgent: {users: [alice], groups: [oncall], accounts: [prod]}\n"
      "    high:\n"
      "  accounts:\n"
      "    ml: {users: [alice], groups: [ml-team]}\n"
      "    prod: {users: [alice]}\n"
      "  unlisted_accounts: deny\n"
      "  default_accounts: {alice: ml}\n"
      "http:\n"
      "  listen: 127.0.0.1:9464\n"
      "  admin_token_file: /etc/phalanx/http-token\n"
      "  allowed_hosts: [sched.example.com]\n"
      "  allowed_origins: [https://dash.example.com]\n";
  auto c = ParseDaemonConfig(text, "p.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->admin_groups, std::vector<std::string>{"wheel"});
  EXPECT_TRUE(c->private_data.jobs);
  EXPECT_FALSE(c->private_data.names);
  EXPECT_TRUE(c->private_data.users);
  ASSERT_EQ(c->access.classes.size(), 2u);
  EXPECT_EQ(c->access.classes.at("urgent").groups, std::vector<std::string>{"oncall"});
  EXPECT_EQ(c->access.classes.at("urgent").accounts, std::vector<std::string>{"prod"});
  EXPECT_TRUE(c->access.classes.at("high").users.empty()) << "a bare name: admins only";
  EXPECT_EQ(c->access.accounts.at("ml").groups, std::vector<std::string>{"ml-team"});
  EXPECT_FALSE(c->access.unlisted_accounts_open);
  EXPECT_EQ(c->access.default_accounts.at("alice"), "ml");
  EXPECT_EQ(c->http.admin_token_file, "/etc/phalanx/http-token");
  EXPECT_EQ(c->http.allowed_hosts, std::vector<std::string>{"sched.example.com"});
  EXPECT_EQ(c->http.allowed_origins, std::vector<std::string>{"https://dash.example.com"});
  auto defaults = ParseDaemonConfig("", "e.yaml");
  ASSERT_TRUE(defaults);
  EXPECT_FALSE(defaults->private_data.jobs || defaults->private_data.names || defaults->private_data.users);
  EXPECT_TRUE(defaults->access.classes.empty() && defaults->access.unlisted_accounts_open);

  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"private_data: [jobs, scripts]\n", "d.yaml:1: private_data: expected jobs, names or users, got 'scripts'"},
      {"access:\n  classes:\n    urgent: {users: alice}\n",
       "d.yaml:3: access.classes.urgent.users: expected a list of names, got 'alice'"},
      {"access:\n  classes:\n    urgent: {user: [alice]}\n",
       "d.yaml:3: unknown key 'access.classes.urgent.user' (known: accounts, groups, users)"},
      {"access:\n  accounts:\n    ml: {accounts: [x]}\n", "d.yaml:3: unknown key 'access.accounts.ml.accounts'"},
      {"access:\n  classes:\n    urgnet: {users: [a]}\n",
       "access.classes.urgnet: no such priority class (known: low, normal, high, urgent)"},
      {"access:\n  unlisted_accounts: maybe\n", "d.yaml:2: access.unlisted_accounts: expected allow or deny"},
      {"access:\n  accounts:\n    ml: {users: [alice]}\n  default_accounts: {bob: ml}\n",
       "access.default_accounts.bob: account ml does not list user bob"},
      {"http:\n  allowed_origins: [dash.example.com]\n", "http.allowed_origins: 'dash.example.com' is not an origin"},
      {"admin_groups: wheel\n", "d.yaml:1: admin_groups: expected a list of names"},
  };
  for (const Case& k : cases) {
    auto r = ParseDaemonConfig(k.text, "d.yaml");
    ASSERT_FALSE(r) << k.text;
    EXPECT_NE(r.error().ToString().find(k.expect), std::string::npos)
        << r.error().ToString() << "\nwanted: " << k.expect;
  }
}

TEST(DaemonConfig, FlagsOverrideTheFile) {
  testing::TempDir dir;
  const std::string path = dir.File("d.yaml");
  std::ofstream(path) << "socket: /tmp/file.sock\nadmins: [alice]\nscheduler:\n"
                         "  policy: slurm-like\n  reserve_depth: 7\n  patience_depth: 9\n  patience_replan: 60\n"
                         "  patience_far_keep: 240\n  reserve_replan: 120\n  reserve_horizon: 3600\n";
  const char* argv[] = {"phalanxd", "--socket", "/tmp/flag.sock",  "--config", path.c_str(),
                        "--admin",  "bob",      "--force-topology"};
  bool help = false;
  auto c = ConfigFromArgs(static_cast<int>(std::size(argv)), argv, &help);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_FALSE(help);
  EXPECT_EQ(c->socket_path, "/tmp/flag.sock");
  EXPECT_EQ(c->admins, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(c->policy, "slurm-like");
  EXPECT_EQ(c->scheduler.reserve_depth, 7u);
  EXPECT_EQ(c->scheduler.patience_depth, 9u);
  EXPECT_EQ(c->scheduler.patience_replan, 60);
  EXPECT_EQ(c->scheduler.patience_far_keep, 240);
  EXPECT_EQ(c->scheduler.reserve_replan, 120);
  EXPECT_EQ(c->scheduler.reserve_horizon, 3600);
  EXPECT_EQ(c->scheduler.backfill, BackfillMode::kEasy);
  EXPECT_TRUE(c->force_topology);

  const char* bad[] = {"phalanxd", "--sokcet", "x"};
  auto e = ConfigFromArgs(3, bad, &help);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().ToString(), "--sokcet: unknown option (see --help)");
  const std::string nope = dir.File("nope.yaml");
  const char* missing[] = {"phalanxd", "--config", nope.c_str()};
  auto m = ConfigFromArgs(3, missing, &help);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().ToString().find("nope.yaml: cannot read"), std::string::npos) << m.error().ToString();
}

TEST(DaemonConfig, AConfigFileIsReadWithABound) {
  // `--config /dev/zero` (or a huge file) fails fast naming the path and the limit.
  auto z = LoadDaemonConfig("/dev/zero");
  ASSERT_FALSE(z);
  EXPECT_EQ(z.error().ToString(), "/dev/zero: cannot read the configuration file: larger than 4 MiB limit");
  auto missing = LoadDaemonConfig("/nonexistent/phalanxd.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().ToString().find("/nonexistent/phalanxd.yaml: cannot read the configuration file: "),
            std::string::npos)
      << missing.error().ToString();
}

// users_tcp (docs/daemon.md, "Users over TCP"): off in the example and by default; its keys; TLS
// files in pairs; unknown keys named with the line; refused without libmunge.
TEST(DaemonConfig, UsersTcpSection) {
  auto example = LoadDaemonConfig(std::string(PHALANX_SOURCE_DIR) + "/config/phalanxd.example.yaml");
  ASSERT_TRUE(example) << example.error().ToString();
  EXPECT_TRUE(example->users_tcp.listen.empty());
  const std::string yaml =
      "users_tcp:\n"
      "  listen: 0.0.0.0:6820\n"
      "  munge_socket: /run/munge/other.socket\n"
      "  tls_cert: /etc/phalanx/server.pem\n"
      "  tls_key: /etc/phalanx/server.key\n";
  auto c = ParseDaemonConfig(yaml, "d.yaml");
  if (!auth::HaveMunge()) {
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().where, "d.yaml:2");
    EXPECT_NE(c.error().message.find("users_tcp.listen: this phalanxd was built without libmunge"), std::string::npos)
        << c.error().message;
    return;
  }
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->users_tcp.listen, "0.0.0.0:6820");
  EXPECT_EQ(c->users_tcp.munge_socket, "/run/munge/other.socket");
  EXPECT_EQ(c->users_tcp.tls_cert, "/etc/phalanx/server.pem");
  EXPECT_TRUE(ValidateDaemonConfig(*c));

  auto unknown = ParseDaemonConfig("users_tcp:\n  listen: 0.0.0.0:6820\n  tls_ca: x\n", "d.yaml");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().where, "d.yaml:3");
  EXPECT_NE(unknown.error().message.find("tls_ca"), std::string::npos) << unknown.error().message;

  // Parsing validates: half a TLS pair, or TLS without a listener, is refused there.
  auto half = ParseDaemonConfig("users_tcp:\n  listen: 0.0.0.0:6820\n  tls_cert: /a.pem\n", "d.yaml");
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().message, "users_tcp.tls_cert and users_tcp.tls_key go together");
  auto no_listen = ParseDaemonConfig("users_tcp:\n  tls_cert: /a.pem\n  tls_key: /a.key\n", "d.yaml");
  ASSERT_FALSE(no_listen);
  EXPECT_EQ(no_listen.error().message, "users_tcp.tls_cert: needs users_tcp.listen");
}

}  // namespace
}  // namespace phalanx::service
