// Launcher: real /bin/sh jobs, forked and exec'd; their wait status read from the keeper's exit
// file. Covers the environment, output files, exit codes and signals, launch failures and
// process-group cleanup.
#include "agent/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "agent/proc_util.h"
#include "test_util.h"

namespace phalanx::agent {
namespace {

using testing::ParseEnv;
using testing::ReadFile;
using testing::ShellJob;
using testing::TempDir;
using testing::WaitFor;
using testing::WaitKeeper;

class LauncherTest : public ::testing::Test {
 protected:
  LauncherTest() : state_(*PartStateDir::Open(tmp_ / "state")), launcher_(Options()) {}

  static LauncherOptions Options() {
    LauncherOptions o;
    o.node = "node07";
    o.identity.allow_root_jobs = getuid() == 0;  // tests run as whoever runs them
    return o;
  }

  // Launches and waits; returns the wait status.
  int Run(const LaunchSpec& spec) {
    auto part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
    EXPECT_TRUE(part.has_value()) << part.error().ToString();
    if (!part) return -1;
    return WaitKeeper(part->keeper_pid, state_.FilesFor(spec.launch_id).exit_file);
  }

  std::string Dir() const { return tmp_.path(); }

  TempDir tmp_;
  PartStateDir state_;
  Launcher launcher_;
};

TEST_F(LauncherTest, JobSeesItsEnvironment) {
  LaunchSpec spec = ShellJob("env > env.txt", Dir(), 42, 4201);
  spec.env["FOO"] = "bar baz";
  spec.env["CUDA_VISIBLE_DEVICES"] = "0,1,2,3,4,5,6,7";  // the agent's value wins
  spec.gpu_indices = {2, 3};
  spec.nodelist = "node[06-07]";
  spec.world_size = 4;
  spec.node_rank = 1;
  spec.nnodes = 2;
  spec.master_port = 29501;
  spec.resume_epoch = 12;
  spec.resume_path = "/ckpt/step-12";
  spec.partition = "gpu";
  spec.restart_count = 2;
  ASSERT_EQ(Run(spec), 0);
  auto env = ParseEnv(ReadFile(tmp_ / "env.txt"));
  EXPECT_EQ(env["FOO"], "bar baz");
  EXPECT_EQ(env["SLURM_JOB_PARTITION"], "gpu");
  EXPECT_EQ(env["PHALANX_PARTITION"], "gpu");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "2,3");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["PHALANX_JOB_ID"], "42");
  EXPECT_EQ(env["PHALANX_LAUNCH_ID"], "4201");
  EXPECT_EQ(env["PHALANX_NODE"], "node07");
  EXPECT_EQ(env["PHALANX_NODELIST"], "node[06-07]");
  EXPECT_EQ(env["PHALANX_NODE_RANK"], "1");
  EXPECT_EQ(env["PHALANX_CHECKPOINT_FILE"], state_.FilesFor(4201).job_dir + "/checkpoint");
  EXPECT_EQ(env["PHALANX_CHECKPOINT_SIGNAL"], std::to_string(SIGUSR1));
  EXPECT_EQ(env["PHALANX_CHECKPOINT_EPOCH"], "12");
  EXPECT_EQ(env["PHALANX_CHECKPOINT_PATH"], "/ckpt/step-12");
  EXPECT_EQ(env["PHALANX_RESTART_COUNT"], "2");
  EXPECT_EQ(env["PHALANX_RESUME"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "node06");  // first host of the nodelist
  EXPECT_EQ(env["MASTER_PORT"], "29501");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["NODE_RANK"], "1");
  EXPECT_EQ(env["NNODES"], "2");
  EXPECT_EQ(env["NPROC_PER_NODE"], "2");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_FALSE(env["HOME"].empty());
  EXPECT_FALSE(env["USER"].empty());
}

// Slurm's variables (job_env.h), from the placement and the spec's Slurm fields; a stale
// SLURM_* of the submitter's shell is dropped, not passed on.
TEST_F(LauncherTest, JobSeesSlurmVariables) {
  LaunchSpec spec = ShellJob("env > env.txt", Dir(), 42, 4201);
  spec.job_name = "train";
  spec.env["SLURM_JOB_ID"] = "999";       // from a Slurm job gsub ran in: not this job
  spec.env["SLURM_ARRAY_TASK_ID"] = "3";  // nor this
  spec.gpu_indices = {2, 3};
  spec.nodelist = "node[06-07]";
  spec.world_size = 4;
  spec.node_rank = 1;
  spec.nnodes = 2;
  spec.slurm.account = "ml";
  spec.slurm.cluster = "demo";
  spec.slurm.submit_dir = "/home/alice/exp";
  spec.slurm.submit_host = "login1";
  spec.slurm.cpus_per_task = 6;
  spec.slurm.mem_per_node_mb = 64000;
  spec.slurm.ntasks_per_node = 2;
  ASSERT_EQ(Run(spec), 0);
  auto env = ParseEnv(ReadFile(tmp_ / "env.txt"));
  EXPECT_EQ(env["SLURM_JOB_ID"], "42");
  EXPECT_EQ(env["SLURM_JOBID"], "42");
  EXPECT_EQ(env["SLURM_JOB_NAME"], "train");
  EXPECT_EQ(env["SLURM_JOB_NODELIST"], "node[06-07]");
  EXPECT_EQ(env["SLURM_NODELIST"], "node[06-07]");
  EXPECT_EQ(env["SLURM_NNODES"], "2");
  EXPECT_EQ(env["SLURM_JOB_NUM_NODES"], "2");
  EXPECT_EQ(env["SLURMD_NODENAME"], "node07");
  EXPECT_EQ(env["SLURM_NODEID"], "1");
  EXPECT_EQ(env["SLURM_PROCID"], "1");
  EXPECT_EQ(env["SLURM_LOCALID"], "0");
  EXPECT_EQ(env["SLURM_NTASKS"], "4");  // 2 per node x 2 nodes
  EXPECT_EQ(env["SLURM_NTASKS_PER_NODE"], "2");
  EXPECT_EQ(env["SLURM_TASKS_PER_NODE"], "2(x2)");
  EXPECT_EQ(env["SLURM_GPUS_ON_NODE"], "2");
  EXPECT_EQ(env["SLURM_JOB_GPUS"], "2,3");
  EXPECT_EQ(env["SLURM_GPUS"], "4");
  EXPECT_EQ(env["SLURM_CPUS_PER_TASK"], "6");
  EXPECT_EQ(env["SLURM_MEM_PER_NODE"], "64000");
  EXPECT_EQ(env.count("SLURM_MEM_PER_GPU"), 0u);
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], "/home/alice/exp");
  EXPECT_EQ(env["SLURM_SUBMIT_HOST"], "login1");
  EXPECT_EQ(env["SLURM_JOB_USER"], env["USER"]);
  EXPECT_EQ(env["SLURM_JOB_UID"], std::to_string(spec.uid));
  EXPECT_EQ(env["SLURM_JOB_ACCOUNT"], "ml");
  EXPECT_EQ(env["SLURM_JOB_PARTITION"], "default");
  EXPECT_EQ(env["SLURM_CLUSTER_NAME"], "demo");
  EXPECT_EQ(env.count("SLURM_ARRAY_TASK_ID"), 0u);
}

TEST_F(LauncherTest, SlurmDefaultsWithoutSlurmOptions) {
  LaunchSpec spec = ShellJob("env > env.txt", Dir());
  ASSERT_EQ(Run(spec), 0);
  auto env = ParseEnv(ReadFile(tmp_ / "env.txt"));
  EXPECT_EQ(env["SLURM_NODELIST"], "node07");  // no nodelist: this node
  EXPECT_EQ(env["SLURM_NNODES"], "1");
  EXPECT_EQ(env["SLURM_NTASKS"], "1");  // one task per node
  EXPECT_EQ(env["SLURM_TASKS_PER_NODE"], "1");
  EXPECT_EQ(env["SLURM_SUBMIT_DIR"], Dir());  // not sent: the working dir
  EXPECT_EQ(env.count("SLURM_SUBMIT_HOST"), 0u);
  EXPECT_EQ(env.count("SLURM_CPUS_PER_TASK"), 0u);
  EXPECT_EQ(env.count("SLURM_JOB_ACCOUNT"), 0u);
}

TEST_F(LauncherTest, OpenModeTruncateEmptiesTheOutputFile) {
  testing::WriteFile(tmp_ / "phalanx-7.out", "before\n");
  LaunchSpec spec = ShellJob("echo out", Dir());
  spec.truncate_output = true;
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "phalanx-7.out"), "out\n");
}

TEST_F(LauncherTest, FreshStartHasNoResumeVariables) {
  LaunchSpec spec = ShellJob("env > env.txt", Dir());
  spec.env["PHALANX_CHECKPOINT_EPOCH"] = "3";  // stale, from the submitter's shell
  spec.env["PHALANX_RESUME"] = "1";
  ASSERT_EQ(Run(spec), 0);
  auto env = ParseEnv(ReadFile(tmp_ / "env.txt"));
  EXPECT_EQ(env.count("PHALANX_CHECKPOINT_EPOCH"), 0u);
  EXPECT_EQ(env["PHALANX_RESUME"], "0");
  EXPECT_EQ(env["PHALANX_RESTART_COUNT"], "0");
  EXPECT_EQ(env["MASTER_ADDR"], "node07");  // no nodelist: this node
  EXPECT_EQ(env["MASTER_PORT"], "29507");   // DefaultMasterPort(7)
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
}

TEST_F(LauncherTest, OutputPatternsRelativeToWorkingDir) {
  LaunchSpec spec = ShellJob("echo out; echo err >&2", Dir(), 42);
  spec.job_name = "train";
  spec.stdout_pattern = "o-%j-%x-%N-%n-%%.txt";
  spec.stderr_pattern = "e-%j.txt";
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "o-42-train-node07-0-%.txt"), "out\n");
  EXPECT_EQ(ReadFile(tmp_ / "e-42.txt"), "err\n");
}

// The spec's umask (the submitter's) applies to the output files and to what the job creates;
// without one the launcher's default (022) does.
TEST_F(LauncherTest, JobGetsTheUmaskOfItsSpec) {
  auto mode = [&](const std::string& name) {
    struct stat st {};
    EXPECT_EQ(lstat((tmp_ / name).c_str(), &st), 0) << name;
    return st.st_mode & 07777;
  };
  LaunchSpec spec = ShellJob("touch made; mkdir d; umask", Dir(), 42);
  spec.umask = 077;
  spec.stdout_pattern = "private.out";
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "private.out"), "0077\n");
  EXPECT_EQ(mode("private.out"), 0600u);
  EXPECT_EQ(mode("made"), 0600u);
  EXPECT_EQ(mode("d"), 0700u);
  spec = ShellJob("umask", Dir(), 43, 71);
  spec.stdout_pattern = "default.out";
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "default.out"), "0022\n");
  EXPECT_EQ(mode("default.out"), 0644u);
}

TEST_F(LauncherTest, DefaultOutputAppendsBothStreams) {
  testing::WriteFile(tmp_ / "phalanx-7.out", "before\n");
  ASSERT_EQ(Run(ShellJob("echo out; echo err >&2", Dir())), 0);
  EXPECT_EQ(ReadFile(tmp_ / "phalanx-7.out"), "before\nout\nerr\n");
}

TEST_F(LauncherTest, ExitCodeAndSignal) {
  int status = Run(ShellJob("exit 3", Dir()));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  status = Run(ShellJob("kill -SEGV $$", Dir(), 7, 71));
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

TEST_F(LauncherTest, ScriptsRunWithShOrTheirInterpreter) {
  LaunchSpec spec = ShellJob("", Dir());
  spec.argv.clear();
  spec.script = "echo plain $0 > plain.txt\n";
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "plain.txt"), "plain " + state_.FilesFor(70).job_dir + "/script\n");
  spec.launch_id = 72;
  spec.script = "#!/bin/sh -e\necho shebang > shebang.txt\nfalse\necho not reached\n";
  const int status = Run(spec);
  EXPECT_EQ(WEXITSTATUS(status), 1);  // -e from the #! line
  EXPECT_EQ(ReadFile(tmp_ / "shebang.txt"), "shebang\n");
}

// gsub script.sh ARGS: the script gets its arguments as $1 $2 ..., with or without a #! line.
TEST_F(LauncherTest, ScriptsGetTheirArguments) {
  LaunchSpec spec = ShellJob("", Dir());
  spec.script = "echo \"$1 $2\" > args.txt\necho $# >> args.txt\n";
  spec.argv = {"hello world", "x", ""};
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "args.txt"), "hello world x\n3\n");

  spec.launch_id = 71;
  spec.script = "#!/bin/sh\necho \"$1 $2\" > shebang-args.txt\n";
  spec.argv = {"-e", "*"};  // passed as they are: not options of the shell, not globbed
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "shebang-args.txt"), "-e *\n");

  spec.launch_id = 72;
  spec.script = "echo \"[$1]\" > none.txt\n";
  spec.argv.clear();
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "none.txt"), "[]\n");
}

TEST_F(LauncherTest, CommandIsLookedUpInTheJobsPath) {
  testing::WriteFile(tmp_ / "mytool", "#!/bin/sh\necho tool ran > tool.txt\n");
  chmod((tmp_ / "mytool").c_str(), 0755);
  LaunchSpec spec = ShellJob("", Dir());
  spec.argv = {"mytool"};
  spec.env["PATH"] = "/nonexistent:" + Dir();
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "tool.txt"), "tool ran\n");
}

TEST_F(LauncherTest, LaunchFailuresSayWhy) {
  LaunchSpec spec = ShellJob("true", "/nonexistent-phalanx-dir");
  auto part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "chdir /nonexistent-phalanx-dir: No such file or directory");
  EXPECT_FALSE(std::filesystem::exists(state_.FilesFor(spec.launch_id).job_dir));  // cleaned up

  spec = ShellJob("", Dir());
  spec.argv = {"no-such-binary-phalanx", "--flag"};
  part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "exec no-such-binary-phalanx: No such file or directory");

  spec.argv = {"/etc/passwd"};
  part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "exec /etc/passwd: Permission denied");

  spec = ShellJob("true", "relative/dir");
  part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "working_dir 'relative/dir' is not an absolute path");

  spec = ShellJob("true", Dir());
  spec.argv.clear();
  part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "nothing to run: give a command or a script");

  spec = ShellJob("true", Dir());
  spec.argv = {""};
  part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "command: the program name is empty");

  spec = ShellJob(std::string("echo a\0b", 8), Dir());
  part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "command: an argument contains a NUL byte");

  spec = ShellJob("true", Dir());
  spec.stdout_pattern = "/nonexistent-phalanx-dir/out.txt";
  part = launcher_.Launch(spec, state_.FilesFor(spec.launch_id));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "open stdout /nonexistent-phalanx-dir/out.txt: No such file or directory");
}

TEST_F(LauncherTest, RootJobsRefusedUnlessAllowed) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  Launcher strict(LauncherOptions{.node = "node07", .identity = {.allow_root_jobs = false}});
  auto part = strict.Launch(ShellJob("true", Dir()), state_.FilesFor(70));
  ASSERT_FALSE(part);
  EXPECT_NE(part.error().ToString().find("uid 0: refusing to run a job as root"), std::string::npos);
}

// The job backgrounds a child; stopping the part's process group leaves nothing behind.
TEST_F(LauncherTest, SignalReachesTheWholeGroup) {
  auto part = launcher_.Launch(ShellJob("sleep 1000 & echo $! > bg.pid; wait", Dir()), state_.FilesFor(70));
  ASSERT_TRUE(part) << part.error().ToString();
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(tmp_ / "bg.pid").empty(); }));
  const pid_t bg = std::atoi(ReadFile(tmp_ / "bg.pid").c_str());
  ASSERT_TRUE(SignalGroup(part->pid, SIGTERM));
  const int status = WaitKeeper(part->keeper_pid, state_.FilesFor(70).exit_file);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(GroupExists(part->pid));
  EXPECT_EQ(kill(bg, 0), -1);
}

// The leader exits while a member that ignores SIGTERM lives on: the keeper kills it.
TEST_F(LauncherTest, KeeperEndsTheGroupWhenTheLeaderExits) {
  auto part = launcher_.Launch(ShellJob("(trap '' TERM; exec sleep 1000) & echo $! > bg.pid; exit 5", Dir()),
                               state_.FilesFor(70));
  ASSERT_TRUE(part) << part.error().ToString();
  const int status = WaitKeeper(part->keeper_pid, state_.FilesFor(70).exit_file);
  EXPECT_EQ(WEXITSTATUS(status), 5);
  const pid_t bg = std::atoi(ReadFile(tmp_ / "bg.pid").c_str());
  EXPECT_GT(bg, 0);
  EXPECT_FALSE(GroupExists(part->pid));
  EXPECT_EQ(kill(bg, 0), -1);
}

TEST_F(LauncherTest, RunsAsTheSubmittingUser) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  const uid_t nobody = 65534;
  chown(Dir().c_str(), nobody, nobody);
  LaunchSpec spec = ShellJob("id -u > uid.txt; id -g > gid.txt; touch $PHALANX_CHECKPOINT_FILE", Dir());
  spec.uid = nobody;
  spec.gid = nobody;
  ASSERT_EQ(Run(spec), 0);
  EXPECT_EQ(ReadFile(tmp_ / "uid.txt"), "65534\n");
  EXPECT_EQ(ReadFile(tmp_ / "gid.txt"), "65534\n");
  struct stat st {};
  ASSERT_EQ(stat((tmp_ / "phalanx-7.out").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody);
  ASSERT_EQ(stat((state_.FilesFor(70).job_dir + "/checkpoint").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody);
}

TEST_F(LauncherTest, UserCannotWriteWhereItMayNot) {
  if (getuid() != 0) GTEST_SKIP() << "needs root";
  LaunchSpec spec = ShellJob("true", Dir());  // Dir() is root's, 0755
  spec.uid = 65534;
  spec.gid = 65534;
  auto part = launcher_.Launch(spec, state_.FilesFor(70));
  ASSERT_FALSE(part);
  EXPECT_EQ(part.error().message, "open stdout phalanx-7.out: Permission denied");
}

}  // namespace
}  // namespace phalanx::agent
