// One deterministic crash case, with real phalanxd and agent processes (crash_rig.h).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>

#include "crash_rig.h"
#include "phalanx/v1/phalanx.grpc.pb.h"

namespace phalanx::crash_test {
namespace {

// The outcome of a job whose part ends while phalanxd is down: the agent's registration lists
// the ended part until its exit report is written (PartSupervisor::Running(include_unreported)),
// so Controller::Reconcile keeps tracking it and the PartExited (exit 0) re-sent on the new
// stream completes the job. (Before that, the job was recorded FAILED as "lost".)
TEST(DaemonCrash, JobThatEndsWhileTheDaemonIsDownKeepsItsOutcome) {
  CrashRig rig;
  ASSERT_GT(rig.port, 0);
  ASSERT_NO_FATAL_FAILURE(rig.StartDaemon());
  for (int n = 0; n < kNodes; ++n) ASSERT_NO_FATAL_FAILURE(rig.StartAgent(n));
  auto channel = rig.Channel();
  auto jobs = v1::Jobs::NewStub(channel);
  auto cluster = v1::Cluster::NewStub(channel);
  const auto wait = [](const std::function<bool()>& cond, int seconds) {
    for (const auto end = Clock::now() + std::chrono::seconds(seconds); Clock::now() < end;) {
      if (cond()) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return cond();
  };
  const auto all_up = [&] {
    grpc::ClientContext ctx;
    v1::ListNodesResponse r;
    if (!cluster->ListNodes(&ctx, v1::ListNodesRequest(), &r).ok()) return false;
    return std::all_of(r.nodes().begin(), r.nodes().end(),
                       [](const v1::Node& n) { return n.agent_connected() && n.state() == v1::NODE_STATE_UP; });
  };
  const auto get = [&](uint64_t id) {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job j;
    (void)jobs->Get(&ctx, req, &j);
    return j;
  };
  ASSERT_TRUE(wait(all_up, 20)) << "agents did not register";
  std::mt19937_64 rng(1);
  v1::SubmitRequest req;
  *req.mutable_spec() = MakeSpec(rig.tag + "-one", 0, rig.tag, rig.dir, rng);
  req.mutable_spec()->set_gpus(1);
  req.mutable_spec()->set_command(1, "1");  // sleep 1
  v1::SubmitResponse resp;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(jobs->Submit(&ctx, req, &resp).ok());
  }
  const uint64_t id = resp.job_id();
  ASSERT_TRUE(wait([&] { return !ScanJobs(rig.tag).empty(); }, 10)) << "the job never ran";
  rig.KillDaemon();
  ASSERT_TRUE(wait([&] { return ScanJobs(rig.tag).empty(); }, 10)) << "the job did not end";
  std::this_thread::sleep_for(milliseconds(300));  // the keeper records the exit
  ASSERT_NO_FATAL_FAILURE(rig.StartDaemon());
  ASSERT_TRUE(wait(all_up, 20)) << "agents did not come back";
  ASSERT_TRUE(wait([&] { return get(id).state() != v1::JOB_STATE_RUNNING; }, 10));
  const v1::Job j = get(id);
  EXPECT_EQ(j.state(), v1::JOB_STATE_COMPLETED) << "job " << id << " exited 0 while phalanxd was down; recorded as "
                                                << v1::JobState_Name(j.state()) << " (" << j.reason() << ")";
}

}  // namespace
}  // namespace phalanx::crash_test
