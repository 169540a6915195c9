// The agent's small pure pieces: output patterns, part records, the checkpoint file protocol
// and its CLI, command-line flags, LaunchCommand conversion.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_flags.h"
#include "agent/checkpoint_cli.h"
#include "agent/checkpoint_file.h"
#include "agent/job_env.h"
#include "agent/output_pattern.h"
#include "agent/part_record.h"
#include "agent/part_state_dir.h"
#include "agent/proto_convert.h"
#include "test_util.h"

namespace phalanx::agent {
namespace {

using testing::ReadFile;
using testing::TempDir;

TEST(OutputPattern, ExpandsSlurmStyleFields) {
  const PatternFields f{.job_id = 42, .job_name = "train", .user = "ada", .node = "dgx01", .node_rank = 3};
  EXPECT_EQ(ExpandOutputPattern("%x-%j.%N.%u.%n.out", f), "train-42.dgx01.ada.3.out");
  EXPECT_EQ(ExpandOutputPattern("100%%-%q-%", f), "100%-%q-%");  // unknown kept, trailing % kept
  EXPECT_EQ(ExpandOutputPattern(kDefaultOutputPattern, f), "phalanx-42.out");
}

// Array tasks: %A the array's id, %a the task; other jobs as sbatch writes them.
TEST(OutputPattern, ArrayFields) {
  PatternFields f{.job_id = 42, .job_name = "t", .user = "ada", .node = "n", .node_rank = 0};
  EXPECT_EQ(ExpandOutputPattern("%A_%a.out", f), "42_4294967294.out");
  f.array_job_id = 40;
  f.array_task_id = 7;
  EXPECT_EQ(ExpandOutputPattern("%A_%a-%j.out", f), "40_7-42.out");
}

// SLURM_ARRAY_* from the launch command (the shape from spec.array); a job that is no task
// loses a submitter's own.
TEST(JobEnv, ArrayTasksSeeSlurmsArrayVariables) {
  v1::LaunchCommand cmd;
  cmd.set_job_id(42);
  cmd.set_launch_id(1);
  cmd.set_array_job_id(40);
  cmd.set_array_task_id(8);
  cmd.mutable_spec()->set_array("0-15:4%2");
  auto spec = LaunchSpecFromProto(cmd);
  ASSERT_TRUE(spec) << spec.error().ToString();
  JobEnvContext ctx;
  ctx.node = "n";
  auto env = BuildJobEnvironment(*spec, ctx);
  EXPECT_EQ(env["SLURM_ARRAY_JOB_ID"], "40");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_ID"], "8");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_COUNT"], "4");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_MIN"], "0");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_MAX"], "12");
  EXPECT_EQ(env["SLURM_ARRAY_TASK_STEP"], "4");
  cmd.clear_array_job_id();
  cmd.mutable_spec()->mutable_env()->insert({"SLURM_ARRAY_TASK_ID", "3"});
  auto plain = LaunchSpecFromProto(cmd);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(BuildJobEnvironment(*plain, ctx).contains("SLURM_ARRAY_TASK_ID"));
  cmd.set_array_job_id(40);
  cmd.mutable_spec()->set_array("9-1");
  EXPECT_EQ(LaunchSpecFromProto(cmd).error().where, "launch.spec.array");
}

TEST(PartRecord, RoundTripsAndNamesBadFields) {
  PartRecord r;
  r.job_id = 42, r.launch_id = 4201, r.pid = 1234, r.pid_start = 99, r.keeper_pid = 1233, r.keeper_start = 98;
  r.boot_id = "b00t", r.start_time_ms = 1700000000000, r.walltime_ms = 3600000, r.checkpoint_signal = 12;
  r.uid = 1000, r.checkpoint_file = "/var/lib/x/jobs/4201/checkpoint", r.stop_reason = "walltime";
  r.checkpoint_seen = "1:2:3";
  r.gpus = {0, 3};
  auto back = ParsePartRecord(FormatPartRecord(r), "f");
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(FormatPartRecord(*back), FormatPartRecord(r));
  EXPECT_EQ(back->gpus, (std::vector<uint32_t>{0, 3}));
  EXPECT_NE(FormatPartRecord(r).find("\ngpus 0,3\n"), std::string::npos);
  r.gpus.clear();
  EXPECT_TRUE(ParsePartRecord(FormatPartRecord(r), "f")->gpus.empty());
  // A record from before the gpus key: holds none.
  EXPECT_TRUE(ParsePartRecord("job_id 1\nlaunch_id 2\npid 3\nkeeper_pid 4\n", "f")->gpus.empty());
  EXPECT_EQ(ParsePartRecord("job_id 1\nlaunch_id 2\npid 3\nkeeper_pid 4\ngpus 1,,2\n", "f").error().ToString(),
            "f: gpus: '1,,2' is not a list of GPU indices");
  EXPECT_TRUE(ParsePartRecord(FormatPartRecord(r) + "future_key some value\n", "f"));
  EXPECT_EQ(ParsePartRecord("job_id 1\nlaunch_id 2\npid 3\n", "f").error().ToString(), "f: keeper_pid: missing");
  EXPECT_EQ(ParsePartRecord("job_id x\n", "f").error().ToString(), "f: job_id: 'x' is not a number");
}

TEST(PartStateDir, KeepsPendingLaunchesUntilRemoved) {
  TempDir tmp;
  auto state = PartStateDir::Open(tmp / "state");
  ASSERT_TRUE(state) << state.error().ToString();
  EXPECT_TRUE(state->LoadPending().empty());
  const std::string blob("bin\0ary\n", 8);
  ASSERT_TRUE(state->SavePending(12, blob));
  ASSERT_TRUE(state->SavePending(9, "nine"));
  testing::WriteFile(tmp / "state/parts/x.launch", "not a launch id");
  const auto pending = state->LoadPending();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[0], (std::pair<LaunchId, std::string>{9, "nine"}));
  EXPECT_EQ(pending[1], (std::pair<LaunchId, std::string>{12, blob}));
  std::vector<Error> errors;
  EXPECT_TRUE(state->LoadAll(&errors).empty());  // not part records
  EXPECT_TRUE(errors.empty());
  state->RemovePending(9);
  ASSERT_TRUE(state->Remove(12));  // removing a part removes its pending launch too
  EXPECT_TRUE(state->LoadPending().empty());
}

TEST(CheckpointFile, ParsesEpochAndPath) {
  EXPECT_EQ(ParseCheckpointContent("")->epoch, 0u);
  EXPECT_EQ(ParseCheckpointContent("  \n")->epoch, 0u);
  auto m = ParseCheckpointContent("12 /ckpt/step 12\nignored\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->epoch, 12u);
  EXPECT_EQ(m->path, "/ckpt/step 12");
}

TEST(CheckpointFile, RejectsNonNumericEpoch) {
  EXPECT_EQ(ParseCheckpointContent("twelve /p").error().message, "epoch 'twelve' is not a whole number");
}

TEST(CheckpointFile, ProbeAcceptsOnlyTheOwnersRegularFile) {
  TempDir tmp;
  const std::string file = tmp / "checkpoint";
  testing::WriteFile(file, "");
  auto before = ProbeCheckpointFile(file, getuid());
  ASSERT_TRUE(before);
  ASSERT_TRUE(WriteCheckpointFile(file, {7, "/p"}));
  auto after = ProbeCheckpointFile(file, getuid());
  ASSERT_TRUE(after);
  EXPECT_NE(after->signature, before->signature);
  EXPECT_EQ(after->content, "7 /p\n");
  EXPECT_FALSE(ProbeCheckpointFile(file, getuid() + 1));  // someone else's file
  ASSERT_EQ(symlink("/etc/passwd", (tmp / "link").c_str()), 0);
  EXPECT_FALSE(ProbeCheckpointFile(tmp / "link", 0));  // never follow a link
  EXPECT_FALSE(ProbeCheckpointFile(tmp / "missing", getuid()));
}

TEST(CheckpointCli, WritesTheFileOrExplainsUsage) {
  TempDir tmp;
  const std::string file = tmp / "checkpoint";
  using V = std::vector<std::string>;
  EXPECT_EQ(RunCheckpointDone(V{"--epoch", "5", "--path=/ckpt/5"}, file.c_str()), 0);
  EXPECT_EQ(ReadFile(file), "5 /ckpt/5\n");
  EXPECT_EQ(RunCheckpointDone(V{}, file.c_str()), 0);
  EXPECT_EQ(ReadFile(file), "0\n");
  EXPECT_EQ(RunCheckpointDone(V{"--epoch", "five"}, file.c_str()), 2);
  EXPECT_EQ(RunCheckpointDone(V{"--bogus"}, file.c_str()), 2);
  EXPECT_EQ(RunCheckpointDone(V{}, nullptr), 2);
  EXPECT_EQ(RunCheckpointDone(V{}, "/nonexistent-dir/checkpoint"), 1);
}

Result<AgentFlags> Flags(std::vector<std::string> args) { return ParseAgentFlags(args); }

TEST(AgentFlags, Defaults) {
  auto f = Flags({"--daemon", "phalanxd:7443", "--node", "dgx01", "--token-file", "/etc/phalanx/token"});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->options.link.target, "phalanxd:7443");
  // A leader and its standbys: an address list (docs/deployment.md, "High availability").
  auto list = Flags({"--daemon", "sched1:7070,sched2:7070", "--node", "n", "--token-file", "t"});
  ASSERT_TRUE(list) << list.error().ToString();
  EXPECT_EQ(list->options.link.target, "sched1:7070,sched2:7070");
  for (const char* bad : {"sched1:7070,", "sched1:7070,sched2", "sched1:7070,sched2:0"}) {
    auto r = Flags({"--daemon", bad, "--node", "n", "--token-file", "t"});
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().where, "--daemon") << r.error().ToString();
  }
  EXPECT_EQ(f->options.state_dir, "/var/lib/phalanx-agent/dgx01");
  EXPECT_EQ(f->options.heartbeat, std::chrono::seconds(10));
  EXPECT_EQ(f->options.gpus.nvml_library, "libnvidia-ml.so.1");
  EXPECT_FALSE(f->options.identity.allow_root_jobs);
  EXPECT_EQ(f->options.link.keepalive, std::chrono::seconds(300));
  EXPECT_EQ(f->options.address, "");
  f = Flags({"--daemon=[::1]:7443",
             "--address",
             "10.0.0.7",
             "--keepalive",
             "0",
             "--tls-ca",
             "ca.pem",
             "--tls-cert",
             "c.pem",
             "--tls-key",
             "k.pem",
             "--gpus",
             "0,2",
             "--heartbeat",
             "3",
             "--kill-grace",
             "5",
             "--orphan-grace",
             "7",
             "--allow-root-jobs",
             "--nvml-library",
             "none",
             "--log-level",
             "debug",
             "--state-dir",
             "/run/pa"});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->options.gpus.declared, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(f->options.address, "10.0.0.7");
  EXPECT_EQ(f->options.link.keepalive, std::chrono::seconds(0));
  EXPECT_EQ(f->options.heartbeat, std::chrono::seconds(3));
  EXPECT_EQ(f->options.supervisor.walltime_grace, std::chrono::seconds(5));
  EXPECT_EQ(f->options.orphan_grace, std::chrono::seconds(7));
  EXPECT_TRUE(f->options.identity.allow_root_jobs);
  EXPECT_EQ(f->options.gpus.nvml_library, "");
  EXPECT_EQ(f->log_level, LogLevel::kDebug);
  EXPECT_TRUE(Flags({"--help"})->help);
}

TEST(AgentFlags, ClearErrors) {
  auto err = [](std::vector<std::string> args) { return Flags(std::move(args)).error().ToString(); };
  const std::string d = "--daemon", t = "--token-file";
  EXPECT_EQ(err({}), "--daemon: required (HOST:PORT of phalanxd's agent endpoint)");
  EXPECT_EQ(err({d, "phalanxd"}), "--daemon: 'phalanxd' is not HOST:PORT");
  EXPECT_EQ(err({d, "h:0", t, "f"}), "--daemon: 'h:0': port 0 is out of range [1, 65535]");
  EXPECT_EQ(err({d, "h:1"}), "--token-file: the daemon needs credentials: give --token-file or --tls-ca");
  EXPECT_EQ(err({d, "h:1", "--tls-ca", "a", "--tls-cert", "c"}), "--tls-cert: --tls-cert and --tls-key go together");
  EXPECT_EQ(err({d, "h:1", t, "f", "--heartbeat", "0"}), "--heartbeat: 0 is out of range [1, 3600]");
  EXPECT_EQ(err({d, "h:1", t, "f", "--heartbeat"}), "--heartbeat: needs a value");
  EXPECT_EQ(err({d, "h:1", t, "f", "--orphan-grace", "-1"}), "--orphan-grace: -1 is out of range [0, 86400]");
  EXPECT_EQ(err({d, "h:1", t, "f", "--state-dir", "rel"}), "--state-dir: 'rel' is not an absolute path");
  EXPECT_EQ(err({d, "h:1", t, "f", "--log-level", "loud"}),
            "--log-level: 'loud' is not one of debug, info, warn, error");
  EXPECT_EQ(err({d, "h:1", t, "f", "--frobnicate"}), "--frobnicate: unknown option");
  EXPECT_EQ(err({d, "h:1", d, "h:2"}), "--daemon: given twice");
  EXPECT_EQ(err({d, "h:1", "--allow-root-jobs=yes"}), "--allow-root-jobs: takes no value");
  EXPECT_EQ(err({"stray"}), "stray: unexpected argument (see --help)");
}

TEST(ProtoConvert, LaunchCommandBecomesALaunchSpec) {
  v1::LaunchCommand cmd;
  cmd.set_job_id(42);
  cmd.set_launch_id(4201);
  cmd.set_user("ada");
  cmd.set_uid(1000);
  cmd.set_gid(100);
  cmd.add_gpu_indices(4);
  cmd.add_gpu_indices(5);
  cmd.set_master_port(29555);
  cmd.set_checkpoint_epoch(3);
  cmd.set_checkpoint_path("/ckpt/3");
  cmd.mutable_spec()->set_name("train");
  cmd.mutable_spec()->set_script("#!/bin/bash\necho hi\n");
  cmd.mutable_spec()->set_walltime_s(60);
  cmd.mutable_spec()->set_checkpoint_signal(12);
  auto spec = LaunchSpecFromProto(cmd);
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->walltime, std::chrono::seconds(60));  // the spec's when the command has none
  EXPECT_EQ(spec->gpu_indices, (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(spec->checkpoint_signal, 12);
  EXPECT_EQ(spec->resume_epoch, 3u);
  EXPECT_FALSE(spec->umask.has_value());  // not sent: the agent's default
  cmd.mutable_spec()->set_umask(077);
  EXPECT_EQ(LaunchSpecFromProto(cmd)->umask, std::optional<mode_t>(077));
  cmd.mutable_spec()->set_umask(01777);
  EXPECT_EQ(LaunchSpecFromProto(cmd).error().ToString(), "launch.spec.umask: 01777 is above 0777");
  cmd.mutable_spec()->clear_umask();
  cmd.set_walltime_s(30);
  EXPECT_EQ(LaunchSpecFromProto(cmd)->walltime, std::chrono::seconds(30));
  cmd.set_master_port(70000);
  EXPECT_EQ(LaunchSpecFromProto(cmd).error().ToString(), "launch.master_port: 70000 is not a port");
  cmd.set_launch_id(0);
  EXPECT_EQ(LaunchSpecFromProto(cmd).error().ToString(), "launch.launch_id: must be set");
}

TEST(ProtoConvert, ScriptArgumentsAndReports) {
  v1::LaunchCommand cmd;
  cmd.set_job_id(42);
  cmd.set_launch_id(4201);
  cmd.mutable_spec()->set_script("echo \"$1 $2\"\n");
  cmd.mutable_spec()->add_command("a b");
  cmd.mutable_spec()->add_command("c");
  auto spec = LaunchSpecFromProto(cmd);
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->script, "echo \"$1 $2\"\n");
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"a b", "c"}));  // the script's arguments

  const v1::CheckpointReport report = CheckpointToProto(CheckpointSeen{42, 4201, 7, "/ckpt/7"});
  EXPECT_EQ(report.job_id(), 42u);
  EXPECT_EQ(report.launch_id(), 4201u);
  EXPECT_EQ(report.epoch(), 7u);
  const v1::RunningPart waiting = RunningToProto(PartInfo{42, 4202, 0});
  EXPECT_EQ(waiting.launch_id(), 4202u);
  EXPECT_EQ(waiting.pid(), 0);
  const v1::PartExited exited = PartEndToProto(PartEnd{42, 4201, -1, 15, "killed"});
  EXPECT_EQ(exited.launch_id(), 4201u);
  EXPECT_EQ(exited.reason(), "killed");
}

}  // namespace
}  // namespace phalanx::agent
