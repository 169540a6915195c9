// The commands against a real phalanxd (in-process, its real Unix socket and SQLite file:
// tests/unit/service/daemon_harness.h): `phalanx job hold|release|update|show` with their
// errors (unknown job, bad duration, another user's job), and `gq --all` showing where a finished
// job ran, also after the daemon restarted.
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_harness.h"

namespace phalanx::service::testing {
namespace {

struct Outcome {
  int rc = -1;
  std::string out, err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `program args...` with PHALANX_SOCKET set to the harness's socket; as nobody when
// `as_nobody` (the test runs as root).
Outcome RunCommand(Harness& h, const char* program, std::vector<std::string> args, bool as_nobody = false) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "TZ=UTC", "PHALANX_SOCKET=" + h.config.socket_path};
  if (const char* asan = std::getenv("ASAN_OPTIONS")) env.push_back(std::string("ASAN_OPTIONS=") + asan);
  args.insert(args.begin(), program);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string out_path = h.dir.File("stdout"), err_path = h.dir.File("stderr");
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  Outcome o;
  if (out < 0 || err < 0) return o;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out, 1);
    dup2(err, 2);
    if (as_nobody && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(125);
    execve(program, argv.data(), envp.data());
    _exit(126);
  }
  close(out);
  close(err);
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) o.rc = WEXITSTATUS(status);
  o.out = ReadAll(out_path);
  o.err = ReadAll(err_path);
  return o;
}

Outcome Phalanx(Harness& h, std::vector<std::string> args, bool as_nobody = false) {
  args.insert(args.begin(), "job");
  return RunCommand(h, PHALANX_PATH, std::move(args), as_nobody);
}

std::string Str(uint64_t id) { return std::to_string(id); }

TEST(PhalanxJob, HoldReleaseUpdateShowThroughTheDaemon) {
  Harness h;
  h.Start();  // no agents: jobs stay pending
  v1::JobSpec spec = Harness::Spec(2, "train");
  spec.set_walltime_s(3600);
  const uint64_t id = h.SubmitOk(spec);

  Outcome o = Phalanx(h, {"hold", Str(id)});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out, "");  // silent, like scontrol hold
  EXPECT_TRUE(h.Get(id).held());

  o = Phalanx(h, {"show", Str(id)});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.find("JobId=" + Str(id) + " JobName=train\n"), 0u) << o.out;
  EXPECT_NE(o.out.find(" JobState=PENDING "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" Held=yes"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" TimeLimit=1:00:00 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("   Command=/bin/true\n"), std::string::npos) << o.out;

  o = Phalanx(h, {"release", Str(id), "--json"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.find("{\"results\":[{\"job_id\":\"" + Str(id) + "\",\"job\":{"), 0u) << o.out;
  EXPECT_NE(o.out.find("\"held\":false"), std::string::npos) << o.out;
  EXPECT_FALSE(h.Get(id).held());

  o = Phalanx(h, {"update", Str(id), "--time", "30:00", "--priority", "high", "--name", "renamed"});
  EXPECT_EQ(o.rc, 0) << o.err;
  v1::Job job = h.Get(id);
  EXPECT_EQ(job.walltime_s(), 1800);
  EXPECT_EQ(job.spec().priority_class(), "high");
  EXPECT_EQ(job.spec().name(), "renamed");

  o = Phalanx(h, {"show", Str(id), "--json"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.find("{\"jobs\":[{\"id\":\"" + Str(id) + "\""), 0u) << o.out;
  EXPECT_NE(o.out.find("\"name\":\"renamed\""), std::string::npos) << o.out;
}

TEST(PhalanxJob, ErrorsNameTheJobAndTheCause) {
  Harness h;
  h.Start();
  const uint64_t id = h.SubmitOk(Harness::Spec(2));

  // Unknown job: the daemon's NOT_FOUND text; the other jobs are still tried.
  Outcome o = Phalanx(h, {"hold", "4242", Str(id)});
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.err, "phalanx: job 4242: no such job\n");
  EXPECT_TRUE(h.Get(id).held()) << "the known job was held";
  o = Phalanx(h, {"release", "4242", "--json"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.out.find("\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"job 4242: no such job\"}"), std::string::npos)
      << o.out;
  o = Phalanx(h, {"show", "4242"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.err, "phalanx: job 4242: no such job\n");

  // Usage errors: nothing is sent (exit 2).
  o = Phalanx(h, {"update", Str(id), "--time", "1:2:3:4"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_EQ(o.err.find("phalanx: job update: --time: '1:2:3:4' is not a duration ("), 0u) << o.err;
  o = Phalanx(h, {"update", Str(id)});
  EXPECT_EQ(o.rc, 2);
  EXPECT_NE(o.err.find("nothing to change"), std::string::npos) << o.err;
  o = Phalanx(h, {"hold", Str(id), "--time", "10"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_EQ(o.err, "phalanx: job hold: --time is an option of 'phalanx job update'\n");
  o = Phalanx(h, {"frob", Str(id)});
  EXPECT_EQ(o.rc, 2);
  EXPECT_NE(o.err.find("unknown action 'frob'"), std::string::npos) << o.err;
  o = Phalanx(h, {"hold", "abc"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_EQ(o.err, "phalanx: job hold: 'abc' is not a job id\n");

  // The daemon refuses a bad value too: an unknown class.
  o = Phalanx(h, {"update", Str(id), "--priority", "vip"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("priority_class"), std::string::npos) << o.err;

  // Another user may not touch root's job.
  if (geteuid() == 0) {
    o = Phalanx(h, {"release", Str(id)}, true);
    EXPECT_EQ(o.rc, 1);
    EXPECT_EQ(o.err.find("phalanx: job " + Str(id) + ": permission denied: "), 0u) << o.err;
    EXPECT_NE(o.err.find("belongs to root, not to nobody"), std::string::npos) << o.err;
    EXPECT_TRUE(h.Get(id).held());
    o = Phalanx(h, {"update", Str(id), "--time", "10"}, true);
    EXPECT_EQ(o.rc, 1);
    EXPECT_NE(o.err.find("permission denied"), std::string::npos) << o.err;
    o = Phalanx(h, {"show", Str(id)}, true);
    EXPECT_EQ(o.rc, 0) << "everyone may read: " << o.err;
  }
}

// gq --all lists finished jobs with the nodes they ran on and their exit code (protobuf JSON),
// from the store after a restart; `phalanx job show` says the same.
TEST(GqAll, FinishedJobsShowTheirNodelistAfterARestart) {
  std::unique_ptr<FakeAgent> agent;  // destroyed after the daemon
  Harness h;
  h.Start();
  agent = std::make_unique<FakeAgent>(h.AgentTarget(), "node2");
  ASSERT_TRUE(agent->Join());
  const uint64_t id = h.SubmitOk(Harness::Spec(8, "ran"));
  auto launch = agent->WaitLaunch(id);
  ASSERT_TRUE(launch);
  ASSERT_TRUE(agent->Exit(id, launch->launch_id(), 3));
  ASSERT_TRUE(h.WaitState(id, v1::JOB_STATE_FAILED));
  h.Stop();
  agent->Disconnect();
  h.Start();

  Outcome o = RunCommand(h, GQ_PATH, {"--all", "--json"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("\"nodelist\":\"node2\""), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\"exit_code\":3"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\"reason\":\"failed on node2\""), std::string::npos) << o.out;
  o = RunCommand(h, GQ_PATH, {"--all", "--noheader", "-o", "%i %T %N"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find(Str(id) + " FAILED node2\n"), std::string::npos) << o.out;
  o = RunCommand(h, GQ_PATH, {"--noheader", "-o", "%i %T %N"});
  EXPECT_EQ(o.out.find(Str(id) + " FAILED"), std::string::npos) << "without --all only unfinished jobs: " << o.out;
  o = Phalanx(h, {"show", Str(id)});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find(" JobState=FAILED Reason=failed on node2 ExitCode=3 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(" NodeList=node2 "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("   Partition=default GPUs=node2:0-7\n"), std::string::npos) << o.out;
}

// ---- partitions, squeue/scancel/sinfo/scontrol habits ---------------------------------------

// gen:demo's node0..node3 in three partitions: gpu (node[0-1], the default, 30 min default and
// 2 h maximum walltime), debug (node[2-3], at most 8 GPUs a job, group "nosuchgroup" only:
// root passes as an admin, nobody is refused), long (every node, UNLIMITED).
void AddPartitions(Harness& h) {
  PartitionConfig gpu, debug, all;
  gpu.name = "gpu";
  gpu.nodes = {"node0", "node1"};
  gpu.is_default = true;
  gpu.default_walltime = 1800;
  gpu.max_walltime = 7200;
  debug.name = "debug";
  debug.nodes = {"node2", "node3"};
  debug.max_gpus_per_job = 8;
  all.name = "long";
  all.max_walltime = kUnlimitedWalltime;
  h.config.scheduler.partitions = {gpu, debug, all};
  PartitionOptions g, d, l;
  g.name = "gpu";
  d.name = "debug";
  l.name = "long";
  d.allow.groups = {"nosuchgroup"};
  d.restricted = true;
  d.default_class = "high";
  h.config.partitions = {g, d, l};
}

// Four agents: the nodes are up and jobs start (the fake agents never end them).
struct Cluster {
  std::vector<std::unique_ptr<FakeAgent>> agents;  // destroyed after the daemon
  Harness h;
  Cluster() {
    AddPartitions(h);
    h.Start();
    for (int n = 0; n < 4; ++n) {
      agents.push_back(std::make_unique<FakeAgent>(h.AgentTarget(), "node" + std::to_string(n)));
      EXPECT_TRUE(agents.back()->Join());
    }
  }
  Outcome Gsub(std::vector<std::string> args, bool as_nobody = false) {
    args.push_back("--wrap");
    args.push_back("true");
    return RunCommand(h, GSUB_PATH, std::move(args), as_nobody);
  }
  uint64_t GsubOk(std::vector<std::string> args) {
    args.insert(args.begin(), "--parsable");
    Outcome o = Gsub(std::move(args));
    EXPECT_EQ(o.rc, 0) << o.err;
    return std::strtoull(o.out.c_str(), nullptr, 10);
  }
};

TEST(Partitions, GsubPartitionQosAndTheOneWalltimeLimit) {
  Cluster c;
  const uint64_t a = c.GsubOk({"-p", "debug", "-G", "2", "-J", "a"});
  v1::Job job = c.h.Get(a);
  EXPECT_EQ(job.partition(), "debug");
  EXPECT_EQ(job.spec().priority_class(), "high") << "debug's default_qos";
  ASSERT_TRUE(c.h.WaitState(a, v1::JOB_STATE_RUNNING));
  job = c.h.Get(a);
  EXPECT_TRUE(job.nodelist() == "node2" || job.nodelist() == "node3") << job.nodelist();
  // The launch tells the agent the partition (SLURM_JOB_PARTITION, PHALANX_PARTITION).
  auto launch = c.agents[job.nodelist() == "node2" ? 2 : 3]->WaitLaunch(a);
  ASSERT_TRUE(launch);
  ASSERT_EQ(launch->spec().partitions_size(), 1);
  EXPECT_EQ(launch->spec().partitions(0), "debug");
  EXPECT_EQ(job.walltime_s(), 3600) << "no default_walltime: the daemon's";
  const uint64_t b = c.GsubOk({"-G", "1", "-q", "low"});
  EXPECT_EQ(c.h.Get(b).partition(), "gpu");
  EXPECT_EQ(c.h.Get(b).spec().priority_class(), "low");
  EXPECT_EQ(c.h.Get(b).walltime_s(), 1800) << "gpu's default_walltime";
  EXPECT_EQ(c.h.Get(c.GsubOk({"-t", "0"})).walltime_s(), 7200) << "-t 0: gpu's MaxTime";
  EXPECT_EQ(c.h.Get(c.GsubOk({"-t", "UNLIMITED", "-p", "long"})).walltime_s(), kUnlimitedWalltime);
  EXPECT_EQ(c.h.Get(c.GsubOk({"--priority", "urgent", "-p", "long,gpu"})).spec().priority_class(), "urgent");
  Outcome o = c.Gsub({"-t", "3:00:00"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("walltime 10800s exceeds the maximum 7200s of partition gpu (MaxTime 2:00:00)"),
            std::string::npos)
      << o.err;
  o = c.Gsub({"-p", "debug", "-G", "16"});
  EXPECT_NE(o.err.find("partition debug: 16 GPUs exceed its MaxGPUsPerJob 8"), std::string::npos) << o.err;
  o = c.Gsub({"-p", "nope"});
  EXPECT_NE(o.err.find("unknown partition 'nope' (known: gpu, debug, long)"), std::string::npos) << o.err;
  o = c.Gsub({"-p", "debug"}, /*as_nobody=*/true);
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("partition debug: user nobody may not use it (AllowUsers=- AllowGroups=nosuchgroup "
                       "AllowAccounts=-)"),
            std::string::npos)
      << o.err;
  o = c.Gsub({"-p", "long"}, /*as_nobody=*/true);
  EXPECT_EQ(o.rc, 0) << o.err;
}

// gsub --test-only asks the daemon's what-if (sbatch's line on stderr) and submits nothing: a
// job that fits starts now on its partition's nodes, one behind a full partition later (the
// running jobs' walltime), one that can never fit is refused naming why.
TEST(Partitions, GsubTestOnlyAsksTheDaemonAndSubmitsNothing) {
  Cluster c;
  auto line = [](const Outcome& o) { return o.err.substr(0, o.err.find('\n')); };
  Outcome o = c.Gsub({"--test-only", "-p", "debug", "-G", "8"});
  ASSERT_EQ(o.rc, 0) << o.err;
  const std::string now_line = line(o);
  EXPECT_EQ(now_line.find("gsub: Job "), 0u) << now_line;
  EXPECT_NE(now_line.find(" using 8 GPUs on nodes node"), std::string::npos) << now_line;
  EXPECT_NE(now_line.find(" in partition debug"), std::string::npos) << now_line;
  EXPECT_EQ(o.out, "");
  o = RunCommand(c.h, GQ_PATH, {"-h", "-t", "all", "-o", "%i"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out, "") << "nothing was submitted";
  // The id it named is the one the next submission gets.
  const uint64_t a = c.GsubOk({"-p", "debug", "-G", "8"});
  EXPECT_EQ(now_line.find("gsub: Job " + Str(a) + " to start at "), 0u) << now_line;
  const uint64_t b = c.GsubOk({"-p", "debug", "-G", "8"});
  ASSERT_TRUE(c.h.WaitState(a, v1::JOB_STATE_RUNNING));
  ASSERT_TRUE(c.h.WaitState(b, v1::JOB_STATE_RUNNING));
  // debug is full until a walltime (3600 s) ends: a later start, on one of its nodes.
  o = c.Gsub({"--test-only", "-p", "debug", "-G", "8"});
  ASSERT_EQ(o.rc, 0) << o.err;
  const std::string later = line(o);
  EXPECT_EQ(later.find("gsub: Job " + Str(b + 1) + " to start at "), 0u) << later;
  EXPECT_NE(later.find(" using 8 GPUs on nodes node"), std::string::npos) << later;
  EXPECT_EQ(later.substr(later.size() - std::strlen(" in partition debug")), " in partition debug")
      << "sbatch's line, nothing after it: " << later;
  o = c.Gsub({"--test-only", "-p", "debug", "-G", "8", "--json"});
  EXPECT_NE(o.out.find("\"wait_reason\":\"Resources\""), std::string::npos) << "why not now: " << o.out;
  const std::string at = later.substr(later.find(" at ") + 4, 19);
  const std::string started = RunCommand(c.h, GQ_PATH, {"-h", "-j", Str(a), "-o", "%S"}).out;
  EXPECT_GT(at, started.substr(0, 19)) << "later than job " << a << "'s start " << started;
  // gpu (node[0-1]) is free: the same job there starts now; --json has the fields.
  o = c.Gsub({"--test-only", "-p", "gpu", "-G", "8", "--json"});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("\"start_now\":true"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\"partition\":\"gpu\""), std::string::npos) << o.out;
  // Never: more GPUs than the partition has; and the partition's limits, as for a submission.
  o = c.Gsub({"--test-only", "-p", "gpu", "-G", "24"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("can never fit"), std::string::npos) << o.err;
  o = c.Gsub({"--test-only", "-t", "3:00:00"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("exceeds the maximum 7200s of partition gpu"), std::string::npos) << o.err;
  o = RunCommand(c.h, GQ_PATH, {"-h", "-t", "all", "-o", "%i"});
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 2) << "still only the two submitted: " << o.out;
  EXPECT_NE(o.out.find(Str(a) + "\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(Str(b) + "\n"), std::string::npos) << o.out;
}

// The job's place in the queue, as ginfo --why says it (0: none).
uint32_t QueuePosition(Cluster& c, uint64_t id) {
  const Outcome o = RunCommand(c.h, GINFO_PATH, {"--why", Str(id), "--json"});
  const size_t at = o.out.find("\"queue_position\":");
  return at == std::string::npos ? 0 : static_cast<uint32_t>(std::strtoul(o.out.c_str() + at + 17, nullptr, 10));
}

// phalanx job top (scontrol top): the owner's pending job goes first among the owner's pending
// jobs; another user may not top it; a running job cannot be topped.
TEST(AdminCommands, JobTopPutsTheJobFirstAmongItsOwnersJobs) {
  Cluster c;
  const uint64_t r1 = c.GsubOk({"-p", "debug", "-G", "8"});
  const uint64_t r2 = c.GsubOk({"-p", "debug", "-G", "8"});
  ASSERT_TRUE(c.h.WaitState(r1, v1::JOB_STATE_RUNNING));
  ASSERT_TRUE(c.h.WaitState(r2, v1::JOB_STATE_RUNNING));
  const uint64_t p1 = c.GsubOk({"-p", "debug", "-G", "8"});
  const uint64_t p2 = c.GsubOk({"-p", "debug", "-G", "8"});
  const uint64_t p3 = c.GsubOk({"-p", "debug", "-G", "8"});
  ASSERT_TRUE(WaitFor([&] { return QueuePosition(c, p3) == 3; })) << "submit order first";
  EXPECT_EQ(QueuePosition(c, p1), 1u);
  Outcome o = RunCommand(c.h, PHALANX_PATH, {"job", "top", Str(p3)});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(WaitFor([&] { return QueuePosition(c, p3) == 1; })) << QueuePosition(c, p3);
  EXPECT_EQ(QueuePosition(c, p1), 2u);
  EXPECT_EQ(QueuePosition(c, p2), 3u);
  o = RunCommand(c.h, PHALANX_PATH, {"job", "top", Str(p1)}, /*as_nobody=*/true);
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("belongs to root"), std::string::npos) << o.err;
  o = RunCommand(c.h, PHALANX_PATH, {"job", "top", Str(r1)});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("top: only pending jobs can be put first (it is running)"), std::string::npos) << o.err;
  EXPECT_EQ(QueuePosition(c, p3), 1u) << "unchanged by the refusals";
}

TEST(Partitions, GqFlagsLikeSqueue) {
  Cluster c;
  const uint64_t a = c.GsubOk({"-p", "debug", "-G", "8", "-J", "alpha"});
  const uint64_t b = c.GsubOk({"-p", "gpu", "-G", "16", "-J", "beta"});
  const uint64_t p = c.GsubOk({"-p", "gpu", "-G", "16", "-J", "gamma"});  // gpu is full: pending
  ASSERT_TRUE(c.h.WaitState(a, v1::JOB_STATE_RUNNING));
  ASSERT_TRUE(c.h.WaitState(b, v1::JOB_STATE_RUNNING));
  auto gq = [&](std::vector<std::string> args) { return RunCommand(c.h, GQ_PATH, std::move(args)); };
  Outcome o = gq({"-h", "-o", "%i %P %j"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out, Str(a) + " debug alpha\n" + Str(b) + " gpu   beta\n" + Str(p) + " gpu   gamma\n");
  o = gq({});
  EXPECT_EQ(o.out.find("JOBID  PARTITION  NAME"), 0u) << "-h is no header only with -h: " << o.out;
  EXPECT_EQ(gq({"-h", "-p", "debug", "-o", "%i"}).out, Str(a) + "\n");
  EXPECT_EQ(gq({"-h", "-n", "beta,gamma", "-o", "%i"}).out, Str(b) + "\n" + Str(p) + "\n");
  EXPECT_EQ(gq({"-h", "-w", "node[2-3]", "-o", "%i"}).out, Str(a) + "\n");
  EXPECT_EQ(gq({"-h", "--start", "-o", "%i %t"}).out, Str(p) + " PD\n");
  EXPECT_EQ(gq({"-h", "-S", "-i", "-o", "%i"}).out, Str(p) + "\n" + Str(b) + "\n" + Str(a) + "\n");
  EXPECT_EQ(gq({"-h", "-S", "P,-j", "-o", "%j"}).out, "alpha\ngamma\nbeta\n");
  o = gq({"-O", "JobID:.6,Partition,Name,UserName,StateCompact"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find(" JOBID  PARTITION  NAME   USER  ST\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("     " + Str(a) + "  debug      alpha  root  R\n"), std::string::npos) << o.out;
  o = gq({"-O", "JobID,Colour"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_NE(o.err.find("gq: -O: unknown field 'Colour'"), std::string::npos) << o.err;
  o = gq({"-u", "nosuchuserxyz"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_EQ(o.err, "gq: -u: unknown user 'nosuchuserxyz'\n");
  o = gq({"-S", "%"});
  EXPECT_EQ(o.rc, 2);
  // -i: a time line and the table, again every second until interrupted.
  o = RunCommand(c.h, "/usr/bin/timeout", {"2.5", GQ_PATH, "-i", "1", "-h", "-o", "%i", "-p", "debug"});
  EXPECT_EQ(o.rc, 124) << o.err;
  size_t listings = 0;
  for (size_t at = o.out.find(Str(a) + "\n"); at != std::string::npos; at = o.out.find(Str(a) + "\n", at + 1))
    ++listings;
  EXPECT_GE(listings, 2u) << o.out;
  EXPECT_EQ(gq({"-i", "0"}).rc, 2);
}

TEST(Partitions, GcancelFiltersAndSignals) {
  Cluster c;
  const uint64_t a = c.GsubOk({"-p", "debug", "-G", "8", "-J", "alpha"});
  const uint64_t b = c.GsubOk({"-p", "gpu", "-G", "16", "-J", "beta"});
  const uint64_t p1 = c.GsubOk({"-p", "gpu", "-G", "16", "-J", "beta"});
  const uint64_t p2 = c.GsubOk({"-p", "gpu", "-G", "16", "-J", "delta"});
  ASSERT_TRUE(c.h.WaitState(b, v1::JOB_STATE_RUNNING));
  auto gcancel = [&](std::vector<std::string> args, bool nobody = false) {
    return RunCommand(c.h, GCANCEL_PATH, std::move(args), nobody);
  };
  Outcome o = gcancel({"--signal", "USR1", Str(p2)});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("job " + Str(p2) + ": cannot be signalled: it is not running"), std::string::npos) << o.err;
  o = gcancel({"--signal", "USR1", Str(a)}, /*nobody=*/true);
  EXPECT_NE(o.err.find("signal"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("cancel", std::strlen("gcancel:")), std::string::npos)
      << "a refused signal is not a cancel: " << o.err;
  // -n alone: the caller's jobs of that name; with --state only the pending one.
  o = gcancel({"-n", "beta", "--state", "PD"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(c.h.State(p1), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(c.h.State(b), v1::JOB_STATE_RUNNING);
  o = gcancel({"-p", "debug"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(c.h.State(a), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(c.h.State(p2), v1::JOB_STATE_PENDING);
  o = gcancel({"-n", "delta", "-u", "root"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(c.h.State(p2), v1::JOB_STATE_CANCELLED);
  o = gcancel({"-u", "nosuchuserxyz"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_EQ(o.err, "gcancel: -u: unknown user 'nosuchuserxyz'\n");
}

TEST(Partitions, GinfoViewsLikeSinfo) {
  Cluster c;
  const uint64_t a = c.GsubOk({"-p", "debug", "-G", "8"});
  ASSERT_TRUE(c.h.WaitState(a, v1::JOB_STATE_RUNNING));
  Outcome o = RunCommand(c.h, PHALANX_PATH, {"node", "drain", "node1", "--reason", "fan broken"});
  ASSERT_EQ(o.rc, 0) << o.err;
  auto ginfo = [&](std::vector<std::string> args) { return RunCommand(c.h, GINFO_PATH, std::move(args)); };
  o = ginfo({});
  EXPECT_EQ(o.rc, 0) << o.err;
  const std::string alloc = c.h.Get(a).nodelist();
  const std::string idle = alloc == "node2" ? "node3" : "node2";
  EXPECT_EQ(o.out.find("PARTITION  AVAIL   TIMELIMIT  NODES  STATE  NODELIST\n"
                       "gpu*       up        2:00:00      1  drain  node1\n"
                       "gpu*       up        2:00:00      1  idle   node0\n"
                       "debug      up     7-00:00:00      1  alloc  " +
                       alloc +
                       "\n"
                       "debug      up     7-00:00:00      1  idle   " +
                       idle + "\n"),
            0u)
      << o.out;
  EXPECT_NE(o.out.find("long       up       infinite      1  drain  node1\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\nLEVEL  DOMAINS"), std::string::npos) << "the free blocks follow: " << o.out;
  EXPECT_EQ(ginfo({"-h", "-p", "debug", "-o", "%P %D %G"}).out, "debug 1 8\ndebug 1 8\n");
  EXPECT_EQ(ginfo({"-h", "-t", "drain", "-o", "%P %N"}).out, "gpu* node1\nlong node1\n");
  EXPECT_EQ(ginfo({"-h", "-n", "node0", "-o", "%P %t"}).out, "gpu* idle\nlong idle\n");
  o = ginfo({"-s", "-p", "gpu"});
  EXPECT_EQ(o.out,
            "PARTITION  AVAIL  TIMELIMIT  NODES(A/I/O/T)  NODELIST\n"
            "gpu*       up       2:00:00         0/1/1/2  node[0-1]\n")
      << o.out;
  o = ginfo({"-R"});
  EXPECT_EQ(o.out.find("REASON      USER  TIMESTAMP            NODELIST\nfan broken  root  "), 0u) << o.out;
  EXPECT_NE(o.out.find("  node1\n"), std::string::npos) << o.out;
  o = ginfo({"-l", "-p", "debug", "-h"});
  EXPECT_NE(o.out.find("debug  up  7-00:00:00  1:00:00  8  nosuchgroup  1  alloc  8  0  " + alloc + "\n"),
            std::string::npos)
      << o.out;
  o = ginfo({"-p", "nope"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_EQ(o.err, "ginfo: -p: unknown partition 'nope'\n");
  o = ginfo({"-o", "%Q"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_NE(o.err.find("unknown field '%Q'"), std::string::npos) << o.err;
  o = ginfo({"-t", "sleepy"});
  EXPECT_EQ(o.rc, 2);
}

TEST(AdminCommands, NodePartitionJobAndLiveTopologyAdminsOnly) {
  Cluster c;
  // Not an admin: refused by the daemon, naming why.
  Outcome o = RunCommand(c.h, PHALANX_PATH, {"node", "down", "node3", "--reason", "psu"}, /*as_nobody=*/true);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.err, "phalanx: node node3: down node: admins only (nobody is not one)\n");
  o = RunCommand(c.h, PHALANX_PATH, {"node", "drain", "node3"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_NE(o.err.find("--reason TEXT is required"), std::string::npos) << o.err;
  // Down requeues the job running there.
  const uint64_t j = c.GsubOk({"-p", "debug", "-G", "8"});
  ASSERT_TRUE(c.h.WaitState(j, v1::JOB_STATE_RUNNING));
  const std::string node = c.h.Get(j).nodelist();
  ASSERT_TRUE(node == "node2" || node == "node3") << node;
  o = RunCommand(c.h, PHALANX_PATH, {"node", "down", node, "--reason", "psu"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(WaitFor([&] { return c.h.Get(j).preemptions() == 1; })) << "requeued off the down node";
  o = RunCommand(c.h, PHALANX_PATH, {"node", "show", node});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.find("NodeName=" + node + " State=DOWN Agent=connected\n"), 0u) << o.out;
  EXPECT_NE(o.out.find("   Partitions=debug,long "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("   Reason=psu [root@"), std::string::npos) << o.out;
  o = RunCommand(c.h, PHALANX_PATH, {"node", "resume", "node[2-3]"});
  EXPECT_EQ(o.rc, 0) << o.err;
  ASSERT_TRUE(c.h.WaitState(j, v1::JOB_STATE_RUNNING));
  // Requeue: admins only; a running job goes back to the queue (and starts again).
  o = RunCommand(c.h, PHALANX_PATH, {"job", "requeue", Str(j)}, /*as_nobody=*/true);
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("requeue job: admins only (nobody is not one)"), std::string::npos) << o.err;
  const uint32_t before = c.h.Get(j).preemptions();
  o = RunCommand(c.h, PHALANX_PATH, {"job", "requeue", Str(j)});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_TRUE(WaitFor([&] { return c.h.Get(j).preemptions() == before + 1; }));
  const uint64_t pending = c.GsubOk({"-p", "debug", "-G", "8", "-H"});
  o = RunCommand(c.h, PHALANX_PATH, {"job", "requeue", Str(pending)});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("only running jobs can be requeued (it is pending)"), std::string::npos) << o.err;
  o = RunCommand(c.h, PHALANX_PATH, {"job", "top", Str(pending)});
  EXPECT_EQ(o.rc, 0) << o.err;
  o = RunCommand(c.h, PHALANX_PATH, {"job", "suspend", Str(pending)});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("suspend: only running jobs can be suspended (it is pending)"), std::string::npos) << o.err;
  // Suspend / resume (scontrol's): admins only; gq shows S, then R again.
  ASSERT_TRUE(c.h.WaitState(j, v1::JOB_STATE_RUNNING));
  o = RunCommand(c.h, PHALANX_PATH, {"job", "suspend", Str(j)}, /*as_nobody=*/true);
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("suspend job: admins only (nobody is not one)"), std::string::npos) << o.err;
  o = RunCommand(c.h, PHALANX_PATH, {"job", "suspend", Str(j)});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(RunCommand(c.h, GQ_PATH, {"-h", "-j", Str(j), "-o", "%t %T"}).out, "S SUSPENDED\n");
  o = RunCommand(c.h, PHALANX_PATH, {"job", "resume", Str(pending)});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find("resume: only suspended jobs can be resumed"), std::string::npos) << o.err;
  o = RunCommand(c.h, PHALANX_PATH, {"job", "resume", Str(j)});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(RunCommand(c.h, GQ_PATH, {"-h", "-j", Str(j), "-o", "%t"}).out, "R\n");
  // Partitions as scontrol shows them.
  o = RunCommand(c.h, PHALANX_PATH, {"partition", "show", "debug"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.find("PartitionName=debug\n"
                       "   State=UP Default=NO QoS=high\n"
                       "   AllowUsers=- AllowGroups=nosuchgroup AllowAccounts=-\n"
                       "   DefaultTime=1:00:00 MaxTime=7-00:00:00 MaxGPUsPerJob=8 MaxGPUsPerUser=UNLIMITED\n"
                       "   Nodes=node[2-3] TotalNodes=2 TotalGPUs=16 FreeGPUs="),
            0u)
      << o.out;
  o = RunCommand(c.h, PHALANX_PATH, {"partition", "show", "nope"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.err, "phalanx: partition nope: no such partition\n");
  // The daemon's live tree: the running job's GPUs are not free.
  o = RunCommand(c.h, PHALANX_PATH, {"topology", "show", "--socket", c.h.config.socket_path});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("cluster demo: 4 nodes, 32 GPUs\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("spine [spine]: 24/32 GPUs free, 3/4 nodes free\n"), std::string::npos)
      << "job " << j << " holds one node: " << o.out;
}

}  // namespace
}  // namespace phalanx::service::testing
