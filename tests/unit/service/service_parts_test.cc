// The daemon's pure parts: launch plans, proto <-> core conversion, token compare,
// OutStream's one-write-at-a-time discipline.
#include <gtest/gtest.h>

#include "core/topology/node_models.h"
#include "service/identity.h"
#include "service/launch_plan.h"
#include "service/out_stream.h"
#include "service/proto_convert.h"

namespace phalanx::service {
namespace {

Topology Demo() { return *Topology::Build(DemoCluster()); }

TEST(LaunchPlan, TorchrunFieldsPerNode) {
  const Topology topo = Demo();
  // GPUs 4-7 of node1 and 0-3 of node2 (global indices: node k has 8k..8k+7).
  std::vector<GpuId> gpus;
  for (uint32_t g : {16u, 17u, 18u, 19u, 12u, 13u, 14u, 15u}) gpus.push_back(GpuId(g));
  auto parts = PlanLaunch(
      42, gpus, topo, 9, [](const std::string& n) { return "addr-" + n; }, PortRange{30000, 30009});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].node, "node1");
  EXPECT_EQ(parts[0].gpu_indices, (std::vector<uint32_t>{4, 5, 6, 7}));
  EXPECT_EQ(parts[1].node, "node2");
  EXPECT_EQ(parts[1].gpu_indices, (std::vector<uint32_t>{0, 1, 2, 3}));
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(parts[r].node_rank, r);
    EXPECT_EQ(parts[r].nnodes, 2u);
    EXPECT_EQ(parts[r].world_size, 8u);
    EXPECT_EQ(parts[r].master_addr, "addr-node1");
    EXPECT_EQ(parts[r].master_port, 30002u);
    EXPECT_EQ(parts[r].nodelist, "node[1-2]");
    EXPECT_EQ(parts[r].launch_id, 9u);
  }
}

// MasterPort is min + job mod (max - min + 1), both ends inclusive; the expected ports are worked
// out by hand.
TEST(LaunchPlan, MasterPortIsTheJobIdModuloTheInclusiveRange) {
  const PortRange ten{30000, 30009};
  EXPECT_EQ(MasterPort(42, ten), 30002u);
  EXPECT_EQ(MasterPort(52, ten), 30002u);  // ten ports: jobs ten apart share one
  EXPECT_EQ(MasterPort(49, ten), 30009u);  // the top of the range is used
  EXPECT_EQ(MasterPort(50, ten), 30000u);  // and then it wraps
  EXPECT_EQ(MasterPort(0, ten), 30000u);
  EXPECT_EQ(MasterPort(42, PortRange{}), 29542u);             // default 29500-29999
  EXPECT_EQ(MasterPort(1000, PortRange{}), 29500u);           // 1000 mod 500
  EXPECT_EQ(MasterPort(7, PortRange{30000, 30000}), 30000u);  // one port
  // The whole 32-bit range: max - min + 1 = 2^32 must not overflow to 0.
  EXPECT_EQ(MasterPort((JobId{1} << 32) + 5, PortRange{0, 0xFFFFFFFFu}), 5u);
}

TEST(ProtoConvert, InvalidFieldsAreNamedWithTheirValues) {
  Caller who{1000, 1000, 0, "alice", false};
  const auto base = [] {
    v1::JobSpec s;
    s.set_gpus(8);
    s.add_command("train");
    return s;
  };
  struct Case {
    std::function<void(v1::JobSpec&)> edit;
    std::string expect;
  };
  const Case cases[] =
      {
          {[](v1::JobSpec& s) { s.set_gpus(0); }, "spec.gpus: must be at least 1 (got 0)"},
          {[](v1::JobSpec& s) { s.set_gpus_per_node(4); }, "spec.gpus_per_node: 4 given without nodes"},
          {[](v1::JobSpec& s) { s.set_min_gpus(9); }, "spec.min_gpus: 9 is more than gpus 8"},
          {[](v1::JobSpec& s) { s.set_walltime_s(-5); }, "spec.walltime_s: must not be negative (got -5)"},
          {[](v1::JobSpec& s) { s.clear_command(); }, "spec.command: empty: give a command or a script"},
          {[](v1::JobSpec& s) { s.set_command(0, ""); }, "spec.command: the program name is empty"},
          {[](v1::JobSpec& s) { s.add_command(std::string("a\0b", 3)); },
           "spec.command[1]: 'a\\x00b' contains a NUL byte (byte 1)"},
          // Issue 12: what gsub refuses, the daemon refuses from any client.
          {[](v1::JobSpec& s) { s.set_name(std::string("x\0hidden", 8)); },
           "spec.name: 'x\\x00hidden' contains a NUL byte (byte 1); control characters are not allowed"},
          {[](v1::JobSpec& s) { s.set_name("ok\n2026-01-01T00:00:00.000Z INFO  forged"); },
           "spec.name: 'ok\\n2026-01-01T00:00:00.000Z INFO  forged' contains a newline (byte 2)"},
          {[](v1::JobSpec& s) { s.set_name("\x1b[2J"); }, "spec.name: '\\x1b[2J' contains an ESC (byte 0)"},
          {[](v1::JobSpec& s) { s.set_name("\xc0\xaf"); }, "spec.name: '\\xc0\\xaf' is not valid UTF-8 (byte 0)"},
          {[](v1::JobSpec& s) { s.set_account("a\tb"); }, "spec.account: 'a\\tb' contains a tab (byte 1)"},
          {[](v1::JobSpec& s) { s.set_priority_class("high;rm"); },
           "spec.priority_class: 'high;rm' is not a class name"},
          {[](v1::JobSpec& s) { s.set_stdout_pattern("o\n"); }, "spec.stdout_pattern: 'o\\n' contains a newline"},
          {[](v1::JobSpec& s) { s.set_stderr_pattern(std::string("e\0", 2)); },
           "spec.stderr_pattern: 'e\\x00' contains a NUL"},
          {[](v1::JobSpec& s) { s.set_working_dir("/tmp/\x1b"); }, "spec.working_dir: '/tmp/\\x1b' contains an ESC"},
          {[](v1::JobSpec& s) { (*s.mutable_env())["OK"] = std::string("v\0", 2); },
           "spec.env[OK]: 'v\\x00' contains a NUL"},
          {[](v1::JobSpec& s) { (*s.mutable_env())["A\nB"] = "1"; }, "spec.env: 'A\\nB' is not a variable name"},
          {[](v1::JobSpec& s) { s.set_script(std::string("#!/bin/sh\0", 10)); },
           "spec.script: the script contains a NUL"},
          {[](v1::JobSpec& s) {
    s.set_min_gpus(1);
    s.set_elastic_step_kind(v1::ELASTIC_STEP_MULTIPLE);
    s.set_elastic_step(4294967295u);
           },
           "spec.elastic_step: 4294967295 is more than gpus 8 (1..8)"},
          {[](v1::JobSpec& s) {
    s.set_min_gpus(5);
    s.set_gpus(7);
    s.set_elastic_step_kind(v1::ELASTIC_STEP_POWER_OF_TWO);
           },
           "spec.elastic_step_kind: no power of two between min_gpus 5 and gpus 7"},
             {[](v1::JobSpec& s) {
    s.set_elastic_step_kind(v1::ELASTIC_STEP_MULTIPLE);
              },
              "spec.elastic_step_kind: needs an elastic job"},
      {[](v1::JobSpec& s) { s.set_gpus(4294967295u); }, "spec.gpus: 4294967295 is too many GPUs (1..1048576)"},
      {[](v1::JobSpec& s) { s.set_walltime_s(INT64_MAX); }, "spec.walltime_s: 9223372036854775807s is more than"},
      {[](v1::JobSpec& s) { s.set_checkpoint_warning_s(-1); }, "spec.checkpoint_warning_s: must not be negative"},
      {[](v1::JobSpec& s) { s.set_working_dir("rel/dir"); }, "spec.working_dir: 'rel/dir' is not an absolute path"},
      {[](v1::JobSpec& s) { s.set_checkpoint_signal(99); },
       "spec.checkpoint_signal: not a signal number (got 99; 1..64, or 0 for the default)"},
      {[](v1::JobSpec& s) { s.set_topology(static_cast<v1::TopologyLevel>(17)); },
       "spec.topology: unknown topology level 17"},
      {[](v1::JobSpec& s) { s.add_after_ok(0); }, "spec.after_ok: job id 0 does not exist"},
      {[](v1::JobSpec& s) { s.set_dependency("afterok:1?afterany:2,after:3"); },
       "spec.dependency: 'afterok:1?afterany:2,after:3': use ',' (all of them) or '?' (any of them), not both"},
      {[](v1::JobSpec& s) {
    s.set_dependency("afterok:1");
    s.add_after_ok(2);
       },
       "spec.dependency: give after_ok or dependency, not both"},
      {[](v1::JobSpec& s) { s.set_array("3-1"); }, "spec.array: '3-1': the range ends before it starts"},
      {[](v1::JobSpec& s) { s.set_array("0-4000001"); },
       "spec.array: index 4000001 is not below the array size limit 4000001 (MaxArraySize)"},
      };
  for (const Case& c : cases) {
    v1::JobSpec s = base();
    c.edit(s);
    auto r = CoreSpecFromProto(s, who);
    ASSERT_FALSE(r) << c.expect;
    EXPECT_EQ(r.error().ToString().substr(0, c.expect.size()), c.expect) << r.error().ToString();
  }
  v1::JobSpec s = base();
  s.set_nodes(2);
  s.set_gpus_per_node(8);
  s.set_gpus(0);
  s.set_topology(v1::TOPOLOGY_LEVEL_LEAF);
  s.set_min_gpus(0);
  auto ok = CoreSpecFromProto(s, who);
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->user, "alice");
  EXPECT_EQ(ok->shape.nodes, 2u);
  EXPECT_EQ(ok->shape.level, Level::kLeaf);
  EXPECT_EQ(ok->shape.fit, FitMode::kRequire);
  // The submitter's umask travels as data (the agent applies it); more than 0777 is refused.
  s.set_umask(077);
  EXPECT_TRUE(CoreSpecFromProto(s, who));
  s.set_umask(01000);
  EXPECT_EQ(CoreSpecFromProto(s, who).error().ToString(), "spec.umask: must be at most 0777 (got 01000)");
}

// gsub script.sh ARGS: the script's text in `script`, its arguments in `command`; both reach the
// agent's LaunchCommand unchanged.
TEST(ProtoConvert, ScriptWithArgumentsIsAccepted) {
  Caller who{1000, 1000, 0, "alice", false};
  v1::JobSpec s;
  s.set_gpus(1);
  s.set_script("#!/bin/sh\necho \"$1 $2\"\n");
  ASSERT_TRUE(CoreSpecFromProto(s, who));  // no arguments
  s.add_command("hello world");
  s.add_command("");  // an empty argument is an argument, not a program name
  s.add_command("--lr=0.1");
  auto ok = CoreSpecFromProto(s, who);
  ASSERT_TRUE(ok) << ok.error().ToString();

  auto info = DecodeLaunchInfo(EncodeLaunchInfo(MakeLaunchInfo(s, who)), 5);
  ASSERT_TRUE(info);
  JobRecord rec;
  rec.spec = *ok;
  rec.spec.id = 5;
  LaunchPart part;
  part.job = 5;
  part.launch_id = 9;
  part.node = "node1";
  part.gpu_indices = {3};
  const v1::LaunchCommand cmd = MakeLaunchCommand(part, rec, *info);
  EXPECT_EQ(cmd.spec().script(), "#!/bin/sh\necho \"$1 $2\"\n");
  ASSERT_EQ(cmd.spec().command_size(), 3);
  EXPECT_EQ(cmd.spec().command(0), "hello world");
  EXPECT_EQ(cmd.spec().command(1), "");
  EXPECT_EQ(cmd.spec().command(2), "--lr=0.1");
  EXPECT_EQ(cmd.launch_id(), 9u);
}

// sbatch's -w/-x (hostlists, expanded), -C, --begin and --no-requeue reach the core; the Slurm
// fields the launch needs reach the agent's LaunchCommand, with the cluster's name.
TEST(ProtoConvert, SlurmFieldsReachTheCoreAndTheAgent) {
  Caller who{1000, 1000, 0, "alice", false};
  v1::JobSpec s;
  s.set_gpus(8);
  s.add_command("train");
  s.set_nodelist("node[1-2]");
  s.set_exclude("node2");
  s.set_constraint("h100|a100");
  s.set_begin_time(1800000000);
  s.set_requeue(false);
  s.set_cpus_per_task(6);
  s.mutable_submit_info()->set_submit_dir("/home/alice/exp");
  s.mutable_submit_info()->set_open_truncate(true);
  auto core = CoreSpecFromProto(s, who);
  ASSERT_TRUE(core) << core.error().ToString();
  EXPECT_EQ(core->nodelist, (std::vector<std::string>{"node1", "node2"}));
  EXPECT_EQ(core->exclude, (std::vector<std::string>{"node2"}));
  EXPECT_EQ(core->constraint, "h100|a100");
  EXPECT_EQ(core->begin, 1800000000);
  EXPECT_TRUE(core->no_requeue);
  s.clear_requeue();
  EXPECT_FALSE(CoreSpecFromProto(s, who)->no_requeue);  // unset: requeue, the default
  s.set_nodelist("node[");
  EXPECT_TRUE(CoreSpecFromProto(s, who).error().ToString().starts_with("spec.nodelist: "))
      << CoreSpecFromProto(s, who).error().ToString();
  s.set_nodelist("node1");

  auto info = DecodeLaunchInfo(EncodeLaunchInfo(MakeLaunchInfo(s, who)), 5);
  ASSERT_TRUE(info);
  JobRecord rec;
  rec.spec = *CoreSpecFromProto(s, who);
  rec.spec.id = 5;
  LaunchPart part;
  part.job = 5;
  part.launch_id = 9;
  part.node = "node1";
  const v1::LaunchCommand cmd = MakeLaunchCommand(part, rec, *info, "demo");
  EXPECT_EQ(cmd.cluster_name(), "demo");
  EXPECT_EQ(cmd.spec().cpus_per_task(), 6u);
  EXPECT_EQ(cmd.spec().submit_info().submit_dir(), "/home/alice/exp");
  EXPECT_TRUE(cmd.spec().submit_info().open_truncate());
}

TEST(ProtoConvert, LaunchInfoRoundTripsAndEnvIsHiddenUnlessAsked) {
  Caller who{1000, 100, 0, "alice", false};
  v1::JobSpec s;
  s.set_gpus(2);
  s.add_command("train");
  (*s.mutable_env())["TOKEN"] = std::string("a\0b", 3);
  auto back = DecodeLaunchInfo(EncodeLaunchInfo(MakeLaunchInfo(s, who)), 5);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->uid(), 1000u);
  EXPECT_EQ(back->gid(), 100u);
  EXPECT_EQ(back->spec().env().at("TOKEN"), std::string("a\0b", 3));
  EXPECT_FALSE(DecodeLaunchInfo("\xff\xff\xff", 5));

  const Topology topo = Demo();
  JobRecord rec;
  // (A submission with that value is refused since issue 12 -- "spec.env[OK]" above -- but the
  // launch info carries whatever bytes it is given.)
  v1::JobSpec submitted = s;
  (*submitted.mutable_env())["TOKEN"] = "ab";
  auto core_spec = CoreSpecFromProto(submitted, who);
  ASSERT_TRUE(core_spec) << core_spec.error().ToString();
  rec.spec = *core_spec;
  rec.spec.id = 5;
  rec.state = JobState::kRunning;
  rec.gpus = {GpuId(8), GpuId(9)};
  JobExtras extras;
  extras.launch = &*back;
  v1::Job out;
  FillJob(rec, extras, topo, false, &out);
  EXPECT_EQ(out.spec().env_size(), 0);
  EXPECT_EQ(out.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(out.nodelist(), "node1");
  ASSERT_EQ(out.gpus_size(), 2);
  EXPECT_EQ(out.gpus(1).node(), "node1");
  EXPECT_EQ(out.gpus(1).index(), 1u);
  FillJob(rec, extras, topo, true, &out);
  EXPECT_EQ(out.spec().env_size(), 1);

  // Final: the core has cleared the GPUs; the outcome and the last placement come from the
  // launch info (the controller writes them there with the final state).
  v1::Job ended = *back;
  ended.set_exit_code(3);
  ended.set_reason("failed on node1");
  SetLastPlacement(rec.gpus, topo, &ended);
  EXPECT_EQ(ended.nodelist(), "node1");
  rec.state = JobState::kFailed;
  rec.gpus.clear();
  extras.launch = &ended;
  FillJob(rec, extras, topo, false, &out);
  EXPECT_EQ(out.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(out.exit_code(), 3);
  EXPECT_EQ(out.reason(), "failed on node1");
  EXPECT_EQ(out.nodelist(), "node1");
  ASSERT_EQ(out.gpus_size(), 2);
  EXPECT_EQ(out.gpus(0).node(), "node1");
  EXPECT_EQ(out.gpus(0).index(), 0u);
  // Without an outcome (a launch info written before): the state's name, no placement.
  extras.launch = &*back;
  FillJob(rec, extras, topo, false, &out);
  EXPECT_EQ(out.reason(), "failed");
  EXPECT_EQ(out.exit_code(), 0);
  EXPECT_EQ(out.nodelist(), "");
}

TEST(Identity, TokensCompareExactlyAndPeersParse) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_EQ(PeerHost("ipv4:10.1.2.3:5555"), "10.1.2.3");
  EXPECT_EQ(PeerHost("ipv6:[fe80::1]:5555"), "fe80::1");
  EXPECT_EQ(PeerHost("fd:7"), "");
  PeerRegistry peers;
  EXPECT_FALSE(peers.Lookup("fd:0"));  // not registered
  EXPECT_FALSE(peers.Lookup("ipv4:1.2.3.4:5"));
  EXPECT_FALSE(peers.Lookup("fd:x"));
}

// OutStream: one write in flight, order kept, Finish only when no write is in flight.
TEST(OutStream, OneWriteInFlightAndFinishAfterIt) {
  std::vector<int> started;
  std::vector<grpc::StatusCode> finished;
  OutStream<int> s(
      {[&](const int* m) { started.push_back(*m); }, [&](grpc::Status st) { finished.push_back(st.error_code()); }}, 3);
  EXPECT_TRUE(s.Send(1));
  EXPECT_TRUE(s.Send(2));
  EXPECT_TRUE(s.Send(3));
  EXPECT_EQ(started, (std::vector<int>{1}));
  s.OnWriteDone(true);
  EXPECT_EQ(started, (std::vector<int>{1, 2}));
  s.Close(grpc::Status(grpc::StatusCode::ABORTED, "x"));
  EXPECT_TRUE(finished.empty());  // a write is in flight
  EXPECT_FALSE(s.Send(4));
  s.OnWriteDone(true);
  EXPECT_EQ(finished, (std::vector<grpc::StatusCode>{grpc::StatusCode::ABORTED}));
  EXPECT_EQ(started, (std::vector<int>{1, 2}));  // 3 was dropped by Close

  // Overflow: a reader that does not keep up is cut off.
  std::vector<grpc::StatusCode> f2;
  OutStream<int> slow({[](const int*) {}, [&](grpc::Status st) { f2.push_back(st.error_code()); }}, 2);
  EXPECT_TRUE(slow.Send(1));  // in flight
  EXPECT_TRUE(slow.Send(2));
  EXPECT_TRUE(slow.Send(3));
  EXPECT_FALSE(slow.Send(4));  // queue full: closing
  EXPECT_TRUE(f2.empty());
  slow.OnWriteDone(true);
  EXPECT_EQ(f2, (std::vector<grpc::StatusCode>{grpc::StatusCode::RESOURCE_EXHAUSTED}));
}

}  // namespace
}  // namespace phalanx::service
