// Partitions in the core: a job runs only on its partition's nodes (the first of several where
// it can start), waits and reserves inside them, and is refused at submit naming the partition
// and the limit it breaks (core/sched/partition.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::TwoTier;

// 2 leaves x 2 DGX H100 (8 GPUs each): leaf0-n0, leaf0-n1, leaf1-n0, leaf1-n1.
// "small" = leaf1-n1 only; "big" = leaf0's two nodes (default); "all" = every node.
SchedulerConfig PartConfig() {
  SchedulerConfig c;
  c.weights.fairshare = 0;
  PartitionConfig big;
  big.name = "big";
  big.nodes = {"leaf0-n0", "leaf0-n1"};
  big.is_default = true;
  big.default_walltime = 600;
  big.max_walltime = 3600;
  PartitionConfig small;
  small.name = "small";
  small.nodes = {"leaf1-n1"};
  small.max_gpus_per_job = 4;
  PartitionConfig all;
  all.name = "all";
  c.partitions = {big, small, all};
  return c;
}

std::unique_ptr<Scheduler> MakePart(SchedulerConfig c = PartConfig()) {
  auto s = Scheduler::Create(Build(TwoTier(2, 2)), std::move(c));
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

JobSpec PartJob(JobId id, uint32_t gpus, std::vector<std::string> parts = {}, Duration walltime = 0) {
  JobSpec s;
  s.id = id;
  s.user = "alice";
  s.account = "lab";
  s.shape.gpus = gpus;
  s.walltime = walltime;
  s.partitions = std::move(parts);
  return s;
}

// The nodes the job's GPUs are on.
std::set<std::string> NodesOf(const Scheduler& s, JobId id) {
  std::set<std::string> out;
  const Topology& t = s.topology();
  for (GpuId g : s.job(id)->gpus) out.insert(t.domain(t.node_domain(t.node_of(g))).name);
  return out;
}

// scontrol top: the topped job goes first among its user's pending jobs, in the places they
// hold; another user's job keeps its place; the last topped goes first; only pending jobs.
TEST(SchedulerTop, FirstAmongItsUsersPendingJobs) {
  SchedulerConfig c;
  c.weights.fairshare = 0;
  auto s = MakePart(c);
  JobSpec big = PartJob(1, 32);
  big.walltime = 3600;
  ASSERT_TRUE(s->Submit(big, 0));
  (void)s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_TRUE(s->Submit(PartJob(2, 32), 1));
  JobSpec bob = PartJob(3, 32);
  bob.user = "bob";
  ASSERT_TRUE(s->Submit(bob, 2));
  ASSERT_TRUE(s->Submit(PartJob(4, 32), 3));
  (void)s->Schedule(4);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{2, 3, 4}));
  ASSERT_TRUE(s->Top(4, 5));
  (void)s->Schedule(5);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{4, 3, 2})) << "alice's places, 4 first; bob's 3 stays second";
  ASSERT_TRUE(s->Top(2, 6));
  (void)s->Schedule(6);
  EXPECT_EQ(s->queue(), (std::vector<JobId>{2, 3, 4})) << "the last topped first";
  auto running = s->Top(1, 7);
  ASSERT_FALSE(running);
  EXPECT_EQ(running.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(s->Top(99, 7));
}

// max_gpus_per_user (Slurm's MaxTRESPerUser=gres/gpu): a user's job past it waits UserLimit
// naming the partition (not refused); another user's starts; a job naming a second partition
// starts there; when the user's job ends, the waiting one starts.
TEST(SchedulerPartitions, PerUserGpuLimitWaitsUserLimit) {
  SchedulerConfig c = PartConfig();
  c.partitions[0].max_gpus_per_user = 8;  // big: leaf0's two nodes
  auto s = MakePart(c);
  ASSERT_TRUE(s->Submit(PartJob(1, 8, {}, 600), 0));
  ASSERT_TRUE(s->Submit(PartJob(2, 8, {}, 600), 0));
  JobSpec bob = PartJob(3, 8, {}, 600);
  bob.user = "bob";
  ASSERT_TRUE(s->Submit(bob, 0));
  ASSERT_TRUE(s->Submit(PartJob(4, 4, {"big", "all"}, 600), 0));
  (void)s->Schedule(1);
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(s->job(2)->state, JobState::kPending);
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kUserLimit);
  EXPECT_EQ(s->job(2)->wait.detail, "partition big: MaxGPUsPerUser 8, alice holds 8");
  EXPECT_EQ(s->job(3)->state, JobState::kRunning) << "bob has his own 8";
  ASSERT_EQ(s->job(4)->state, JobState::kRunning) << "big is at alice's limit: all";
  for (const std::string& n : NodesOf(*s, 4)) EXPECT_EQ(n.rfind("leaf1-", 0), 0u) << n;
  ASSERT_TRUE(s->JobEnded(1, 2, true));
  (void)s->Schedule(2);
  EXPECT_EQ(s->job(2)->state, JobState::kRunning);
}

TEST(SchedulerPartitions, NoneConfiguredIsOneDefaultOfEveryNode) {
  SchedulerConfig c;
  auto s = MakePart(c);
  ASSERT_EQ(s->partitions().size(), 1u);
  EXPECT_EQ(s->partitions().default_name(), "default");
  EXPECT_TRUE(s->partitions().at(0).all_nodes);
  EXPECT_EQ(s->partitions().at(0).gpus, 32u);
  ASSERT_TRUE(s->Submit(PartJob(1, 32), 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(s->job(1)->walltime, c.default_walltime);
}

TEST(SchedulerPartitions, JobRunsOnlyOnItsPartitionsNodes) {
  auto s = MakePart();
  ASSERT_TRUE(s->Submit(PartJob(1, 2, {"small"}), 0));
  ASSERT_TRUE(s->Submit(PartJob(2, 8), 0));  // default partition: big
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(NodesOf(*s, 1), std::set<std::string>{"leaf1-n1"});
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  for (const std::string& n : NodesOf(*s, 2)) EXPECT_TRUE(n.starts_with("leaf0-")) << n;
  // The default partition's default walltime.
  EXPECT_EQ(s->job(2)->walltime, 600);
  EXPECT_EQ(s->partitions().Holding(s->job(1)->partition_ids, s->job(1)->gpus, s->topology()), 1u);
}

TEST(SchedulerPartitions, FullPartitionWaitsAlthoughOtherNodesAreFree) {
  auto s = MakePart();
  ASSERT_TRUE(s->Submit(PartJob(1, 4, {"small"}, 1000), 0));
  ASSERT_TRUE(s->Submit(PartJob(2, 4, {"small"}, 1000), 0));
  ASSERT_TRUE(s->Submit(PartJob(3, 4, {"small"}, 1000), 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(s->job(2)->state, JobState::kRunning);
  ASSERT_EQ(s->job(3)->state, JobState::kPending);
  // 24 GPUs are free elsewhere, none in "small": Resources (Slurm's reason), not TopologyBlock.
  EXPECT_EQ(s->job(3)->wait.kind, WaitKind::kResources) << WaitKindName(s->job(3)->wait.kind);
  // 24 GPUs are free elsewhere; inside "small" it waits for the first end, and reserves there.
  EXPECT_EQ(s->job(3)->wait.predicted_start, 1000);
  ASSERT_EQ(s->reservations().size(), 1u);
  const Topology& t = s->topology();
  for (GpuId g : s->reservations()[0].gpus) EXPECT_EQ(t.domain(t.node_domain(t.node_of(g))).name, "leaf1-n1");
  ASSERT_TRUE(s->JobEnded(1, 1000, true));
  s->Schedule(1000);
  EXPECT_EQ(s->job(3)->state, JobState::kRunning);
  EXPECT_EQ(NodesOf(*s, 3), std::set<std::string>{"leaf1-n1"});
}

// The partition's free GPUs decide Resources against TopologyBlock: when it is full, Resources,
// although other partitions' nodes are free; with enough free GPUs in it but no block of the
// required shape, TopologyBlock.
TEST(SchedulerPartitions, WaitReasonCountsThePartitionsFreeGpus) {
  auto full = MakePart();
  ASSERT_TRUE(full->Submit(PartJob(1, 12, {"big"}, 1000), 0));  // big: 16 GPUs, 4 left
  full->Schedule(0);
  ASSERT_EQ(full->job(1)->state, JobState::kRunning);
  ASSERT_TRUE(full->Submit(PartJob(2, 8, {"big"}, 1000), 1));  // 8 > 4 free in big (16 free outside)
  full->Schedule(1);
  ASSERT_EQ(full->job(2)->state, JobState::kPending);
  EXPECT_EQ(full->job(2)->wait.kind, WaitKind::kResources) << full->job(2)->wait.ToString();

  auto shape = MakePart();
  JobSpec whole = PartJob(1, 8, {"big"}, 1000);  // one whole node of big, and 4 GPUs of the other
  whole.shape.nodes = 1;
  whole.shape.gpus_per_node = 8;
  ASSERT_TRUE(shape->Submit(whole, 0));
  ASSERT_TRUE(shape->Submit(PartJob(2, 4, {"big"}, 1000), 0));
  shape->Schedule(0);
  ASSERT_EQ(shape->job(2)->state, JobState::kRunning);
  ASSERT_NE(NodesOf(*shape, 1), NodesOf(*shape, 2));  // big's 4 free GPUs are on one node
  JobSpec two_nodes = PartJob(3, 4, {"big"}, 1000);
  two_nodes.shape.nodes = 2;
  two_nodes.shape.gpus_per_node = 2;
  ASSERT_TRUE(shape->Submit(two_nodes, 1));
  shape->Schedule(1);
  ASSERT_EQ(shape->job(3)->state, JobState::kPending);
  EXPECT_EQ(shape->job(3)->wait.kind, WaitKind::kTopologyBlock) << shape->job(3)->wait.ToString();
}

TEST(SchedulerPartitions, SeveralPartitionsTakeTheFirstWhereItCanStart) {
  auto s = MakePart();
  ASSERT_TRUE(s->Submit(PartJob(1, 4, {"small"}, 1000), 0));
  ASSERT_TRUE(s->Submit(PartJob(2, 4, {"small"}, 1000), 0));
  s->Schedule(0);
  // small is full: a job asking for small,all runs in all; one asking small first when it has
  // room runs in small.
  ASSERT_TRUE(s->Submit(PartJob(3, 4, {"small", "all"}, 100), 1));
  s->Schedule(1);
  ASSERT_EQ(s->job(3)->state, JobState::kRunning);
  EXPECT_FALSE(NodesOf(*s, 3).contains("leaf1-n1"));
  EXPECT_EQ(s->partitions().Holding(s->job(3)->partition_ids, s->job(3)->gpus, s->topology()), 2u);
  ASSERT_TRUE(s->JobEnded(1, 2, true));
  ASSERT_TRUE(s->Submit(PartJob(4, 4, {"small", "all"}, 100), 2));
  s->Schedule(2);
  ASSERT_EQ(s->job(4)->state, JobState::kRunning);
  EXPECT_EQ(NodesOf(*s, 4), std::set<std::string>{"leaf1-n1"});
}

TEST(SchedulerPartitions, SubmitRefusalsNameThePartitionAndTheLimit) {
  auto s = MakePart();
  auto too_long = s->Submit(PartJob(1, 1, {}, 7200), 0);
  ASSERT_FALSE(too_long);
  EXPECT_NE(
      too_long.error().message.find("walltime 7200s exceeds the maximum 3600s of partition big (MaxTime 1:00:00)"),
      std::string::npos)
      << too_long.error().message;
  auto too_wide = s->Submit(PartJob(2, 8, {"small"}), 0);
  ASSERT_FALSE(too_wide);
  EXPECT_NE(too_wide.error().message.find("partition small: 8 GPUs exceed its MaxGPUsPerJob 4"), std::string::npos)
      << too_wide.error().message;
  auto unknown = s->Submit(PartJob(3, 1, {"gpu"}), 0);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown partition 'gpu' (known: big, small, all)"), std::string::npos)
      << unknown.error().message;
  auto twice = s->Submit(PartJob(4, 1, {"all", "all"}), 0);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("partition 'all' listed twice"), std::string::npos);
  // Every partition named must accept it: small's MaxGPUsPerJob refuses small,all too.
  EXPECT_FALSE(s->Submit(PartJob(5, 8, {"all", "small"}), 0));
  // The maximum is within the limit.
  EXPECT_TRUE(s->Submit(PartJob(6, 1, {}, 3600), 0));
}

TEST(SchedulerPartitions, CanNeverFitThePartition) {
  auto s = MakePart();
  // 16 GPUs fit the cluster but not small's 8.
  JobSpec j = PartJob(1, 16, {"all"});
  EXPECT_TRUE(s->ValidateSpec(j));
  SchedulerConfig c = PartConfig();
  c.partitions[1].max_gpus_per_job = 0;
  s = MakePart(c);
  auto v = s->ValidateSpec(PartJob(2, 16, {"small"}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("partition: can never fit: partition small has 8 GPUs"), std::string::npos)
      << v.error().message;
  // Submitted anyway (Submit does not ask "can it fit"), it waits Unsatisfiable.
  ASSERT_TRUE(s->Submit(PartJob(2, 16, {"small"}), 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kUnsatisfiable);
  EXPECT_EQ(s->job(2)->wait.detail, "partition small has 8 GPUs");
}

TEST(SchedulerPartitions, DrainRefusesNewJobsDownQueuesThem) {
  SchedulerConfig c = PartConfig();
  c.partitions[1].state = PartitionState::kDrain;
  c.partitions[2].state = PartitionState::kDown;
  auto s = MakePart(c);
  auto drained = s->Submit(PartJob(1, 1, {"small"}), 0);
  ASSERT_FALSE(drained);
  EXPECT_EQ(drained.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(drained.error().message.find("partition small: state DRAIN: no new jobs"), std::string::npos);
  ASSERT_TRUE(s->Submit(PartJob(2, 1, {"all"}), 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(2)->state, JobState::kPending);
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kPartitionDown);
  EXPECT_EQ(s->job(2)->wait.detail, "partition all is DOWN");
  EXPECT_EQ(WaitKindName(WaitKind::kPartitionDown), "PartitionDown");
}

TEST(SchedulerPartitions, UpdateWalltimeWithinThePartitionsMaximum) {
  auto s = MakePart();
  ASSERT_TRUE(s->Submit(PartJob(1, 1), 0));
  EXPECT_TRUE(s->Update(1, {.walltime = 3600}, 0));
  auto over = s->Update(1, {.walltime = 3601}, 0);
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("outside 1..3600s (the MaxTime of its partitions)"), std::string::npos);
}

// A pending job moved to other partitions (phalanxd's Slurm mode: `scontrol update Partition=`):
// checked as a submission is; it then runs on the new partitions' nodes only.
TEST(SchedulerPartitions, UpdateMovesAPendingJobsPartitions) {
  auto s = MakePart();
  ASSERT_TRUE(s->Submit(PartJob(1, 16), 0));  // big (the default): leaf0's nodes, default walltime 600
  ASSERT_TRUE(s->Submit(PartJob(2, 16), 0));
  ASSERT_TRUE(s->Submit(PartJob(3, 8), 0));
  EXPECT_EQ(s->job(3)->walltime, 600);
  ASSERT_TRUE(s->Update(3, {.partitions = std::vector<std::string>{"all"}}, 0));
  EXPECT_EQ(s->job(3)->spec.partitions, (std::vector<std::string>{"all"}));
  EXPECT_EQ(s->job(3)->walltime, SchedulerConfig{}.default_walltime);  // all's default now
  s->Schedule(0);
  ASSERT_EQ(s->job(3)->state, JobState::kRunning);  // big is full (job 1 runs, job 2 waits)
  for (const std::string& n : NodesOf(*s, 3)) EXPECT_TRUE(n.starts_with("leaf1-")) << n;
  // A running job stays where it is.
  auto running = s->Update(3, {.partitions = std::vector<std::string>{"big"}}, 0);
  ASSERT_FALSE(running);
  EXPECT_EQ(running.error().code, ErrorCode::kFailedPrecondition);
  // Refused as a submission would be; the job keeps its partitions.
  auto unknown = s->Update(2, {.partitions = std::vector<std::string>{"nope"}}, 0);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown partition 'nope'"), std::string::npos) << unknown.error().message;
  auto too_big = s->Update(2, {.partitions = std::vector<std::string>{"small"}}, 0);
  ASSERT_FALSE(too_big);
  EXPECT_NE(too_big.error().message.find("exceed its MaxGPUsPerJob 4"), std::string::npos) << too_big.error().message;
  ASSERT_TRUE(s->Submit(PartJob(4, 1, {"all"}, 7200), 0));
  auto too_long = s->Update(4, {.partitions = std::vector<std::string>{"big"}}, 0);
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().message.find("exceeds the maximum 3600s of partition big"), std::string::npos);
  EXPECT_TRUE(s->Update(4, {.walltime = 3600, .partitions = std::vector<std::string>{"big"}}, 0));
  EXPECT_EQ(s->job(2)->spec.partitions, std::vector<std::string>{});
  // Back to none: the default partition.
  ASSERT_TRUE(s->Update(4, {.partitions = std::vector<std::string>{}}, 0));
  EXPECT_TRUE(s->job(4)->spec.partitions.empty());
  EXPECT_EQ(s->job(4)->walltime, 3600);
}

TEST(SchedulerPartitions, RestoredJobOfAPartitionNoLongerConfiguredWaitsUnsatisfiable) {
  auto s = MakePart();
  JobRecord r;
  r.spec = PartJob(1, 1, {"gone"}, 100);
  ASSERT_TRUE(s->Restore(r, 0));
  JobRecord old;  // a row from before partitions: none named, so the default
  old.spec = PartJob(2, 1, {}, 100);
  ASSERT_TRUE(s->Restore(old, 0));
  (void)s->FinishRestore(0);
  s->Schedule(0);
  EXPECT_EQ(s->job(1)->wait.kind, WaitKind::kUnsatisfiable);
  EXPECT_EQ(s->job(1)->wait.detail, "partition 'gone' is no longer configured");
  ASSERT_EQ(s->job(2)->state, JobState::kRunning);
  for (const std::string& n : NodesOf(*s, 2)) EXPECT_TRUE(n.starts_with("leaf0-")) << n;
}

// phalanxd's Slurm mode hands over Slurm's partitions whenever they change: states, nodes and
// the list itself change under queued jobs; a bad table is refused and the old one stays.
TEST(SchedulerPartitions, SetPartitionsAtRunTime) {
  auto s = MakePart();
  ASSERT_TRUE(s->Submit(PartJob(1, 2, {"small"}, 100), 0));
  ASSERT_TRUE(s->Submit(PartJob(2, 2, {"all"}, 100), 0));
  std::vector<PartitionConfig> parts = PartConfig().partitions;
  parts[1].state = PartitionState::kDown;
  parts[2].state = PartitionState::kDown;
  ASSERT_TRUE(s->SetPartitions(parts, 1));
  s->Schedule(1);
  EXPECT_EQ(s->job(1)->wait.kind, WaitKind::kPartitionDown);
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kPartitionDown);

  std::vector<PartitionConfig> bad = parts;
  bad[1].nodes = {"leaf9-n0"};
  auto refused = s->SetPartitions(bad, 2);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().ToString().find("partitions.small: nodes: unknown node 'leaf9-n0'"), std::string::npos)
      << refused.error().ToString();
  EXPECT_EQ(s->partitions().at(1).state, PartitionState::kDown);  // as it was

  // small: UP again and moved to leaf0-n0; "all" gone; "new" added.
  parts[1].state = PartitionState::kUp;
  parts[1].nodes = {"leaf0-n0"};
  parts[2].name = "new";
  parts[2].state = PartitionState::kUp;
  ASSERT_TRUE(s->SetPartitions(parts, 3));
  EXPECT_EQ(s->config().partitions[2].name, "new");
  s->Schedule(3);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(NodesOf(*s, 1), std::set<std::string>{"leaf0-n0"});
  EXPECT_EQ(s->job(2)->wait.kind, WaitKind::kUnsatisfiable);
  EXPECT_EQ(s->job(2)->wait.detail, "partition 'all' is no longer configured");
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(SchedulerPartitions, BadConfigsNameThePartition) {
  auto fails = [](SchedulerConfig c, const std::string& want) {
    auto s = Scheduler::Create(Build(TwoTier(2, 2)), std::move(c));
    ASSERT_FALSE(s) << want;
    EXPECT_NE(s.error().ToString().find(want), std::string::npos) << s.error().ToString();
  };
  SchedulerConfig c = PartConfig();
  c.partitions[1].nodes = {"leaf9-n0"};
  fails(c, "partitions.small: nodes: unknown node 'leaf9-n0'");
  c = PartConfig();
  c.partitions[2].name = "big";
  fails(c, "name: partition 'big' defined twice");
  c = PartConfig();
  c.partitions[2].is_default = true;
  fails(c, "partitions.all: default: a second default partition (the first is 'big')");
  c = PartConfig();
  c.partitions[0].default_walltime = 7200;
  fails(c, "partitions.big: default_walltime 7200s > max_walltime 3600s");
  EXPECT_EQ(ParsePartitionState("drain"), PartitionState::kDrain);
  EXPECT_FALSE(ParsePartitionState("sleepy"));
}

}  // namespace
}  // namespace phalanx
