// SlurmExecutor against a fake Slurm (fake_slurm_adapter.h) and a fake host that owns a real
// core: submission once, the fallback lease, release on the placement's nodes in Slurm's order,
// node sync, the pitfalls of docs/slurm.md (the owner's own hold, a released job still pending,
// requeue delays), and a restart that re-links instead of placing twice. Slurm's partitions:
// slurm_executor_partitions_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "slurm_executor_fixture.h"

namespace phalanx::service {
namespace {

using namespace slurm_test;  // NOLINT: the fixture's names
TEST_F(SlurmExecutorTest, ManagedJobSubmittedOnceLeasedAndReleasedOnOneLeaf) {
  Unmanaged(1, "n2", 2000);
  Unmanaged(2, "n4", 1100);
  Managed(3);
  Round();
  Round();
  EXPECT_EQ(host_.submits, 1);
  EXPECT_EQ(exec_->slurm_job(1), 3u);
  // n2 and n4 are busy with Slurm's own jobs: no leaf has two free nodes, so it waits (Slurm
  // alone would take n1 + n3, across the leaves).
  EXPECT_TRUE(slurm_.Calls("start").empty());
  ASSERT_FALSE(slurm_.Calls("defer").empty());
  EXPECT_EQ(slurm_.Calls("defer")[0].time, host_.now + 30);  // the lease
  // n2 and n4 stay up for the core; their GPUs are the external load until the jobs' ends.
  EXPECT_EQ(exec_->node("n2").availability, NodeAvailability::kAvailable);
  EXPECT_EQ(host_.core().external_load("n2").gpus, 8u);
  EXPECT_EQ(host_.core().external_load("n2").until, 2000);
  EXPECT_EQ(host_.core().external_load("n4").until, 1100);
  // Backfill plans around Slurm's own jobs: n4 frees at 1100 (t=18 min), so leaf2 then.
  EXPECT_EQ(host_.core().job(1)->wait.predicted_start, 1100);
  EXPECT_EQ(slurm_.job(3)->comment, "phalanx: TopologyBlock(leaf) start~1970-01-01T00:18Z");

  host_.now += 5;
  slurm_.job(2)->state = SlurmJobState::kCompleted;  // n4 frees
  Round();
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
  EXPECT_EQ(starts[0].time, host_.now);
  EXPECT_EQ(starts[0].text, "phalanx: placed on n[3-4]");

  slurm_.job(3)->state = SlurmJobState::kRunning;
  slurm_.job(3)->nodes = {"n3", "n4"};
  Round();
  slurm_.job(3)->state = SlurmJobState::kCompleted;
  Round();
  EXPECT_EQ(host_.ended, (std::vector<std::string>{"1 ok Slurm: COMPLETED"}));
  EXPECT_EQ(host_.core().job(1)->state, JobState::kCompleted);
  EXPECT_EQ(slurm_.Calls("start").size(), 1u);
}

TEST_F(SlurmExecutorTest, LeaseIsRenewedBeforeItRunsOut) {
  Managed(3, 4);
  Unmanaged(1, "n1", 5000);  // a 4-node job cannot start
  Round();
  ASSERT_EQ(slurm_.Calls("defer").size(), 1u);
  host_.now += 10;
  Round();
  EXPECT_EQ(slurm_.Calls("defer").size(), 1u);  // 20 s left of 30: not yet
  host_.now += 6;
  Round();
  ASSERT_EQ(slurm_.Calls("defer").size(), 2u);
  EXPECT_EQ(slurm_.Calls("defer")[1].time, host_.now + 30);
}

// NOTES section 8: a job the owner holds (-H) is the owner's; the lease keeps running so that
// the owner's release does not let Slurm start it behind Phalanx's back.
TEST_F(SlurmExecutorTest, OwnersHoldIsNotSubmittedButStaysLeased) {
  SlurmJob& j = Managed(3);
  j.wait = SlurmWait::kHeldUser;
  j.priority = 0;
  Round();
  EXPECT_EQ(host_.submits, 0);
  EXPECT_EQ(slurm_.Calls("defer").size(), 1u);
  slurm_.job(3)->wait = SlurmWait::kBeginTime;  // the owner releases it
  slurm_.job(3)->priority = 1000;
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.submits, 1);
  EXPECT_EQ(slurm_.Calls("start").size(), 1u);
}

// NOTES section 8: a released job may still sit pending (an unmanaged job took the nodes
// first): after start_timeout it is taken back (node list cleared, leased again) and placed anew.
TEST_F(SlurmExecutorTest, ReleasedJobStillPendingIsTakenBackAndPlacedAgain) {
  Managed(3);
  Round();
  ASSERT_EQ(slurm_.Calls("start").size(), 1u);
  host_.now += 25;
  Round();
  ASSERT_EQ(host_.ended.size(), 1u);
  EXPECT_EQ(host_.ended[0], "1 failed Slurm did not start it within 20 s (BeginTime)");
  const auto defers = slurm_.Calls("defer");
  ASSERT_FALSE(defers.empty());
  EXPECT_TRUE(defers.back().clear);
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.submits, 2);
  EXPECT_EQ(exec_->slurm_job(2), 3u);
  EXPECT_EQ(slurm_.Calls("start").size(), 2u);
}

// NOTES section 8: a requeued job restarts only after cred_expire; the release keeps Slurm's
// own begin time instead of asking for now.
TEST_F(SlurmExecutorTest, RequeuedJobKeepsSlurmsBeginTime) {
  SlurmJob& j = Managed(3);
  j.restarts = 1;
  j.start = host_.now + 100;  // cred_expire after the requeue, later than our lease
  Round();
  // The core starts it at once; Slurm's begin time is kept.
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].time, host_.now + 100);
}

TEST_F(SlurmExecutorTest, NodesDownOrDrainedInSlurmAreSoInTheCore) {
  slurm_.nodes[0].down = true;
  slurm_.nodes[1].drained = true;
  slurm_.nodes[1].reason = "bad gpu";
  Round();
  EXPECT_EQ(host_.core().topology().node_state(host_.core().topology().find_node("n1")), NodeState::kDown);
  EXPECT_EQ(host_.core().topology().node_state(host_.core().topology().find_node("n2")), NodeState::kDrain);
  EXPECT_EQ(host_.core().topology().node_state(host_.core().topology().find_node("n3")), NodeState::kUp);
  slurm_.down = true;  // slurmctld unreachable: nothing changes
  Round();
  EXPECT_EQ(host_.core().topology().node_state(host_.core().topology().find_node("n3")), NodeState::kUp);
}

TEST_F(SlurmExecutorTest, CancelledInSlurmWhilePendingLeavesTheCore) {
  Managed(3, 4);
  Unmanaged(1, "n1", 5000);
  Round();
  ASSERT_EQ(host_.core().job(1)->state, JobState::kPending);
  slurm_.job(3)->state = SlurmJobState::kCancelled;
  Round();
  EXPECT_EQ(host_.core().job(1)->state, JobState::kCancelled);
  EXPECT_EQ(exec_->slurm_job(1), 0u);
}

// phalanxd away longer than the lease: Slurm ran a job the core still has pending. The core lets
// it go (its GPUs count as busy), instead of placing it a second time.
TEST_F(SlurmExecutorTest, JobSlurmStartedItselfLeavesTheCore) {
  Managed(3, 4);
  Unmanaged(1, "n1", 5000);
  Round();
  ASSERT_EQ(host_.core().job(1)->state, JobState::kPending);
  slurm_.job(1)->state = SlurmJobState::kCompleted;
  slurm_.job(3)->state = SlurmJobState::kRunning;  // the lease ran out while phalanxd was away
  slurm_.job(3)->nodes = {"n1", "n2", "n3", "n4"};
  Round();
  EXPECT_EQ(host_.core().job(1)->state, JobState::kCancelled);
  EXPECT_EQ(exec_->slurm_job(1), 0u);
  EXPECT_TRUE(slurm_.Calls("start").empty());
  // Its GPUs are Slurm's: external load on every node it runs on, until its end.
  EXPECT_EQ(exec_->node("n3").availability, NodeAvailability::kAvailable);
  EXPECT_EQ(host_.core().external_load("n3").gpus, 8u);
}

// Partial nodes: an unmanaged job's GPUs on a node are busy (Slurm's per-node detail), the
// rest of the node is placeable; its end frees them in the core.
TEST_F(SlurmExecutorTest, PartlyBusyNodesTakeManagedJobsOnTheirFreeGpus) {
  for (const char* n : {"n1", "n2", "n3", "n4"}) {
    SlurmJob& u = Unmanaged(10 + static_cast<slurm::SlurmJobId>(slurm_.jobs.size()), n, 3000);
    u.gpus_per_node = 0;
    u.gpus_per_job = 20;  // --gpus=20 over 4 nodes would be 5 each; Slurm's detail says 4 or 6
    u.gpus_by_node = {std::string(n) == "n1" ? 6u : 4u};
  }
  SlurmJob& m = Managed(3);  // -N2 --gres=gpu:4 on one leaf
  m.gpus_per_node = 4;
  Round();
  Round();
  EXPECT_EQ(host_.core().external_load("n1").gpus, 6u);
  EXPECT_EQ(host_.core().external_load("n3").gpus, 4u);
  for (const char* n : {"n1", "n2", "n3", "n4"})
    EXPECT_EQ(exec_->node(n).availability, NodeAvailability::kAvailable) << n;
  // leaf1 has 2 + 4 free, leaf2 4 + 4: the job goes to leaf2 now, beside Slurm's jobs.
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
  EXPECT_EQ(host_.core().topology().free_gpus(host_.core().topology().root()), 2u + 4u);
  // Slurm's job on n1 ends: its GPUs are free in the core at the next poll.
  slurm_.job(10)->state = SlurmJobState::kCompleted;
  host_.now += 2;
  Round();
  EXPECT_EQ(host_.core().external_load("n1").gpus, 0u);
  EXPECT_EQ(host_.core().topology().free_gpus(host_.core().topology().find("n1")), 8u);
  EXPECT_EQ(host_.core().CheckInvariants(), "");
  // Sent on change only: one load per node, then n1's clearing.
  EXPECT_EQ(host_.loads, (std::vector<std::string>{"n1:6@3000", "n2:4@3000", "n3:4@3000", "n4:4@3000", "n1:0@0"}));
}

// Each of Slurm's jobs on a node keeps its own GPUs and end in the core: a node with a short and
// a long plain job is planned to free the short one's GPUs at its end, not at the long one's.
TEST_F(SlurmExecutorTest, EachSlurmJobOnANodeKeepsItsOwnEnd) {
  for (const char* n : {"n1", "n2", "n3"}) Unmanaged(10 + n[1] - '0', n, 9000);
  SlurmJob& shortj = Unmanaged(20, "n4", 1300);
  shortj.gpus_per_node = 4;
  SlurmJob& longj = Unmanaged(21, "n4", 9000);
  longj.gpus_per_node = 4;
  SlurmJob& m = Managed(3, 1);  // 4 GPUs on one node
  m.admin_comment = "phalanx:topology=node";
  m.gpus_per_node = 4;
  Round();
  Round();
  const auto load = host_.core().external_load("n4");
  EXPECT_EQ(load.gpus, 8u);
  ASSERT_EQ(load.pieces.size(), 2u);
  EXPECT_EQ(load.pieces[0].until, 9000);
  EXPECT_EQ(load.pieces[1].until, 1300);
  // The managed job is planned on n4 when the short job ends (one end per node said 9000).
  ASSERT_EQ(host_.core().job(1)->state, JobState::kPending);
  EXPECT_EQ(host_.core().job(1)->wait.predicted_start, 1300);
  EXPECT_EQ(host_.core().CheckInvariants(), "");
  // The short job ends: the managed job starts beside the long one.
  slurm_.job(20)->state = SlurmJobState::kCompleted;
  host_.now += 5;
  Round();
  ASSERT_EQ(slurm_.Calls("start").size(), 1u);
  EXPECT_EQ(slurm_.Calls("start")[0].nodes, (std::vector<std::string>{"n4"}));
  EXPECT_EQ(host_.core().external_load("n4").gpus, 4u);
}

// The batch step's end report comes before slurmctld has the job ending: the executor watches
// the job (LoadJob every 50 ms) and polls at once when Slurm has it ending, instead of waiting
// for the next poll.
TEST_F(SlurmExecutorTest, BatchStepEndIsTakenAtOnceNotAtTheNextPoll) {
  Managed(3);
  Round();
  ASSERT_EQ(slurm_.Calls("start").size(), 1u);
  slurm_.job(3)->state = SlurmJobState::kRunning;
  slurm_.job(3)->nodes = slurm_.Calls("start")[0].nodes;
  Round();
  exec_->JobEnding(3);
  const auto t0 = std::chrono::steady_clock::now();
  while (slurm_.job_loads.load() < 3 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    io_.restart();
    io_.run_one_for(std::chrono::milliseconds(20));
  }
  Drain();  // the worker is idle now (the next look waits on its timer, on this thread)
  EXPECT_GE(slurm_.job_loads.load(), 3);
  EXPECT_TRUE(host_.ended.empty());
  const int polls = slurm_.loads.load();
  slurm_.job(3)->state = SlurmJobState::kCompleted;  // slurmctld has it now (COMPLETING)
  slurm_.job(3)->completing = true;
  while (host_.ended.empty() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    io_.restart();
    io_.run_one_for(std::chrono::milliseconds(20));
  }
  Drain();
  EXPECT_EQ(host_.ended, (std::vector<std::string>{"1 ok Slurm: COMPLETED"}));
  EXPECT_EQ(slurm_.loads.load(), polls + 1);  // one poll, as soon as the watch saw the end
  // A job Phalanx does not manage is not watched.
  const int looks = slurm_.job_loads.load();
  exec_->JobEnding(99);
  Drain();
  EXPECT_EQ(slurm_.job_loads.load(), looks);
}

// One poll sees a managed job's end and a plain job Slurm started on its GPUs since: the end is
// taken first, so the plain job's GPUs are busy before the next pass (which would otherwise
// place a waiting job on them).
TEST_F(SlurmExecutorTest, ManagedEndIsTakenBeforeThePlainJobOnItsGpus) {
  Managed(3);
  Round();
  ASSERT_EQ(slurm_.Calls("start").size(), 1u);
  const std::vector<std::string> on = slurm_.Calls("start")[0].nodes;
  slurm_.job(3)->state = SlurmJobState::kRunning;
  slurm_.job(3)->nodes = on;
  Round();
  slurm_.job(3)->state = SlurmJobState::kCancelled;
  Unmanaged(20, on[0], 4000);
  host_.now += 1;
  Poll();
  EXPECT_EQ(host_.core().job(1)->state, JobState::kFailed);
  EXPECT_EQ(host_.core().external_load(on[0]).gpus, 8u);
  EXPECT_EQ(host_.loads, (std::vector<std::string>{on[0] + ":8@4000"}));
}

// Elastic shrink (a high-class job needs a node of a low-class elastic one): the core signals the
// checkpoint, and at the deadline shrinks it to whole nodes it already has, which Slurm 22.05 does
// in place (NodeList update of the running job) when the batch host stays; else it is requeued.
class SlurmShrinkTest : public SlurmExecutorTest {
 protected:
  // n3 and n4 busy with Slurm's jobs; the elastic job runs on n1 + n2 with its batch script on
  // `batch`; the core keeps n2 for it and gives n1 to the high job.
  void RunElastic(const std::string& batch) {
    Unmanaged(1, "n3", 9000);
    Unmanaged(2, "n4", 9000);
    SlurmJob& e = Managed(3);
    e.admin_comment = "phalanx:topology=leaf,elastic=8:16,checkpoint=10@5,preemptible=1,class=low";
    e.num_nodes = 0;
    e.gpus_per_node = 0;
    e.gpus_per_job = 16;
    e.time_limit = 3600;
    Round();
    const auto starts = slurm_.Calls("start");
    ASSERT_EQ(starts.size(), 1u);
    ASSERT_EQ(starts[0].nodes, (std::vector<std::string>{"n1", "n2"}));
    SlurmJob& run = *slurm_.job(3);
    run.state = SlurmJobState::kRunning;
    run.nodes = {"n1", "n2"};
    run.gpus_by_node = {8, 8};
    run.batch_host = batch;
    Round();
    host_.now += 700;  // past the class's minimum runtime before preemption
    SlurmJob& h = Managed(4, 1);
    h.admin_comment = "phalanx:topology=node,class=high";
    Round();
    ASSERT_EQ(slurm_.Calls("signal").size(), 1u) << "the checkpoint signal";
    host_.now += 6;  // past the 5 s deadline
    Round();
  }
};

TEST_F(SlurmShrinkTest, ToWholeNodesWithItsBatchHostItIsShrunkInPlace) {
  RunElastic("n2");
  const auto shrinks = slurm_.Calls("shrink");
  ASSERT_EQ(shrinks.size(), 1u);
  EXPECT_EQ(shrinks[0].nodes, (std::vector<std::string>{"n2"}));
  EXPECT_TRUE(slurm_.Calls("requeue").empty());
  EXPECT_EQ(slurm_.job(3)->state, SlurmJobState::kRunning);
  EXPECT_EQ(slurm_.job(3)->nodes, (std::vector<std::string>{"n2"}));
  EXPECT_EQ(host_.core().job(1)->state, JobState::kRunning);
  EXPECT_EQ(host_.core().job(1)->gpus.size(), 8u);
  // The high job takes the node the shrink freed, in the same pass.
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[1].job, 4u);
  EXPECT_EQ(starts[1].nodes, (std::vector<std::string>{"n1"}));
  // Slurm's next report (the job on n2 alone) changes nothing.
  Round();
  EXPECT_EQ(slurm_.Calls("shrink").size(), 1u);
  EXPECT_EQ(host_.core().job(1)->state, JobState::kRunning);
}

// Slurm 22.05 keeps a requeued job pending | completing until its last run is done; releasing
// it then spoiled the requeue in the lab (the job ended FAILED). It is released once Slurm has it
// plainly pending.
TEST_F(SlurmShrinkTest, ARequeueSlurmHasNotFinishedIsNotReleasedYet) {
  slurm_.requeue_completing = true;
  RunElastic("n1");
  ASSERT_EQ(slurm_.Calls("requeue").size(), 1u);
  auto starts_of_3 = [&] {
    int n = 0;
    for (const auto& c : slurm_.Calls("start")) n += c.job == 3;
    return n;
  };
  EXPECT_EQ(starts_of_3(), 1);
  host_.now += 1;
  Round();
  Round();
  EXPECT_EQ(starts_of_3(), 1);  // still completing its last run: not released
  slurm_.job(3)->completing = false;
  host_.now += 1;
  Round();
  EXPECT_EQ(starts_of_3(), 2);  // plainly pending: released on the GPUs the core gave it
  EXPECT_EQ(host_.core().job(1)->state, JobState::kRunning);
}

// A requeue whose begin time Slurm does not show (pending for another reason once it is done):
// held until Slurm's cred_expire (read once through the adapter) + 1 s after the poll that saw
// the requeue done; released at once it would start inside cred_expire ("Job credential revoked").
TEST_F(SlurmShrinkTest, ARequeueWithoutSlurmsBeginTimeWaitsCredExpire) {
  slurm_.cred_expire = 10;
  RunElastic("n1");  // requeued: the batch host would go
  ASSERT_EQ(slurm_.Calls("requeue").size(), 1u);
  EXPECT_EQ(exec_->cred_expire(), 10);
  EXPECT_EQ(slurm_.conf_loads.load(), 1);  // read once
  slurm_.job(3)->wait = SlurmWait::kOther;
  slurm_.job(3)->reason = "Priority";
  slurm_.job(3)->start = 0;
  auto starts_of_3 = [&] {
    std::vector<FakeSlurm::Call> out;
    for (const auto& c : slurm_.Calls("start"))
      if (c.job == 3) out.push_back(c);
    return out;
  };
  ASSERT_EQ(starts_of_3().size(), 1u);
  host_.now += 1;
  Round();
  EXPECT_EQ(starts_of_3().size(), 1u);  // within kRequeueSettleS: waiting for Slurm's begin time
  host_.now += SlurmExecutor::kRequeueSettleS;
  Round();
  const auto starts = starts_of_3();
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[1].time, host_.now + 10 + 1);  // not now: Slurm would start it inside cred_expire
  EXPECT_EQ(slurm_.conf_loads.load(), 1);
}

// Slurm's configuration not readable: released as before (at once after kRequeueSettleS).
TEST_F(SlurmShrinkTest, ARequeueWithoutCredExpireKnownIsReleasedAfterTheSettle) {
  slurm_.cred_expire = 0;  // slurm_load_ctl_conf fails
  RunElastic("n1");
  ASSERT_EQ(slurm_.Calls("requeue").size(), 1u);
  EXPECT_EQ(exec_->cred_expire(), 0);
  EXPECT_GT(slurm_.conf_loads.load(), 1);  // tried again at each poll
  slurm_.job(3)->wait = SlurmWait::kOther;
  host_.now += 1 + SlurmExecutor::kRequeueSettleS;
  Round();
  std::vector<Time> times;
  for (const auto& c : slurm_.Calls("start"))
    if (c.job == 3) times.push_back(c.time);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[1], host_.now);
}

TEST_F(SlurmShrinkTest, LosingItsBatchHostItIsRequeuedInstead) {
  RunElastic("n1");  // the core keeps n2, the batch script runs on n1
  EXPECT_TRUE(slurm_.Calls("shrink").empty());
  ASSERT_EQ(slurm_.Calls("requeue").size(), 1u);
  EXPECT_EQ(slurm_.job(3)->state, SlurmJobState::kPending);
}

// Slurm's own jobs are listed for users (gq, ginfo, phalanx job show): running ones with their
// nodes and GPUs per node, pending ones with Slurm's reason; Phalanx's own jobs are not among them.
TEST_F(SlurmExecutorTest, SlurmsOwnJobsAreListedWithTheirNodesAndGpus) {
  SlurmJob& a = Unmanaged(1, "n2", 2000);
  a.name = "plain";
  a.user = "alice";
  a.uid = 4242424;  // no passwd entry: the user Slurm named
  a.partition = "gpu";
  a.time_limit = 3600;
  a.start = 900;
  SlurmJob& b = Unmanaged(2, "n3", 1500);
  b.nodes = {"n3", "n4"};
  b.gpus_per_node = 0;
  b.gpus_by_node = {2, 6};
  SlurmJob& p = Unmanaged(5, "", 0);
  p.state = SlurmJobState::kPending;
  p.nodes.clear();
  p.num_nodes = 2;
  p.gpus_per_node = 4;
  p.reason = "Resources";
  SlurmJob& done = Unmanaged(6, "n1", 1000);
  done.state = SlurmJobState::kCompleted;  // finished: not listed
  Managed(3);
  Round();
  ASSERT_NE(exec_->core_job(3), kNoJob);
  const std::vector<ForeignJob> jobs = exec_->foreign_jobs();
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].id, 1u);
  EXPECT_EQ(jobs[0].name, "plain");
  EXPECT_EQ(jobs[0].user, "alice");
  EXPECT_EQ(jobs[0].state, "RUNNING");
  EXPECT_TRUE(jobs[0].running);
  EXPECT_EQ(jobs[0].nodes, (std::vector<std::string>{"n2"}));
  EXPECT_EQ(jobs[0].gpus_by_node, (std::vector<uint32_t>{8}));
  EXPECT_EQ(jobs[0].gpus, 8u);
  EXPECT_EQ(jobs[0].end, 2000);
  EXPECT_EQ(jobs[0].time_limit, 3600);
  EXPECT_EQ(jobs[0].partition, "gpu");
  EXPECT_EQ(jobs[1].id, 2u);
  EXPECT_EQ(jobs[1].gpus_by_node, (std::vector<uint32_t>{2, 6}));
  EXPECT_EQ(jobs[1].gpus, 8u);
  EXPECT_EQ(jobs[1].node_count, 2u);
  EXPECT_EQ(jobs[2].id, 5u);
  EXPECT_FALSE(jobs[2].running);
  EXPECT_EQ(jobs[2].state, "PENDING");
  EXPECT_EQ(jobs[2].reason, "Resources");
  EXPECT_TRUE(jobs[2].nodes.empty());
  EXPECT_EQ(jobs[2].gpus, 8u);  // asked for: -N2 --gres=gpu:4
  // The managed job maps both ways.
  EXPECT_EQ(exec_->foreign_id(exec_->core_job(3)), 3u);
  EXPECT_EQ(exec_->core_job_of(3), exec_->core_job(3));
  EXPECT_EQ(exec_->core_job_of(1), kNoJob);
  // By node: n3 and n4 hold job 2's 2 and 6 GPUs.
  EXPECT_EQ(exec_->foreign_on_node("n4"), (std::vector<std::pair<uint32_t, uint32_t>>{{2, 6}}));
  EXPECT_EQ(exec_->foreign_on_node("n2"), (std::vector<std::pair<uint32_t, uint32_t>>{{1, 8}}));
  EXPECT_TRUE(exec_->foreign_on_node("n1").empty());
  // Slurm's job on n2 ends: gone from the list at the next poll.
  slurm_.job(1)->state = SlurmJobState::kCompleted;
  Round();
  ASSERT_EQ(exec_->foreign_jobs().size(), 2u);
  EXPECT_EQ(exec_->foreign_jobs()[0].id, 2u);
}

// libslurm's calls run on the executor's worker thread: while slurmctld does not answer (here a
// load that blocks until the test lets it go), the io loop goes on serving (a handler posted to
// it runs, as a gRPC call's would), and the poll's result is applied once Slurm answers. A poll
// asked for meanwhile runs right after the one in flight, not beside it.
TEST_F(SlurmExecutorTest, ASlurmThatDoesNotAnswerDoesNotStallTheLoop) {
  Managed(3);
  std::promise<void> answer;
  slurm_.gate = answer.get_future().share();
  const auto t0 = std::chrono::steady_clock::now();
  exec_->Poll();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));  // returns at once
  exec_->Poll();                                                              // merged: one after
  bool served = false;
  boost::asio::post(io_, [&] { served = true; });
  boost::asio::steady_timer timer(io_);
  bool timer_fired = false;
  timer.expires_after(std::chrono::milliseconds(50));
  timer.async_wait([&](const boost::system::error_code&) { timer_fired = true; });
  while (!timer_fired && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    io_.restart();
    io_.run_one_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
  EXPECT_TRUE(timer_fired) << "the io loop stalled behind Slurm";
  EXPECT_EQ(exec_->in_flight(), 1u);  // still waiting for Slurm
  EXPECT_EQ(host_.submits, 0);
  EXPECT_EQ(slurm_.loads.load(), 0);
  answer.set_value();
  Drain();
  EXPECT_EQ(host_.submits, 1);        // applied on the io thread once Slurm answered
  EXPECT_EQ(slurm_.loads.load(), 2);  // the poll asked for meanwhile ran after it
  EXPECT_EQ(exec_->slurm_job(1), 3u);
}

// The executor goes away while a call to Slurm hangs: the call finishes, its result is dropped.
TEST_F(SlurmExecutorTest, DestroyedWhileSlurmHangsDropsTheAnswer) {
  Managed(3);
  std::promise<void> answer;
  slurm_.gate = answer.get_future().share();
  exec_->Poll();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    answer.set_value();
  });
  exec_.reset();  // joins the worker once the load returns
  release.join();
  io_.restart();
  io_.poll();  // nothing reaches the gone executor
  EXPECT_EQ(host_.submits, 0);
  MakeExecutor();
}

// kill -9 between the commit of a Start and the release: the restarted executor re-links the
// job from its launch info and releases it once; a running one is left alone.
TEST_F(SlurmExecutorTest, RestartRelinksAndPlacesOnce) {
  Managed(3);
  Managed(4);
  Unmanaged(1, "n1", 5000);
  Unmanaged(2, "n2", 5000);  // one leaf only: job 1 (Slurm 3) starts, job 2 (Slurm 4) waits
  Poll();
  host_.Pass();  // decides the start of job 1 ...
  Drain();
  ASSERT_EQ(slurm_.Calls("start").size(), 1u);
  slurm_.calls.clear();
  slurm_.job(3)->req_nodes.clear();  // ... but phalanxd died before Slurm saw the release
  exec_.reset();
  MakeExecutor();
  exec_->AdoptJob(1, host_.core().job(1)->gpus);
  Round();
  Round();
  EXPECT_EQ(host_.submits, 2);  // nothing submitted again
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].job, 3u);
  EXPECT_EQ(exec_->slurm_job(2), 4u);
  slurm_.job(3)->state = SlurmJobState::kRunning;
  exec_.reset();
  MakeExecutor();
  Round();
  EXPECT_EQ(slurm_.Calls("start").size(), 1u);
  EXPECT_EQ(host_.submits, 2);
}

}  // namespace
}  // namespace phalanx::service
