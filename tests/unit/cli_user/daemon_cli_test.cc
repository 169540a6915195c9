// The commands against a real phalanxd (in-process, its real Unix socket and SQLite file:
// tests/unit/service/daemon_harness.h): `phalanx job hold|release|update|show` with their
// errors (unknown job, bad duration, another user's job), and `gq --all` showing where a finished
// job ran, also after the daemon restarted.
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
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
  EXPECT_NE(o.out.find("   GPUs=node2:0-7\n"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace phalanx::service::testing
