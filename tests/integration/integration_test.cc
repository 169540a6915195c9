// Integration tests: the real phalanxd, four phalanx-agent processes (node0..node3 of gen:demo,
// 8 fake GPUs each) and the user CLIs on loopback, with real /bin/sh jobs. See
// docs/integration.md. Every case starts its own cluster (about a second).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "process_cluster.h"

namespace phalanx::integration {
namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A variable of a job's environment, or "<unset NAME>".
std::string Val(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() ? "<unset " + name + ">" : it->second;
}

// All lines of every file in `dir` whose name starts with `prefix`.
std::string ReadAll(const std::string& dir, const std::string& prefix) {
  std::string all;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.path().filename().string().starts_with(prefix)) all += ReadFile(f.path());
  }
  return all;
}

v1::Job GqJob(ProcessCluster& c, uint64_t id) {
  const RunResult r = c.Cli("gq", {"-j", std::to_string(id), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  const auto resp = FromJson<v1::ListJobsResponse>(r.out);
  EXPECT_EQ(resp.jobs_size(), 1) << r.out;
  return resp.jobs_size() == 1 ? resp.jobs(0) : v1::Job();
}

// (a) A 16-GPU gang job confined to one leaf: one part per node, each with the torchrun
// environment; output files named by the -o/-e patterns.
TEST(Integration, GangJobGetsOnePartPerNodeWithItsEnvironment) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  // The job holds its GPUs until the test has looked at it (a file named go; at most 30 s).
  const uint64_t id = c.Gsub(
      {"-G", "16", "--topology", "leaf", "-J", "gang", "-o", "env-%j-%n.out", "-e", "err-%x-%N.err", "--wrap",
       "env | sort; echo to-stderr >&2; i=0; while [ ! -e go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"},
      work);
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_RUNNING));
  const v1::Job running = GqJob(c, id);
  EXPECT_EQ(running.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(running.spec().topology(), v1::TOPOLOGY_LEVEL_LEAF);
  ASSERT_EQ(running.gpus_size(), 16);
  const std::set<std::string> nodes = NodesOf(running);
  ASSERT_EQ(nodes.size(), 2u);
  // One leaf: node0+node1 (leaf0) or node2+node3 (leaf1).
  EXPECT_TRUE(running.nodelist() == "node[0-1]" || running.nodelist() == "node[2-3]") << running.nodelist();
  for (const auto& g : running.gpus()) EXPECT_LT(g.index(), 8u);
  WriteFile(work + "/go", "");
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_COMPLETED));
  const v1::Job job = GqJob(c, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_COMPLETED);
  EXPECT_EQ(job.exit_code(), 0);

  std::map<std::string, std::string> env[2];
  for (int rank = 0; rank < 2; ++rank) {
    const std::string out = work + "/env-" + std::to_string(id) + "-" + std::to_string(rank) + ".out";
    ASSERT_TRUE(Exists(out)) << out;
    env[rank] = ParseEnv(ReadFile(out));
    const auto& e = env[rank];
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(Val(e, "CUDA_VISIBLE_DEVICES"), "0,1,2,3,4,5,6,7");
    EXPECT_EQ(Val(e, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
    EXPECT_EQ(Val(e, "PHALANX_JOB_ID"), std::to_string(id));
    EXPECT_EQ(Val(e, "PHALANX_JOB_NAME"), "gang");
    EXPECT_EQ(Val(e, "SLURM_JOB_PARTITION"), "default");  // no partitions configured: the one default
    EXPECT_EQ(Val(e, "PHALANX_PARTITION"), "default");
    EXPECT_EQ(Val(e, "PHALANX_NODELIST"), running.nodelist());
    EXPECT_EQ(Val(e, "WORLD_SIZE"), "16");
    EXPECT_EQ(Val(e, "NNODES"), "2");
    EXPECT_EQ(Val(e, "NPROC_PER_NODE"), "8");
    EXPECT_EQ(Val(e, "LOCAL_WORLD_SIZE"), "8");
    EXPECT_EQ(Val(e, "NODE_RANK"), std::to_string(rank));
    EXPECT_EQ(Val(e, "PHALANX_NODE_RANK"), std::to_string(rank));
    EXPECT_TRUE(nodes.contains(Val(e, "PHALANX_NODE"))) << Val(e, "PHALANX_NODE");
    EXPECT_EQ(Val(e, "MASTER_ADDR"), "127.0.0.1");  // the agents connect from loopback
    EXPECT_FALSE(Val(e, "MASTER_PORT").empty());
    EXPECT_EQ(Val(e, "USER"), "root");
    // -e with %x and %N: one stderr file per node, named after the job.
    const std::string err = work + "/err-gang-" + Val(e, "PHALANX_NODE") + ".err";
    EXPECT_EQ(ReadFile(err), "to-stderr\n") << err;
  }
  EXPECT_EQ(Val(env[0], "MASTER_ADDR"), Val(env[1], "MASTER_ADDR"));
  EXPECT_EQ(Val(env[0], "MASTER_PORT"), Val(env[1], "MASTER_PORT"));
  EXPECT_NE(Val(env[0], "PHALANX_NODE"), Val(env[1], "PHALANX_NODE"));
  EXPECT_EQ(Val(env[0], "PHALANX_LAUNCH_ID"), Val(env[1], "PHALANX_LAUNCH_ID"));
  // Rank 0 is the first node in topology order.
  EXPECT_EQ(Val(env[0], "PHALANX_NODE"), *nodes.begin());
}

// (b) Exit codes: the first failing part's status is the job's.
TEST(Integration, NonZeroExitFailsTheJobWithItsCode) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const uint64_t failing = c.Gsub({"-G", "2", "-o", "out-%j.txt", "--wrap", "echo about to fail; exit 3"}, work);
  const uint64_t fine = c.Gsub({"-G", "1", "-o", "out-%j.txt", "--", "/bin/echo", "fine"}, work);
  ASSERT_TRUE(c.WaitState(failing, v1::JOB_STATE_FAILED));
  ASSERT_TRUE(c.WaitState(fine, v1::JOB_STATE_COMPLETED));
  const v1::Job job = GqJob(c, failing);
  EXPECT_EQ(job.exit_code(), 3);
  EXPECT_EQ(ReadFile(work + "/out-" + std::to_string(failing) + ".txt"), "about to fail\n");
  EXPECT_EQ(GqJob(c, fine).exit_code(), 0);
  EXPECT_EQ(ReadFile(work + "/out-" + std::to_string(fine) + ".txt"), "fine\n");
  // A command that cannot be executed: the launch fails (127).
  const uint64_t missing = c.Gsub({"-G", "1", "--", "/nonexistent/program"}, work);
  ASSERT_TRUE(c.WaitState(missing, v1::JOB_STATE_FAILED));
  EXPECT_EQ(c.Get(missing).exit_code(), 127);
  // gq shows finished jobs with -a, by state name.
  const RunResult gq = c.Cli("gq", {"-a", "-t", "F", "-o", "%i:%T", "--noheader"});
  EXPECT_EQ(gq.exit_code, 0) << gq.Describe();
  EXPECT_EQ(gq.out, std::to_string(failing) + ":FAILED\n" + std::to_string(missing) + ":FAILED\n");
}

// (c) gcancel of a running job: CANCELLED, and its processes (the script and a background
// child in its process group) are gone.
TEST(Integration, CancelStopsEveryProcessOfTheJob) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const uint64_t id = c.Gsub(
      {"-G", "8", "-o", "cancel.out", "--wrap",
       "sleep 50 & echo $! > bg.pid; echo $$ > main.pid; i=0; while [ $i -lt 500 ]; do sleep 0.1; i=$((i+1)); done"},
      work);
  ASSERT_NE(id, 0u);
  std::optional<pid_t> main_pid, bg_pid;
  ASSERT_TRUE(WaitFor([&] {
    main_pid = ReadPid(work + "/main.pid");
    bg_pid = ReadPid(work + "/bg.pid");
    return main_pid && bg_pid;
  })) << c.Get(id).ShortDebugString();
  EXPECT_EQ(c.State(id), v1::JOB_STATE_RUNNING);
  EXPECT_FALSE(ProcessGone(*main_pid));
  EXPECT_FALSE(ProcessGone(*bg_pid));
  const RunResult r = c.Cli("gcancel", {std::to_string(id)});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out, "");
  const v1::Job job = c.Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(Contains(job.reason(), "cancelled by root")) << job.reason();
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(*main_pid) && ProcessGone(*bg_pid); }, 20s))
      << "job processes still alive after the cancel";
  // Its GPUs are free again.
  EXPECT_TRUE(WaitFor([&] {
    uint32_t free = 0;
    for (const auto& n : c.Nodes()) free += n.gpus_free();
    return free == 32;
  }));
  // Cancelling again is refused (exit 1, the daemon's message).
  const RunResult again = c.Cli("gcancel", {std::to_string(id)});
  EXPECT_EQ(again.exit_code, 1) << again.Describe();
  EXPECT_TRUE(Contains(again.err, "already cancelled")) << again.err;
}

// (d) Walltime: a job with -t 00:00:02 running `sleep 60` is KILLED after about two seconds.
TEST(Integration, WalltimeKillsTheJob) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t id = c.Gsub({"-G", "1", "-t", "00:00:02", "--wrap", "echo $$ > main.pid; exec sleep 60"}, work);
  ASSERT_NE(id, 0u);
  std::optional<pid_t> pid;
  ASSERT_TRUE(WaitFor([&] { return (pid = ReadPid(work + "/main.pid")).has_value(); }));
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_KILLED, 30s));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(secs, 1.0);
  EXPECT_LT(secs, 20.0);
  // The reason is filled in once the kill decision is committed and carried out; the state
  // changes a moment earlier (docs/daemon.md, event flow).
  EXPECT_TRUE(WaitFor([&] { return Contains(c.Get(id).reason(), "walltime"); }, 10s)) << c.Get(id).ShortDebugString();
  const v1::Job job = c.Get(id);
  EXPECT_EQ(job.walltime_s(), 2);
  EXPECT_GE(job.end_time() - job.start_time(), 1);
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(*pid); }, 20s)) << "sleep 60 still runs";
}

// (e) afterok: B waits (Dependency) while A runs, starts only after A completed.
TEST(Integration, AfterOkDependencyStartsOnlyAfterTheFirstJobCompleted) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  // A waits for a file the test writes, so B is seen pending while A runs.
  const uint64_t a =
      c.Gsub({"-G", "8", "-J", "first", "--wrap",
              "i=0; while [ ! -e go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; date +%s%N > a.end"},
             work);
  const uint64_t b = c.Gsub({"-G", "8", "-J", "second", "-d", "afterok:" + std::to_string(a), "--wrap",
                             "date +%s%N > b.start; test -e a.end"},
                            work);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  ASSERT_TRUE(c.WaitState(a, v1::JOB_STATE_RUNNING));
  const v1::Job pending = GqJob(c, b);
  EXPECT_EQ(pending.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(pending.reason(), "Dependency") << pending.ShortDebugString();
  const RunResult gq = c.Cli("gq", {"-o", "%i:%R", "--noheader"});
  EXPECT_TRUE(Contains(gq.out, std::to_string(b) + ":(Dependency: afterok:" + std::to_string(a) + ")"))
      << gq.Describe();
  EXPECT_FALSE(Exists(work + "/b.start"));
  WriteFile(work + "/go", "");
  ASSERT_TRUE(c.WaitState(a, v1::JOB_STATE_COMPLETED));
  ASSERT_TRUE(c.WaitState(b, v1::JOB_STATE_COMPLETED));
  const long long a_end = std::stoll(ReadFile(work + "/a.end"));
  const long long b_start = std::stoll(ReadFile(work + "/b.start"));
  EXPECT_GT(b_start, a_end);
  EXPECT_GE(c.Get(b).start_time(), c.Get(a).end_time());

  // A failing dependency: the dependent job stays pending, never run (DependencyNeverSatisfied,
  // as Slurm), until its user cancels it.
  const uint64_t bad = c.Gsub({"-G", "1", "--wrap", "exit 1"}, work);
  const uint64_t never = c.Gsub({"-G", "1", "-d", "afterok:" + std::to_string(bad), "--wrap", "touch never.ran"}, work);
  ASSERT_TRUE(c.WaitState(bad, v1::JOB_STATE_FAILED));
  ASSERT_TRUE(WaitFor([&] { return c.Get(never).reason() == "DependencyNeverSatisfied"; }))
      << c.Get(never).ShortDebugString();
  EXPECT_EQ(c.State(never), v1::JOB_STATE_PENDING);
  EXPECT_EQ(c.Cli("gcancel", {std::to_string(never)}).exit_code, 0);
  ASSERT_TRUE(c.WaitState(never, v1::JOB_STATE_CANCELLED));
  EXPECT_FALSE(Exists(work + "/never.ran"));
}

// A job array of 4 tasks, at most 2 running (%2): each task sees SLURM_ARRAY_* and writes the
// file its %A/%a pattern names; gq collapses the pending tasks; gcancel takes one task, some
// tasks or the whole array.
TEST(Integration, JobArrayRunsTwoTasksAtATimeWithSlurmsVariablesAndFiles) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const uint64_t a = c.Gsub({"-G", "1", "--array=0-3%2", "-J", "arr", "-o", "arr-%A_%a.out", "--wrap",
                             "env | sort; i=0; while [ ! -e go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"},
                            work);
  ASSERT_NE(a, 0u);
  const auto task = [&](uint32_t i) { return a + 1 + i; };  // the tasks take the ids after the array's
  ASSERT_TRUE(c.WaitState(task(0), v1::JOB_STATE_RUNNING));
  ASSERT_TRUE(c.WaitState(task(1), v1::JOB_STATE_RUNNING));
  ASSERT_TRUE(WaitFor([&] { return c.Get(task(3)).reason() == "JobArrayTaskLimit"; }))
      << c.Get(task(3)).ShortDebugString();
  EXPECT_EQ(c.State(task(2)), v1::JOB_STATE_PENDING);
  EXPECT_EQ(c.Get(task(2)).array_job_id(), a);
  EXPECT_EQ(c.Get(task(2)).array_task_id(), 2u);
  const std::string A = std::to_string(a);
  const RunResult gq = c.Cli("gq", {"-o", "%t %i", "--noheader"});  // ST is 2 wide; no trailing blanks
  EXPECT_TRUE(Contains(gq.out, "R  " + A + "_0\n")) << gq.Describe();
  EXPECT_TRUE(Contains(gq.out, "R  " + A + "_1\n")) << gq.Describe();
  EXPECT_TRUE(Contains(gq.out, "PD " + A + "_[2-3%2]\n")) << gq.Describe();
  const RunResult gq_r = c.Cli("gq", {"-r", "-o", "%i", "--noheader"});
  EXPECT_TRUE(Contains(gq_r.out, A + "_3\n")) << gq_r.Describe();
  WriteFile(work + "/go", "");
  for (uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(c.WaitState(task(i), v1::JOB_STATE_COMPLETED)) << i;
  // %2 held: the last two started only after the first two ended.
  EXPECT_GE(c.Get(task(2)).start_time(), std::min(c.Get(task(0)).end_time(), c.Get(task(1)).end_time()));
  for (uint32_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("task " + std::to_string(i));
    const std::string out = work + "/arr-" + A + "_" + std::to_string(i) + ".out";
    ASSERT_TRUE(Exists(out)) << out;
    const auto e = ParseEnv(ReadFile(out));
    EXPECT_EQ(Val(e, "SLURM_ARRAY_JOB_ID"), A);
    EXPECT_EQ(Val(e, "SLURM_ARRAY_TASK_ID"), std::to_string(i));
    EXPECT_EQ(Val(e, "SLURM_ARRAY_TASK_COUNT"), "4");
    EXPECT_EQ(Val(e, "SLURM_ARRAY_TASK_MIN"), "0");
    EXPECT_EQ(Val(e, "SLURM_ARRAY_TASK_MAX"), "3");
    EXPECT_EQ(Val(e, "SLURM_ARRAY_TASK_STEP"), "1");
    EXPECT_EQ(Val(e, "PHALANX_JOB_ID"), std::to_string(task(i)));
  }

  // gcancel: one task, some tasks, then the rest of the array (held, so nothing runs).
  const uint64_t h = c.Gsub({"-G", "1", "-H", "--array=0-5", "--wrap", "true"}, work);
  ASSERT_NE(h, 0u);
  const std::string H = std::to_string(h);
  EXPECT_EQ(c.Cli("gcancel", {H + "_1"}).exit_code, 0);
  EXPECT_EQ(c.Cli("gcancel", {H + "_[3-4]"}).exit_code, 0);
  EXPECT_EQ(c.State(h + 2), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(c.State(h + 4), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(c.State(h + 5), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(c.State(h + 1), v1::JOB_STATE_PENDING);
  const RunResult no_task = c.Cli("gcancel", {H + "_9"});
  EXPECT_NE(no_task.exit_code, 0);
  EXPECT_TRUE(Contains(no_task.err, "has no task 9")) << no_task.Describe();
  EXPECT_EQ(c.Cli("gcancel", {H}).exit_code, 0);
  for (uint64_t t = h + 1; t <= h + 6; ++t) EXPECT_EQ(c.State(t), v1::JOB_STATE_CANCELLED) << t;
}

// (f) Checkpoint preemption as the job sees it: a low-priority job traps the checkpoint signal
// (SIGUSR1), writes a marker and reports its checkpoint with `phalanx-agent checkpoint-done`; an
// urgent job that needs its GPUs arrives: the low job is requeued and, once the urgent job is
// done, resumes with PHALANX_CHECKPOINT_EPOCH/PATH set.
TEST(Integration, CheckpointPreemptionIsSeenByTheJobAndItResumes) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  // Three nodes held by a job that cannot be preempted, so the urgent job needs the low job's node.
  const uint64_t filler = c.Gsub({"-N", "3", "--gpus-per-node", "8", "-q", "high", "-J", "filler", "--wrap",
                                  "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done"},
                                 work);
  ASSERT_TRUE(c.WaitState(filler, v1::JOB_STATE_RUNNING));

  v1::JobSpec low;
  low.set_name("low");
  low.set_priority_class("low");
  low.set_gpus(8);
  low.set_walltime_s(300);
  low.set_working_dir(work);
  low.set_stdout_pattern("low-%j.out");
  (*low.mutable_env())["PATH"] = "/usr/bin:/bin";
  (*low.mutable_env())["AGENT"] = Bins().agent;
  low.set_script(
      "#!/bin/sh\n"
      "echo \"start launch=$PHALANX_LAUNCH_ID epoch=${PHALANX_CHECKPOINT_EPOCH:-none} "
      "path=${PHALANX_CHECKPOINT_PATH:-none} "
      "signal=$PHALANX_CHECKPOINT_SIGNAL\"\n"
      "trap 'echo \"checkpoint signal launch=$PHALANX_LAUNCH_ID\"; touch marker-$PHALANX_LAUNCH_ID;"
      " echo reporting; \"$AGENT\" checkpoint-done --epoch 1 --path /ckpt/low-1 && echo reported' USR1\n"
      "trap 'date +%s%N > exit-$PHALANX_LAUNCH_ID; exit 143' TERM\n"
      "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n");
  const uint64_t low_id = c.Submit(low);
  ASSERT_NE(low_id, 0u);
  ASSERT_TRUE(c.WaitState(low_id, v1::JOB_STATE_RUNNING));
  const std::string out = work + "/low-" + std::to_string(low_id) + ".out";
  ASSERT_TRUE(WaitFor([&] { return Contains(ReadFile(out), "start launch="); }));
  const v1::Job before = c.Get(low_id);
  EXPECT_EQ(before.preemptions(), 0u);

  const uint64_t urgent = c.Gsub({"-G", "8", "-q", "urgent", "-J", "urgent", "-o", "urgent.out", "--wrap",
                                  "date +%s%N > urgent.start; echo urgent on $PHALANX_NODE; sleep 1"},
                                 work);
  ASSERT_NE(urgent, 0u);
  // The low job saw the signal and reported; it was requeued with its checkpoint. ("reported",
  // echoed after checkpoint-done returns, may never be written: the daemon can requeue the job,
  // and its TERM end the script, first; the epoch below shows the report arrived.)
  ASSERT_TRUE(WaitFor([&] { return Contains(ReadFile(out), "reporting"); })) << ReadFile(out);
  ASSERT_TRUE(WaitFor([&] { return c.Get(low_id).preemptions() == 1; })) << c.Get(low_id).ShortDebugString();
  const v1::Job requeued = c.Get(low_id);
  EXPECT_EQ(requeued.checkpoint_epoch(), 1u);
  ASSERT_TRUE(c.WaitState(urgent, v1::JOB_STATE_COMPLETED));
  EXPECT_EQ(ReadFile(work + "/urgent.out"), "urgent on " + *NodesOf(before).begin() + "\n");
  // Resumed from the checkpoint after the urgent job.
  ASSERT_TRUE(WaitFor([&] { return Contains(ReadFile(out), "epoch=1 path=/ckpt/low-1"); })) << ReadFile(out);
  EXPECT_EQ(c.State(low_id), v1::JOB_STATE_RUNNING);
  // The shell reports the `sleep` the signal interrupted ("User defined signal 1"): skip that.
  std::vector<std::string> lines;
  for (const auto& l : Lines(ReadFile(out))) {
    if (!Contains(l, "User defined signal")) lines.push_back(l);
  }
  ASSERT_GE(lines.size(), 4u) << ReadFile(out);
  EXPECT_TRUE(lines[0].starts_with("start launch=") && Contains(lines[0], "epoch=none path=none signal=10"))
      << lines[0];
  EXPECT_TRUE(lines[1].starts_with("checkpoint signal launch=")) << lines[1];
  EXPECT_EQ(lines[2], "reporting");
  EXPECT_TRUE(Contains(lines.back(), "epoch=1 path=/ckpt/low-1 signal=10")) << lines.back();
  EXPECT_NE(lines[0].substr(0, lines[0].find(' ', 13)), lines.back().substr(0, lines.back().find(' ', 13)))
      << "a new launch id for the restart";
  // Exactly one marker: the signal came once, to the first launch.
  int markers = 0;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(work, ec))
    markers += f.path().filename().string().starts_with("marker-");
  EXPECT_EQ(markers, 1);
  // GPU handoff: the urgent job started on those GPUs only after the preempted part had exited.
  const std::string first_launch = lines[0].substr(13, lines[0].find(' ', 13) - 13);
  const std::string exit_file = work + "/exit-" + first_launch;
  ASSERT_TRUE(Exists(exit_file)) << exit_file;
  EXPECT_GE(std::stoll(ReadFile(work + "/urgent.start")), std::stoll(ReadFile(exit_file)));
}

// (g) Elastic resize: an elastic low job (8..32 GPUs, whole nodes) starts at 32; a high job
// needing 16 GPUs shrinks it through a checkpoint (restart at 16, resuming from the checkpoint);
// when the high job is done and the GPUs are idle, it grows back to 32.
TEST(Integration, ElasticJobShrinksForAHigherClassAndGrowsBack) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const uint64_t el = c.Gsub(
      {"-G", "8:32", "--elastic-step", "8", "-q", "low", "-J", "elastic", "-o", "el-%j-%N.out", "--wrap",
       "echo \"launch=$PHALANX_LAUNCH_ID world=$WORLD_SIZE nnodes=$NNODES epoch=${PHALANX_CHECKPOINT_EPOCH:-none}\"\n"
       "trap 'echo \"$((${PHALANX_CHECKPOINT_EPOCH:-0} + 1)) /ckpt/el\" > \"$PHALANX_CHECKPOINT_FILE\"' USR1\n"
       "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done"},
      work);
  ASSERT_NE(el, 0u);
  ASSERT_TRUE(c.WaitState(el, v1::JOB_STATE_RUNNING));
  EXPECT_EQ(c.Get(el).gpus_size(), 32) << "an elastic job starts at the largest legal size on an idle cluster";
  ASSERT_TRUE(WaitFor([&] { return ReadAll(work, "el-").find("world=32") != std::string::npos; }));

  const uint64_t hi =
      c.Gsub({"-G", "16", "-q", "high", "-J", "hi", "-o", "hi.out", "--wrap", "echo hi $WORLD_SIZE; sleep 2"}, work);
  ASSERT_NE(hi, 0u);
  ASSERT_TRUE(c.WaitState(hi, v1::JOB_STATE_RUNNING));
  // Shrunk to 16 (two nodes), restarted from its checkpoint.
  ASSERT_TRUE(WaitFor([&] {
    const std::string all = ReadAll(work, "el-");
    size_t n = 0;
    for (size_t p = all.find("world=16 nnodes=2 epoch=1"); p != std::string::npos;
         p = all.find("world=16 nnodes=2 epoch=1", p + 1))
      ++n;
    return n == 2;
  })) << ReadAll(work, "el-");
  v1::Job shrunk = c.Get(el);
  EXPECT_EQ(shrunk.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(shrunk.gpus_size(), 16);
  EXPECT_EQ(shrunk.checkpoint_epoch(), 1u);
  EXPECT_GE(shrunk.resizes(), 1u);
  std::set<std::string> both = NodesOf(shrunk);
  for (const auto& n : NodesOf(c.Get(hi))) EXPECT_FALSE(both.contains(n)) << n << " shared";
  ASSERT_TRUE(c.WaitState(hi, v1::JOB_STATE_COMPLETED));
  EXPECT_EQ(ReadFile(work + "/hi.out"), "hi 16\nhi 16\n");  // two nodes, one file
  // Grown back to 32 once the GPUs were idle (grow_after_idle: 1 s).
  ASSERT_TRUE(WaitFor([&] { return c.Get(el).gpus_size() == 32; })) << c.Get(el).ShortDebugString();
  ASSERT_TRUE(WaitFor([&] {
    const std::string all = ReadAll(work, "el-");
    size_t n = 0;
    for (size_t p = all.find("world=32 nnodes=4 epoch=1"); p != std::string::npos;
         p = all.find("world=32 nnodes=4 epoch=1", p + 1))
      ++n;
    return n == 4;
  })) << ReadAll(work, "el-");
  const v1::Job grown = c.Get(el);
  EXPECT_EQ(grown.state(), v1::JOB_STATE_RUNNING);
  EXPECT_GE(grown.resizes(), 2u);
}

// (h) The agent of a node with a running job is SIGKILLed: after the grace the node goes down,
// the job is requeued and runs on another node. The agent comes back: the node is up again and
// the stale part it still had is stopped (reconciliation).
TEST(Integration, KilledAgentTakesItsNodeDownAndTheJobRunsElsewhere) {
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  const uint64_t id = c.Gsub({"-N", "1", "--gpus-per-node", "8", "-J", "survivor", "-o", "run-%N.out", "--wrap",
                              "echo \"node=$PHALANX_NODE launch=$PHALANX_LAUNCH_ID\"; echo $$ > pid-$PHALANX_NODE; "
                              "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done"},
                             work);
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_RUNNING));
  const v1::Job first = c.Get(id);
  ASSERT_EQ(NodesOf(first).size(), 1u);
  const std::string node = *NodesOf(first).begin();
  std::optional<pid_t> old_pid;
  ASSERT_TRUE(WaitFor([&] { return (old_pid = ReadPid(work + "/pid-" + node)).has_value(); }));

  // Kill the agent only once it has recorded the part in its state dir (parts/<launch>.part):
  // a part started but not yet recorded is not re-adopted by a restarted agent and nobody stops
  // it (docs/integration.md, "Known issues").
  const std::string parts_dir = c.File("agent-" + node + "/parts");
  ASSERT_TRUE(WaitFor([&] {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(parts_dir, ec)) {
      if (f.path().extension() == ".part") return true;
    }
    return false;
  })) << parts_dir;
  ASSERT_NO_FATAL_FAILURE(c.KillAgent(c.NodeIndex(node), SIGKILL));
  // ginfo -N --json (the CLI against the daemon) shows the node down after the grace.
  ASSERT_TRUE(WaitFor([&] {
    const RunResult r = c.Cli("ginfo", {"-N", "--json"});
    if (r.exit_code != 0) return false;
    const v1::ListNodesResponse nodes = NodesFromGinfoJson(r.out);
    for (const auto& n : nodes.nodes()) {
      if (n.name() == node) return n.state() == v1::NODE_STATE_DOWN && !n.agent_connected();
    }
    return false;
  })) << c.Node(node).ShortDebugString();
  ASSERT_TRUE(WaitFor([&] {
    const v1::Job j = c.Get(id);
    return j.state() == v1::JOB_STATE_RUNNING && j.preemptions() == 1 && !NodesOf(j).contains(node);
  })) << c.Get(id).ShortDebugString();
  const std::string other = *NodesOf(c.Get(id)).begin();
  ASSERT_TRUE(WaitFor([&] { return Contains(ReadFile(work + "/run-" + other + ".out"), "node=" + other); }));
  EXPECT_NE(ReadFile(work + "/run-" + other + ".out"), ReadFile(work + "/run-" + node + ".out"));
  // The orphaned part on the dead agent's node still runs (nobody stopped it yet).
  EXPECT_FALSE(ProcessGone(*old_pid));
  const RunResult ginfo = c.Cli("ginfo", {});
  EXPECT_TRUE(Contains(ginfo.out, "down")) << ginfo.Describe();

  // The agent comes back with the same state dir: it re-adopts the old part and reports it; the
  // daemon runs the job elsewhere, so that part is stopped.
  ASSERT_NO_FATAL_FAILURE(c.StartAgent(c.NodeIndex(node)));
  ASSERT_TRUE(WaitFor([&] {
    const v1::Node n = c.Node(node);
    return n.state() == v1::NODE_STATE_UP && n.agent_connected();
  })) << c.Node(node).ShortDebugString();
  EXPECT_TRUE(WaitFor([&] { return ProcessGone(*old_pid); }, 20s)) << "the stale part was not stopped";
  EXPECT_EQ(c.State(id), v1::JOB_STATE_RUNNING);
  EXPECT_TRUE(NodesOf(c.Get(id)).contains(other));
}

// A user who is not root: gsub runs as nobody (setuid before connecting); the daemon knows the
// user from SO_PEERCRED, the agent runs the job as nobody and its output file belongs to nobody.
TEST(Integration, JobSubmittedByNobodyRunsAsNobody) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (to become nobody, and for the agents to run jobs as nobody)";
  ProcessCluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("nobody-work", kNobody, kNogroup);
  RunOptions as_nobody;
  as_nobody.uid = kNobody;
  as_nobody.gid = kNogroup;
  as_nobody.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "USER=nobody", "LOGNAME=nobody"};
  const uint64_t id = c.Gsub(
      {"-G", "2", "-J", "whoami", "-o", "who-%u-%j.out", "--wrap", "id -u; id -g; echo $USER; pwd"}, work, as_nobody);
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(c.WaitState(id, v1::JOB_STATE_COMPLETED));
  const v1::Job job = c.Get(id);
  EXPECT_EQ(job.user(), "nobody");
  EXPECT_EQ(job.uid(), kNobody);
  const std::string out = work + "/who-nobody-" + std::to_string(id) + ".out";
  EXPECT_EQ(ReadFile(out), "65534\n65534\nnobody\n" + work + "\n");
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0) << out;
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_EQ(st.st_gid, kNogroup);

  // nobody sees its job with gq --me, and may not cancel root's.
  const RunResult gq = c.Cli("gq", {"--me", "-a", "--json"}, as_nobody);
  ASSERT_EQ(gq.exit_code, 0) << gq.Describe();
  const auto mine = FromJson<v1::ListJobsResponse>(gq.out);
  ASSERT_EQ(mine.jobs_size(), 1) << gq.out;
  EXPECT_EQ(mine.jobs(0).id(), id);
  const uint64_t roots = c.Gsub({"-G", "1", "-H", "--wrap", "true"}, c.dir());
  const RunResult cancel = c.Cli("gcancel", {std::to_string(roots)}, as_nobody);
  EXPECT_EQ(cancel.exit_code, 1) << cancel.Describe();
  EXPECT_TRUE(Contains(cancel.err, "root")) << cancel.err;
  EXPECT_EQ(c.State(roots), v1::JOB_STATE_PENDING);
}

}  // namespace
}  // namespace phalanx::integration
