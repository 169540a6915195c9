// Attained-service preemption in phalanxd with real agents (docs/scheduling.md, "Attained-service
// priority"): with `order: attained`, a short job of the same class preempts a long one that has
// had more service, through the checkpoint handshake; the long job checkpoints, is requeued and
// resumes with PHALANX_RESUME=1 after the short job, and finishes. See docs/integration.md.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "process_cluster.h"

namespace phalanx::integration {
namespace {

std::vector<std::string> OutputLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!Contains(line, "User defined signal")) out.push_back(line);  // the shell's note on the sleep
  }
  return out;
}

ProcessCluster::Options AttainedOptions() {
  ProcessCluster::Options o;
  // One threshold of 8 GPU-seconds: an 8-GPU job is in queue 1 after a second of running, and
  // may be preempted for service after a second of its run.
  o.scheduler_config =
      "  order: attained\n"
      "  service_queues: [8]\n"
      "  service_min_run: 1\n";
  return o;
}

TEST(IntegrationAttained, AShortJobPreemptsALongOneThatCheckpointsAndResumes) {
  ProcessCluster c(AttainedOptions());
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::string work = c.MakeDir("work");
  // Three nodes held by a job of a higher class (service preempts only within a class), so the
  // short job needs the long job's node.
  const uint64_t filler = c.Gsub({"-N", "3", "--gpus-per-node", "8", "-q", "high", "-J", "filler", "--wrap",
                                  "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done"},
                                 work);
  ASSERT_TRUE(c.WaitState(filler, v1::JOB_STATE_RUNNING));

  v1::JobSpec long_job;
  long_job.set_name("long");
  long_job.set_gpus(8);
  long_job.set_walltime_s(300);
  long_job.set_working_dir(work);
  long_job.set_stdout_pattern("long-%j.out");
  (*long_job.mutable_env())["PATH"] = "/usr/bin:/bin";
  (*long_job.mutable_env())["AGENT"] = Bins().agent;
  // First run: a minute of work, checkpointing on the signal. The resumed run finishes at once.
  long_job.set_script(
      "#!/bin/sh\n"
      "echo \"start resume=$PHALANX_RESUME restarts=$PHALANX_RESTART_COUNT "
      "epoch=${PHALANX_CHECKPOINT_EPOCH:-none} path=${PHALANX_CHECKPOINT_PATH:-none}\"\n"
      "if [ \"$PHALANX_RESUME\" = 1 ]; then echo resumed; exit 0; fi\n"
      "trap 'echo checkpoint signal; \"$AGENT\" checkpoint-done --epoch 1 --path /ckpt/long-1' USR1\n"
      "trap 'exit 143' TERM\n"
      "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n");
  const uint64_t long_id = c.Submit(long_job);
  ASSERT_NE(long_id, 0u);
  ASSERT_TRUE(c.WaitState(long_id, v1::JOB_STATE_RUNNING));
  const std::string out = work + "/long-" + std::to_string(long_id) + ".out";
  ASSERT_TRUE(WaitFor([&] { return Contains(ReadFile(out), "start resume="); }));
  const std::set<std::string> long_nodes = NodesOf(c.Get(long_id));

  // Same class, no service yet: queue 0, ahead of the long job once that has had 8 GPU-seconds.
  const uint64_t short_id =
      c.Gsub({"-G", "8", "-J", "short", "-o", "short.out", "--wrap", "echo short on $PHALANX_NODE; sleep 1"}, work);
  ASSERT_NE(short_id, 0u);
  ASSERT_TRUE(WaitFor([&] { return Contains(ReadFile(out), "checkpoint signal"); })) << ReadFile(out);
  ASSERT_TRUE(WaitFor([&] { return c.Get(long_id).preemptions() == 1; })) << c.Get(long_id).ShortDebugString();
  EXPECT_EQ(c.Get(long_id).checkpoint_epoch(), 1u);
  ASSERT_TRUE(c.WaitState(short_id, v1::JOB_STATE_COMPLETED));
  EXPECT_EQ(ReadFile(work + "/short.out"), "short on " + *long_nodes.begin() + "\n");
  // Resumed from its checkpoint, told so, and done; never preempted again.
  ASSERT_TRUE(c.WaitState(long_id, v1::JOB_STATE_COMPLETED)) << ReadFile(out);
  const v1::Job done = c.Get(long_id);
  EXPECT_EQ(done.preemptions(), 1u);
  EXPECT_EQ(c.State(filler), v1::JOB_STATE_RUNNING) << "a higher class is not preempted for service";
  const std::vector<std::string> lines = OutputLines(ReadFile(out));
  ASSERT_GE(lines.size(), 4u) << ReadFile(out);
  EXPECT_EQ(lines[0], "start resume=0 restarts=0 epoch=none path=none");
  EXPECT_EQ(lines[1], "checkpoint signal");
  EXPECT_EQ(lines[lines.size() - 2], "start resume=1 restarts=1 epoch=1 path=/ckpt/long-1");
  EXPECT_EQ(lines.back(), "resumed");
}

}  // namespace
}  // namespace phalanx::integration
