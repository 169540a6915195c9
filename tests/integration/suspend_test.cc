// scontrol suspend / resume on real processes: phalanxd, phalanx-agent processes and a /bin/sh
// job. A suspended job's processes are stopped (state T in /proc/PID/stat), gq shows it S, it
// keeps its GPUs and its walltime clock stops (it outlives its walltime while suspended, also
// across a restart of its node's agent); resumed, its processes run again and it completes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "process_cluster.h"

namespace phalanx::integration {
namespace {

// The state letter of /proc/PID/stat (R, S, T, Z, ...); 0 when it cannot be read.
char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

grpc::Status Suspend(ProcessCluster& c, uint64_t id, bool resume) {
  grpc::ClientContext ctx;
  v1::SuspendRequest req;
  req.set_job_id(id);
  req.set_resume(resume);
  v1::Job job;
  return c.jobs().Suspend(&ctx, req, &job);
}

std::string GqState(ProcessCluster& c, uint64_t id) {
  const RunResult r = c.Cli("gq", {"-h", "-j", std::to_string(id), "-o", "%t"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  return r.out;
}

TEST(Integration, SuspendStopsTheJobsProcessesAndItsWalltimeClock) {
  ProcessCluster::Options o;
  o.nodes = 1;
  o.agents_config = "  heartbeat_timeout: 3\n  grace: 20\n  kill_grace: 2\n";  // the agent may restart
  ProcessCluster c(o);
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  // A 3 s walltime; it ends on its own once the fifo `go` is opened and closed for writing
  // (after the resume). The main shell waits in `read`, starting no process: a command it starts
  // (dash vforks) and that the suspend stops before its exec would leave the shell waiting for
  // it, in state D, not T.
  const uint64_t id = c.Gsub({"-G", "8", "-t", "00:00:03", "-o", "job.out", "--wrap",
                              "sleep 100 & echo $! > bg.pid; mkfifo go; echo $$ > main.pid; "
                              "read x < go; kill $!; echo done"},
                             work);
  ASSERT_NE(id, 0u);
  std::optional<pid_t> main_pid, bg_pid;
  ASSERT_TRUE(WaitFor([&] {
    main_pid = ReadPid(work + "/main.pid");
    bg_pid = ReadPid(work + "/bg.pid");
    return main_pid && bg_pid;
  })) << c.Get(id).ShortDebugString();

  ASSERT_TRUE(Suspend(c, id, false).ok());
  // Every process of its group stops.
  EXPECT_TRUE(WaitFor([&] { return ProcState(*main_pid) == 'T' && ProcState(*bg_pid) == 'T'; }, 10s))
      << ProcState(*main_pid) << " " << ProcState(*bg_pid) << "\n"
      << c.Logs();
  const v1::Job suspended = c.Get(id);
  EXPECT_EQ(suspended.state(), v1::JOB_STATE_SUSPENDED);
  EXPECT_GT(suspended.suspend_time(), 0);
  EXPECT_EQ(suspended.gpus_size(), 8) << "a suspended job keeps its GPUs";
  EXPECT_EQ(GqState(c, id), "S\n");
  EXPECT_EQ(c.Nodes().at(0).gpus_free(), 0u);
  const grpc::Status twice = Suspend(c, id, false);
  EXPECT_EQ(twice.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << twice.error_message();

  // Its node's agent restarts (same state dir) while it is suspended: the job stays suspended.
  ASSERT_NO_FATAL_FAILURE(c.KillAgent(0, SIGKILL));
  ASSERT_NO_FATAL_FAILURE(c.StartAgent(0));
  ASSERT_TRUE(WaitFor([&] { return c.Node("node0").agent_connected(); })) << c.Logs();
  // Past its 3 s walltime (counted from its start) while suspended: not killed.
  std::this_thread::sleep_for(3500ms);
  EXPECT_EQ(c.State(id), v1::JOB_STATE_SUSPENDED) << c.Get(id).ShortDebugString();
  EXPECT_EQ(ProcState(*main_pid), 'T');
  EXPECT_EQ(ProcState(*bg_pid), 'T');

  ASSERT_TRUE(Suspend(c, id, true).ok());
  EXPECT_TRUE(WaitFor([&] { return ProcState(*main_pid) != 'T' && ProcState(*bg_pid) != 'T'; }, 10s))
      << ProcState(*main_pid) << " " << ProcState(*bg_pid);
  EXPECT_EQ(c.State(id), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(GqState(c, id), "R\n");
  // Opened for writing once the job reads it (without a reader the open fails at once), closed.
  ASSERT_TRUE(WaitFor([&] {
    const int fd = ::open((work + "/go").c_str(), O_WRONLY | O_NONBLOCK);
    if (fd < 0) return false;
    ::close(fd);
    return true;
  })) << c.Logs();
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_COMPLETED)) << c.Logs();
  EXPECT_EQ(ReadFile(work + "/job.out"), "done\n");
}

}  // namespace
}  // namespace phalanx::integration
