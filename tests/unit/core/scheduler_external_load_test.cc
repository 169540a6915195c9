// Scheduler::SetExternalLoad: GPUs busy because of jobs the core does not place (phalanxd's
// Slurm mode: Slurm's own jobs) -- the rest of the node stays placeable, and backfill plans the
// load's GPUs free at its end.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "core/sched/config.h"
#include "core/sched/scheduler.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::Build;
using testing::TwoTier;

// 2 leaves x 2 nodes of 8 GPUs: leaf0-n0, leaf0-n1, leaf1-n0, leaf1-n1.
std::unique_ptr<Scheduler> Cluster() {
  SchedulerConfig config;
  config.weights.fairshare = 0;
  auto s = Scheduler::Create(Build(TwoTier(2, 2)), config);
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

JobSpec Job(JobId id, uint32_t gpus, Duration walltime = 1000) {
  JobSpec j;
  j.id = id;
  j.user = "alice";
  j.shape.gpus = gpus;
  j.shape.level = Level::kNode;
  j.shape.fit = FitMode::kRequire;
  j.walltime = walltime;
  return j;
}

std::set<std::string> Nodes(const Scheduler& s, JobId id) {
  std::set<std::string> out;
  const Topology& t = s.topology();
  for (GpuId g : s.job(id)->gpus) out.insert(t.domain(t.node_domain(t.node_of(g))).name);
  return out;
}

uint32_t ExternalGpus(const Scheduler& s, const std::string& node) {
  const Topology& t = s.topology();
  uint32_t n = 0;
  for (GpuId g : testing::NodeGpus(t, node)) n += Topology::IsExternal(t.owner(g));
  return n;
}

TEST(ExternalLoad, TheRestOfAPartlyBusyNodeIsPlaceable) {
  auto s = Cluster();
  for (const char* n : {"leaf0-n0", "leaf0-n1", "leaf1-n0", "leaf1-n1"}) {
    auto taken = s->SetExternalLoad(n, 6, 500, 0);
    ASSERT_TRUE(taken) << taken.error().ToString();
    EXPECT_EQ(*taken, 6u);
  }
  ASSERT_TRUE(s->Submit(Job(1, 2), 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);  // 2 free GPUs on a node suffice
  EXPECT_EQ(s->topology().free_gpus(s->topology().root()), 6u);
  EXPECT_EQ(s->external_load("leaf0-n0").gpus, 6u);
  EXPECT_EQ(s->external_load("leaf0-n0").until, 500);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(ExternalLoad, BackfillPlansTheGpusFreeAtTheLoadsEnd) {
  auto s = Cluster();
  for (const char* n : {"leaf0-n0", "leaf0-n1", "leaf1-n0", "leaf1-n1"}) ASSERT_TRUE(s->SetExternalLoad(n, 6, 900, 0));
  ASSERT_TRUE(s->SetExternalLoad("leaf1-n1", 6, 400, 0));  // replaces: the earliest end
  ASSERT_TRUE(s->Submit(Job(1, 8), 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kPending);
  ASSERT_EQ(s->reservations().size(), 1u);
  EXPECT_EQ(s->reservations()[0].start, 400);
  EXPECT_EQ(s->job(1)->wait.predicted_start, 400);
  // The load ends (Slurm's job finished): the node is whole again and the job starts there.
  ASSERT_TRUE(s->SetExternalLoad("leaf1-n1", 0, 0, 380));
  EXPECT_EQ(s->external_load("leaf1-n1").gpus, 0u);
  s->Schedule(380);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf1-n1"}));
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(ExternalLoad, PastItsEndItCountsAsEndingNextSecond) {
  auto s = Cluster();
  for (const char* n : {"leaf0-n0", "leaf0-n1", "leaf1-n0", "leaf1-n1"}) ASSERT_TRUE(s->SetExternalLoad(n, 8, 100, 0));
  ASSERT_TRUE(s->Submit(Job(1, 8), 200));
  s->Schedule(200);
  ASSERT_EQ(s->job(1)->state, JobState::kPending);
  ASSERT_EQ(s->reservations().size(), 1u);
  EXPECT_EQ(s->reservations()[0].start, 201);
}

TEST(ExternalLoad, NeverTakesTheGpusOfTheCoresOwnJobs) {
  auto s = Cluster();
  for (const char* n : {"leaf0-n1", "leaf1-n0", "leaf1-n1"}) ASSERT_TRUE(s->SetExternalLoad(n, 8, 1000, 0));
  ASSERT_TRUE(s->Submit(Job(1, 5), 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  ASSERT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf0-n0"}));
  auto taken = s->SetExternalLoad("leaf0-n0", 8, 1000, 10);
  ASSERT_TRUE(taken);
  EXPECT_EQ(*taken, 3u);  // capped at the unowned GPUs
  EXPECT_EQ(ExternalGpus(*s, "leaf0-n0"), 3u);
  EXPECT_EQ(s->job(1)->gpus.size(), 5u);
  EXPECT_EQ(s->CheckInvariants(), "");
  // After the job ends, a new load takes the whole node.
  ASSERT_TRUE(s->JobEnded(1, 20, true));
  ASSERT_TRUE(s->SetExternalLoad("leaf0-n0", 8, 1000, 20));
  EXPECT_EQ(ExternalGpus(*s, "leaf0-n0"), 8u);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(ExternalLoad, WorksOnDrainedAndDownNodesAndSurvivesTheirChanges) {
  auto s = Cluster();
  ASSERT_TRUE(s->SetNodeState("leaf0-n0", NodeState::kDrain, 0));
  ASSERT_TRUE(s->SetExternalLoad("leaf0-n0", 4, 1000, 0));
  ASSERT_TRUE(s->SetNodeState("leaf0-n0", NodeState::kDown, 1));
  EXPECT_EQ(ExternalGpus(*s, "leaf0-n0"), 4u);
  ASSERT_TRUE(s->SetNodeState("leaf0-n0", NodeState::kUp, 2));
  EXPECT_EQ(s->topology().free_gpus(s->topology().find("leaf0-n0")), 4u);
  EXPECT_EQ(s->CheckInvariants(), "");
}

TEST(ExternalLoad, BadNodeOrCountIsAnErrorThatChangesNothing) {
  auto s = Cluster();
  auto unknown = s->SetExternalLoad("nope", 1, 10, 0);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(unknown.error().where, "node nope");
  auto many = s->SetExternalLoad("leaf0-n0", 9, 10, 0);
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(many.error().message.find("9 GPUs, the node has 8"), std::string::npos) << many.error().message;
  ASSERT_TRUE(s->SetExternalLoad("leaf0-n0", 2, 10, 5));
  EXPECT_FALSE(s->SetExternalLoad("leaf0-n0", 3, 10, 4));  // time going back
  EXPECT_EQ(ExternalGpus(*s, "leaf0-n0"), 2u);
  EXPECT_EQ(s->topology().free_gpus(s->topology().root()), 30u);
  EXPECT_EQ(s->CheckInvariants(), "");
}

// One piece per outside job: a node with a short and a long job frees the short one's GPUs at its
// end (issue 11: one end per node made the node busy until the long one ended).
TEST(ExternalLoad, EachPieceFreesItsGpusAtItsOwnEnd) {
  auto s = Cluster();
  // Every node 4 GPUs busy until 5000; leaf1-n1 also 4 more (a second job) until only 300.
  for (const char* n : {"leaf0-n0", "leaf0-n1", "leaf1-n0"}) ASSERT_TRUE(s->SetExternalLoad(n, 8, 5000, 0));
  auto taken = s->SetExternalLoad("leaf1-n1", {{4, 300}, {4, 5000}}, 0);
  ASSERT_TRUE(taken) << taken.error().ToString();
  EXPECT_EQ(*taken, 8u);
  const auto load = s->external_load("leaf1-n1");
  EXPECT_EQ(load.gpus, 8u);
  EXPECT_EQ(load.until, 5000);
  ASSERT_EQ(load.pieces.size(), 2u);
  EXPECT_EQ(load.pieces[0].until, 5000);  // latest end first
  EXPECT_EQ(load.pieces[1].until, 300);
  EXPECT_EQ(s->CheckInvariants(), "");
  // A 4-GPU job is planned on leaf1-n1 at 300 (the short job's end), not at 5000.
  ASSERT_TRUE(s->Submit(Job(1, 4), 0));
  s->Schedule(0);
  ASSERT_EQ(s->job(1)->state, JobState::kPending);
  EXPECT_EQ(s->job(1)->wait.predicted_start, 300);
  // An 8-GPU job waits for the long one: 5000.
  ASSERT_TRUE(s->Submit(Job(2, 8), 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(2)->wait.predicted_start, 5000);
  // The short job ends: its piece goes, the long one's 4 GPUs stay, and job 1 starts there.
  ASSERT_TRUE(s->SetExternalLoad("leaf1-n1", {{4, 5000}}, 290));
  s->Schedule(290);
  ASSERT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf1-n1"}));
  EXPECT_EQ(ExternalGpus(*s, "leaf1-n1"), 4u);
  EXPECT_EQ(s->CheckInvariants(), "");
}

// Fewer unowned GPUs than the pieces ask for (the core's own job holds some): the pieces that end
// last are kept, the earliest cut; more pieces than owners merge into the last (latest end kept).
TEST(ExternalLoad, CutPiecesKeepTheLatestEndsAndTooManyMerge) {
  auto s = Cluster();
  for (const char* n : {"leaf0-n1", "leaf1-n0", "leaf1-n1"}) ASSERT_TRUE(s->SetExternalLoad(n, 8, 1000, 0));
  ASSERT_TRUE(s->Submit(Job(1, 5), 0));
  s->Schedule(0);
  ASSERT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf0-n0"}));
  auto taken = s->SetExternalLoad("leaf0-n0", {{2, 100}, {2, 900}, {2, 500}}, 1);
  ASSERT_TRUE(taken);
  EXPECT_EQ(*taken, 3u);  // 3 unowned GPUs: 900's 2, then 1 of 500's; 100's cut
  auto load = s->external_load("leaf0-n0");
  ASSERT_EQ(load.pieces.size(), 2u);
  EXPECT_EQ(load.pieces[0].gpus, 2u);
  EXPECT_EQ(load.pieces[0].until, 900);
  EXPECT_EQ(load.pieces[1].gpus, 1u);
  EXPECT_EQ(load.pieces[1].until, 500);
  EXPECT_EQ(s->CheckInvariants(), "");
  // 8 one-GPU pieces on a free node never need more owners than Topology::kExternalPieces; an
  // empty list clears the load.
  ASSERT_TRUE(s->JobEnded(1, 2, true));
  std::vector<Scheduler::ExternalPiece> many;
  for (Time t = 10; t <= 80; t += 10) many.push_back({1, t});
  ASSERT_TRUE(s->SetExternalLoad("leaf0-n0", many, 2));
  EXPECT_EQ(s->external_load("leaf0-n0").pieces.size(), 8u);
  EXPECT_EQ(ExternalGpus(*s, "leaf0-n0"), 8u);
  EXPECT_EQ(s->CheckInvariants(), "");
  ASSERT_TRUE(s->SetExternalLoad("leaf0-n0", std::vector<Scheduler::ExternalPiece>{}, 3));
  EXPECT_EQ(ExternalGpus(*s, "leaf0-n0"), 0u);
  EXPECT_EQ(s->external_load("leaf0-n0").gpus, 0u);
  EXPECT_EQ(s->CheckInvariants(), "");
}

// phalanxd's Slurm mode (config.shrink_keeps_first_node): a shrink that lets a higher class in
// keeps the elastic job's first node (rank 0: Slurm's batch host, which 22.05 needs to shrink a
// running job in place), where otherwise the tie goes to the first block in topology order.
// The elastic job's first GPU, and the first GPU it keeps.
std::pair<GpuId, GpuId> ShrinkForHighJob(bool keep_first_node) {
  auto config = PolicyPreset("phalanx");
  if (!config) throw std::runtime_error(config.error().ToString());
  config->weights.fairshare = 0;
  config->shrink_keeps_first_node = keep_first_node;
  auto made = Scheduler::Create(Build(TwoTier(2, 2)), *config);
  if (!made) throw std::runtime_error(made.error().ToString());
  std::unique_ptr<Scheduler> s = std::move(*made);
  for (const char* n : {"leaf1-n0", "leaf1-n1"}) EXPECT_TRUE(s->SetExternalLoad(n, 8, 100000, 0));
  JobSpec e = Job(1, 16, 100000);
  e.min_gpus = 8;
  e.shape.level = Level::kLeaf;
  e.priority_class = "low";
  e.preemptible = true;
  EXPECT_TRUE(s->Submit(e, 0));
  s->Schedule(0);
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(Nodes(*s, 1), (std::set<std::string>{"leaf0-n0", "leaf0-n1"}));
  JobSpec h = Job(2, 8, 1000);
  h.priority_class = "high";
  EXPECT_TRUE(s->Submit(h, 7200));
  s->Schedule(7200);
  EXPECT_EQ(s->job(1)->state, JobState::kCheckpointing);
  EXPECT_EQ(s->CheckInvariants(), "");
  const JobRecord* j = s->job(1);
  EXPECT_EQ(j->shrink_to.size(), 8u);
  if (j->gpus.empty() || j->shrink_to.empty()) return {GpuId(0), GpuId(1)};
  return {j->gpus.front(), j->shrink_to.front()};
}

TEST(SlurmShrink, KeepsTheFirstNodeWhenAskedTo) {
  const auto [first, kept] = ShrinkForHighJob(true);
  EXPECT_EQ(first, kept);  // rank 0 stays
  // Without it the first block in topology order goes to the high job: the first node with it.
  const auto [first_plain, kept_plain] = ShrinkForHighJob(false);
  EXPECT_NE(first_plain, kept_plain);
}

}  // namespace
}  // namespace phalanx