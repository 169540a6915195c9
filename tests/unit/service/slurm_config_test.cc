// The `mode:` and `slurm:` keys of phalanxd's configuration.
#include <gtest/gtest.h>

#include "service/daemon_config.h"

namespace phalanx::service {
namespace {

TEST(SlurmConfig, SectionParsed) {
  auto c = ParseDaemonConfig(
      "mode: slurm\nslurm:\n  topology: /etc/slurm/topology.conf\n  gres: /etc/slurm/gres.conf\n"
      "  poll_interval: 0.5\n  fallback_delay: 20\n  start_timeout: 15\n  partitions: [phx, gang]\n"
      "  qos: [high]\n  comments: false\n  report_socket: /run/phx/report.sock\n  report_listen: 0.0.0.0:6820\n  "
      "munge_socket: /run/m.sock\n"
      "  report_users: [slurm]\n",
      "p.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->mode, "slurm");
  EXPECT_EQ(c->slurm.topology, "/etc/slurm/topology.conf");
  EXPECT_EQ(c->slurm.gres, "/etc/slurm/gres.conf");
  EXPECT_EQ(c->slurm.poll_interval_s, 0.5);
  EXPECT_EQ(c->slurm.fallback_delay_s, 20);
  EXPECT_EQ(c->slurm.start_timeout_s, 15);
  EXPECT_EQ(c->slurm.partitions, (std::vector<std::string>{"phx", "gang"}));
  EXPECT_EQ(c->slurm.qos, (std::vector<std::string>{"high"}));
  EXPECT_FALSE(c->slurm.comments);
  EXPECT_EQ(c->slurm.report_socket, "/run/phx/report.sock");
  EXPECT_EQ(c->slurm.munge_socket, "/run/m.sock");
  EXPECT_EQ(c->slurm.report_listen, "0.0.0.0:6820");
  EXPECT_EQ(c->slurm.report_users, (std::vector<std::string>{"slurm"}));
}

TEST(SlurmConfig, ErrorsNameTheKey) {
  auto mode = ParseDaemonConfig("mode: pbs\n", "p.yaml");
  ASSERT_FALSE(mode);
  EXPECT_EQ(mode.error().ToString(), "p.yaml:1: mode: expected standalone or slurm, got 'pbs'");
  auto key = ParseDaemonConfig("slurm:\n  topolgy: x\n", "p.yaml");
  ASSERT_FALSE(key);
  EXPECT_NE(key.error().ToString().find("p.yaml:2: unknown key 'slurm.topolgy'"), std::string::npos);
  auto no_topo = ParseDaemonConfig("mode: slurm\n", "p.yaml");
  ASSERT_FALSE(no_topo);
  EXPECT_EQ(no_topo.error().ToString(), "config: slurm.topology: needed with mode: slurm (Slurm's topology.conf)");
  auto lease =
      ParseDaemonConfig("mode: slurm\nslurm:\n  topology: t\n  poll_interval: 10\n  fallback_delay: 15\n", "p.yaml");
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().ToString(), "config: slurm.fallback_delay: must be at least twice slurm.poll_interval");
  auto agents = ParseDaemonConfig("mode: slurm\nslurm:\n  topology: t\nagents:\n  listen: 0.0.0.0:1\n  token_file: f\n",
                                  "p.yaml");
  ASSERT_FALSE(agents);
  EXPECT_EQ(agents.error().ToString(), "config: agents.listen: there are no agents in mode: slurm");
  auto report = ParseDaemonConfig("mode: slurm\nslurm:\n  topology: t\n  report_socket: run/r.sock\n", "p.yaml");
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().ToString(),
            "config: slurm.report_socket: 'run/r.sock' must be an absolute path shorter than 108 bytes");
}

}  // namespace
}  // namespace phalanx::service
