// SlurmExecutor and Slurm's partitions (docs/slurm.md, "Partitions"), against the fake Slurm.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "service/slurm_executor_internal.h"
#include "slurm_executor_fixture.h"

namespace phalanx::service {
namespace {

using namespace slurm_test;  // NOLINT: the fixture's names

// Slurm's partitions (docs/slurm.md, "Partitions"): read at every poll, given to the core when
// they change; a managed job runs only on the nodes of its Slurm job's partitions.
slurm::SlurmPartition Part(std::string name, std::vector<std::string> nodes, bool is_default = false,
                           slurm::SlurmPartitionState state = slurm::SlurmPartitionState::kUp, Duration max = 0) {
  slurm::SlurmPartition p;
  p.name = std::move(name);
  p.nodes = std::move(nodes);
  p.is_default = is_default;
  p.state = state;
  p.max_time = max;
  return p;
}

TEST_F(SlurmExecutorTest, JobOfAPartitionIsPlacedOnlyOnItsNodes) {
  // "cpu" has no node of the topology: left out. "b" is Slurm's default, not the first.
  slurm_.partitions = {Part("cpu", {"c1", "c2"}), Part("a", {"n3", "n4"}, false, slurm::SlurmPartitionState::kUp, 7200),
                       Part("b", {"n1", "n2"}, true)};
  Unmanaged(1, "n4", 2000);
  Managed(3).partition = "x,a";  // Slurm's list; x: not a partition Phalanx knows
  Round();
  Round();
  const PartitionTable& table = host_.core().partitions();
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table.at(0).name, "a");
  EXPECT_EQ(table.at(0).max_walltime, 7200);
  EXPECT_EQ(table.default_name(), "b");
  EXPECT_FALSE(table.Find("cpu"));
  ASSERT_EQ(host_.submits, 1);
  EXPECT_EQ(host_.core().job(1)->spec.partitions, (std::vector<std::string>{"a"}));
  // Leaf 1 (n1, n2: partition b) is free, but the job is a's: it waits for n4.
  EXPECT_TRUE(slurm_.Calls("start").empty());
  EXPECT_EQ(host_.core().job(1)->state, JobState::kPending);

  host_.now += 5;
  slurm_.job(1)->state = SlurmJobState::kCompleted;
  Round();
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
  EXPECT_EQ(host_.partition_updates, 1);  // the same list at every poll: given once
}

TEST_F(SlurmExecutorTest, JobWithoutAPartitionRunsInSlurmsDefault) {
  slurm_.partitions = {Part("a", {"n1", "n2"}), Part("b", {"n3", "n4"}, true)};
  Managed(3);  // no partition
  Round();
  EXPECT_TRUE(host_.core().job(1)->spec.partitions.empty());
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
}

TEST_F(SlurmExecutorTest, PartitionDownInSlurmMakesItsJobsWaitPartitionDown) {
  slurm_.partitions = {Part("a", {"n3", "n4"}, false, slurm::SlurmPartitionState::kDown),
                       Part("b", {"n1", "n2"}, true)};
  Managed(3).partition = "a";
  Round();
  Round();
  EXPECT_TRUE(slurm_.Calls("start").empty());
  EXPECT_EQ(host_.core().job(1)->wait.kind, WaitKind::kPartitionDown);
  EXPECT_NE(slurm_.job(3)->comment.find("PartitionDown"), std::string::npos) << slurm_.job(3)->comment;

  slurm_.partitions[0].state = slurm::SlurmPartitionState::kUp;  // scontrol update PartitionName=a State=UP
  host_.now += 1;
  Round();
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
  EXPECT_EQ(host_.partition_updates, 2);
}

TEST_F(SlurmExecutorTest, PartitionNodesChangingOnAPollArePickedUp) {
  slurm_.partitions = {Part("a", {"n1"}), Part("b", {"n2", "n3", "n4"}, true)};
  Managed(3).partition = "a";  // 2 nodes: a's one node can never hold it
  Round();
  Round();
  EXPECT_TRUE(slurm_.Calls("start").empty());
  EXPECT_EQ(host_.core().job(1)->wait.kind, WaitKind::kUnsatisfiable);

  // An admin moves leaf 2 into a and adds c: the next poll gives the core the new list.
  slurm_.partitions = {Part("a", {"n3", "n4"}), Part("b", {"n1", "n2"}, true), Part("c", {"n1", "n2"})};
  host_.now += 1;
  Round();
  EXPECT_TRUE(host_.core().partitions().Find("c"));
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
  EXPECT_EQ(host_.partition_updates, 2);
}

bool HasControlByte(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// Partition names come from Slurm's configuration, and the reasons Phalanx writes back into a
// job's comment (squeue shows it to every user) carry them: ESC, a newline and a NUL reach the
// comment only as visible escapes, a 20,000-byte name leaves the comment at most
// kMaxSlurmComment bytes, and both partitions still work.
TEST_F(SlurmExecutorTest, HostilePartitionNamesReachTheCommentsOnlyEscaped) {
  const std::string esc("a\x1b[2J\n\0b", 8);
  const std::string huge(20000, 'p');
  slurm_.partitions = {Part(esc, {"n3", "n4"}, false, slurm::SlurmPartitionState::kDown), Part(huge, {"n1"}),
                       Part("b", {"n1", "n2"}, true)};
  Managed(3).partition = esc;
  Managed(4).partition = huge;  // 2 nodes; the partition has one
  Round();
  Round();
  ASSERT_EQ(host_.submits, 2);
  EXPECT_EQ(host_.core().job(1)->wait.kind, WaitKind::kPartitionDown);
  EXPECT_EQ(host_.core().job(2)->wait.kind, WaitKind::kUnsatisfiable);
  const std::string& c3 = slurm_.job(3)->comment;
  EXPECT_NE(c3.find("PartitionDown(partition a\\x1b[2J\\n\\x00b is DOWN)"), std::string::npos) << c3;
  EXPECT_FALSE(HasControlByte(c3)) << c3;
  const std::string& c4 = slurm_.job(4)->comment;
  EXPECT_TRUE(c4.starts_with("phalanx: Unsatisfiable(")) << c4.substr(0, 80);
  EXPECT_LE(c4.size(), slurm_executor_internal::kMaxSlurmComment);
  EXPECT_EQ(c4.back(), '+');
  EXPECT_FALSE(HasControlByte(c4));

  slurm_.partitions[0].state = slurm::SlurmPartitionState::kUp;
  host_.now += 1;
  Round();
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
}

// A pending managed job moved in Slurm (`scontrol update JobId=3 Partition=b`): the core's job
// follows at the next poll and is placed on b's nodes, while a's stay busy.
TEST_F(SlurmExecutorTest, PendingJobMovedToAnotherPartitionFollowsIt) {
  slurm_.partitions = {Part("a", {"n1", "n2"}, true), Part("b", {"n3", "n4"})};
  Unmanaged(1, "n1", 5000);
  Managed(3).partition = "a";
  Round();
  Round();
  ASSERT_EQ(host_.submits, 1);
  EXPECT_EQ(host_.core().job(1)->spec.partitions, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(slurm_.Calls("start").empty());  // a's n1 is busy; b's nodes are not the job's
  EXPECT_EQ(host_.updates, 0);

  slurm_.job(3)->partition = "b";
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.updates, 1);
  EXPECT_EQ(host_.submits, 1);  // the same core job, not a new one
  EXPECT_EQ(host_.core().job(1)->spec.partitions, (std::vector<std::string>{"b"}));
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.updates, 1);  // moved once
}

// Moved to a list of which the core knows one, and back to none (Slurm's default partition).
TEST_F(SlurmExecutorTest, PendingJobMovedToUnknownAndDefaultPartitions) {
  slurm_.partitions = {Part("a", {"n1", "n2"}), Part("b", {"n3", "n4"}, true)};
  Unmanaged(1, "n1", 5000);
  Unmanaged(2, "n3", 5000);
  Managed(3).partition = "a";
  Round();
  slurm_.job(3)->partition = "x,b";
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.core().job(1)->spec.partitions, (std::vector<std::string>{"b"}));
  slurm_.job(3)->partition = "";
  host_.now += 1;
  Round();
  EXPECT_TRUE(host_.core().job(1)->spec.partitions.empty());
  EXPECT_EQ(host_.updates, 2);
  EXPECT_TRUE(slurm_.Calls("start").empty());  // every leaf has a busy node
}

// Moved while phalanxd was away: the restarted executor compares Slurm's list with the core's.
TEST_F(SlurmExecutorTest, PendingJobMovedWhilePhalanxdWasAwayFollowsIt) {
  slurm_.partitions = {Part("a", {"n1", "n2"}, true), Part("b", {"n3", "n4"})};
  Unmanaged(1, "n1", 5000);
  Managed(3).partition = "a";
  Round();
  ASSERT_EQ(host_.core().job(1)->spec.partitions, (std::vector<std::string>{"a"}));
  exec_.reset();
  slurm_.job(3)->partition = "b";
  MakeExecutor();
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.submits, 1);
  EXPECT_EQ(host_.core().job(1)->spec.partitions, (std::vector<std::string>{"b"}));
  const auto starts = slurm_.Calls("start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].nodes, (std::vector<std::string>{"n3", "n4"}));
}

// Moved to a partition the core refuses (DRAIN: no new jobs): left to Slurm, as a submission
// the core refuses; the core's job is cancelled and Phalanx never releases it.
TEST_F(SlurmExecutorTest, PendingJobMovedWhereTheCoreRefusesIsLeftToSlurm) {
  slurm_.partitions = {Part("a", {"n1", "n2"}, true),
                       Part("b", {"n3", "n4"}, false, slurm::SlurmPartitionState::kDrain)};
  Unmanaged(1, "n1", 5000);
  Managed(3).partition = "a";
  Round();
  slurm_.job(3)->partition = "b";
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.updates, 1);
  EXPECT_EQ(host_.core().job(1)->state, JobState::kCancelled);
  EXPECT_EQ(exec_->core_job(3), kNoJob);
  EXPECT_NE(slurm_.job(3)->comment.find("phalanx: refused"), std::string::npos) << slurm_.job(3)->comment;
  host_.now += 1;
  Round();
  EXPECT_EQ(host_.submits, 1);  // not submitted again
  EXPECT_EQ(host_.updates, 1);
  EXPECT_TRUE(slurm_.Calls("start").empty());
}

}  // namespace
}  // namespace phalanx::service
