// Store: writes and what a reopen finds (ids, every persistent field, batches and groups, the
// append-only event log, nodes and meta, launch info), and writes that fail under fault
// injection through the SQLite VFS (store_fault_vfs.h) losing nothing acknowledged. The codec is
// in store_codec_test.cc, opening files (schema, migrations, bad files) in store_schema_test.cc.
#include "adapters/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "adapters/store/sqlite_db.h"
#ifdef PHALANX_HAVE_POSTGRES
#include "adapters/store/pg_db.h"
#endif
#include "store_fault_vfs.h"
#include "store_test_util.h"

namespace phalanx::store {
namespace {

using testing::ExpectSpecEq;
using testing::FaultVfs;
using testing::OpenOrDie;
using testing::RandomSpec;
using testing::TempDir;

// A record with every persistent field set.
JobRecord FullRecord(JobSpec spec) {
  JobRecord j;
  j.spec = std::move(spec);
  j.state = JobState::kCheckpointing;
  j.gpus = {GpuId(8), GpuId(9), GpuId(10), GpuId(11), GpuId(40)};
  j.start = 1000;
  j.end = 0;
  j.walltime = 7200;
  j.run_walltime = 6000;
  j.progress = 1200;
  j.checkpoint_epoch = 7;
  j.checkpoint_path = "/ckpt/job 5/epoch-7";
  j.last_checkpoint = 1900;
  j.last_checkpoint_request = 1950;
  j.checkpoint_deadline = 2100;
  j.after_checkpoint = JobRecord::After::kShrink;
  j.shrink_to = {GpuId(8), GpuId(9)};
  j.preempted_for = 77;
  j.victims = {3, 4};
  j.claim = {GpuId(1), GpuId(0)};
  j.preemptions = 2;
  j.resizes = 3;
  j.gpu_seconds_lost = 1234.5;
  j.idle_since = 1800;
  j.service_gpu_s = 98765.25;
  j.service_until = 1990;
  return j;
}

void ExpectRecordEq(const JobRecord& a, const JobRecord& b) {
  ExpectSpecEq(a.spec, b.spec);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.start, b.start);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.walltime, b.walltime);
  EXPECT_EQ(a.run_walltime, b.run_walltime);
  EXPECT_EQ(a.progress, b.progress);
  EXPECT_EQ(a.checkpoint_epoch, b.checkpoint_epoch);
  EXPECT_EQ(a.checkpoint_path, b.checkpoint_path);
  EXPECT_EQ(a.last_checkpoint, b.last_checkpoint);
  EXPECT_EQ(a.last_checkpoint_request, b.last_checkpoint_request);
  EXPECT_EQ(a.checkpoint_deadline, b.checkpoint_deadline);
  EXPECT_EQ(a.after_checkpoint, b.after_checkpoint);
  EXPECT_EQ(a.shrink_to, b.shrink_to);
  EXPECT_EQ(a.preempted_for, b.preempted_for);
  EXPECT_EQ(a.victims, b.victims);
  EXPECT_EQ(a.claim, b.claim);
  EXPECT_EQ(a.preemptions, b.preemptions);
  EXPECT_EQ(a.resizes, b.resizes);
  EXPECT_EQ(a.gpu_seconds_lost, b.gpu_seconds_lost);
  EXPECT_EQ(a.idle_since, b.idle_since);
  EXPECT_EQ(a.service_gpu_s, b.service_gpu_s);
  EXPECT_EQ(a.service_until, b.service_until);
}

class StoreTest : public testing::StoreBackendTest {};
INSTANTIATE_BOTH_BACKENDS(StoreTest);

TEST_P(StoreTest, SubmitAssignsIdsAndSurvivesReopen) {
  const std::string path = Target("s.db");
  std::mt19937 rng(1);
  std::vector<JobSpec> specs;
  {
    auto store = OpenOrDie(path, Options());
    ASSERT_TRUE(store);
    for (JobId want = 1; want <= 3; ++want) {
      JobSpec s = RandomSpec(rng);
      s.submit = 0;  // becomes `now`
      auto id = store->SubmitJob(s, 50 + static_cast<Time>(want));
      ASSERT_TRUE(id) << id.error().ToString();
      EXPECT_EQ(*id, want);
      s.id = want;
      s.submit = 50 + static_cast<Time>(want);
      specs.push_back(s);
    }
    JobSpec fixed = RandomSpec(rng);
    fixed.id = 100;
    ASSERT_EQ(store->SubmitJob(fixed, 60).value_or(0), 100u);
    specs.push_back(fixed);
    EXPECT_EQ(store->next_job_id(), 101u);
    auto dup = store->SubmitJob(fixed, 61);
    ASSERT_FALSE(dup);
    EXPECT_EQ(dup.error().where, store->path());
    EXPECT_NE(dup.error().message.find("job 100: already exists"), std::string::npos);
    JobSpec huge;
    huge.id = uint64_t{1} << 62;
    EXPECT_FALSE(store->SubmitJob(huge, 61));
    EXPECT_EQ(store->next_job_id(), 101u);
  }
  auto store = OpenOrDie(path, Options());
  ASSERT_TRUE(store);
  EXPECT_EQ(store->next_job_id(), 101u);
  auto all = store->LoadAll();
  ASSERT_TRUE(all) << all.error().ToString();
  ASSERT_EQ(all->jobs.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    ExpectSpecEq(all->jobs[i].spec, specs[i]);
    EXPECT_EQ(all->jobs[i].state, JobState::kPending);
  }
  EXPECT_EQ(all->next_job_id, 101u);
  EXPECT_EQ(store->SubmitJob(JobSpec{}, 70).value_or(0), 101u);
  EXPECT_TRUE(store->CheckIntegrity());
}

TEST_P(StoreTest, SavesEveryPersistentField) {
  const std::string path = Target("s.db");
  std::mt19937 rng(9);
  JobRecord rec;
  {
    auto store = OpenOrDie(path, Options());
    ASSERT_TRUE(store);
    auto id = store->SubmitJob(RandomSpec(rng), 1);
    ASSERT_TRUE(id);
    auto loaded = store->LoadJob(*id);
    ASSERT_TRUE(loaded && *loaded);
    rec = FullRecord((*loaded)->spec);
    rec.spec.held = !rec.spec.held;  // hold/release change the spec
    rec.priority = 99;               // derived: not stored
    ASSERT_TRUE(store->SaveJobState(*id, rec));
    EXPECT_FALSE(store->SaveJobState(*id + 1, rec));  // id mismatch
    JobRecord ghost = rec;
    ghost.spec.id = 555;
    auto st = store->SaveJobState(555, ghost);
    ASSERT_FALSE(st);
    EXPECT_NE(st.error().message.find("job 555: no such job"), std::string::npos);
  }
  auto store = OpenOrDie(path, Options());
  ASSERT_TRUE(store);
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->jobs.size(), 1u);
  ExpectRecordEq(all->jobs[0], rec);
  EXPECT_EQ(all->jobs[0].priority, 0);
}

TEST_P(StoreTest, BatchIsAllOrNothing) {
  auto store = OpenOrDie(Target("s.db"), Options());
  ASSERT_TRUE(store);
  Batch b;
  b.SubmitJob(JobSpec{}, 1);
  b.RecordEvent(1, "note", 0, "x");
  JobRecord ghost;
  ghost.spec.id = 42;
  b.SaveJobState(ghost);
  auto r = store->Apply(b);
  ASSERT_FALSE(r);
  EXPECT_EQ(store->next_job_id(), 1u);
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->jobs.empty());
  EXPECT_EQ(all->last_event_seq, 0u);
  // The connection is usable afterwards.
  EXPECT_EQ(store->SubmitJob(JobSpec{}, 2).value_or(0), 1u);
}

TEST_P(StoreTest, GroupIsolatesFailingBatches) {
  auto store = OpenOrDie(Target("s.db"), Options());
  ASSERT_TRUE(store);
  Batch good1, bad, good2;
  good1.SubmitJob(JobSpec{}, 1);
  bad.SubmitJob(JobSpec{}, 1);
  bad.SetMeta("next_job_id", "7");
  good2.SubmitJob(JobSpec{}, 1);
  good2.SubmitJob(JobSpec{}, 1);
  const Batch* group[] = {&good1, &bad, &good2};
  auto results = store->ApplyGroup(group);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0]);
  ASSERT_FALSE(results[1]);
  EXPECT_NE(results[1].error().message.find("belongs to the store"), std::string::npos);
  ASSERT_TRUE(results[2]);
  EXPECT_EQ(results[0]->submitted, std::vector<JobId>{1});
  EXPECT_EQ(results[2]->submitted, (std::vector<JobId>{2, 3}));  // the failed batch's id is reused
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->jobs.size(), 3u);
  EXPECT_EQ(all->next_job_id, 4u);
}

TEST_P(StoreTest, EventLogIsAppendOnly) {
  const std::string path = Target("s.db");
  {
    auto store = OpenOrDie(path, Options());
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->SubmitJob(JobSpec{}, 10));
    Decision start;
    start.kind = DecisionKind::kStart;
    start.job = 1;
    start.at = 11;
    start.gpus = {GpuId(0), GpuId(1)};
    Decision ckpt;
    ckpt.kind = DecisionKind::kCheckpoint;
    ckpt.job = 1;
    ckpt.at = 12;
    ckpt.deadline = 72;
    ckpt.reason = "preempt for 9";
    Batch b;
    b.RecordDecision(start);
    b.RecordDecision(ckpt);
    b.RecordCheckpoint(1, 3, 70, "/ckpt/3");
    ASSERT_TRUE(store->Apply(b));
    ASSERT_TRUE(store->RecordEvent(80, "ended", 1, "exit=0"));
    auto ev = store->ReadEvents(0, 100);
    ASSERT_TRUE(ev);
    ASSERT_EQ(ev->size(), 4u);
    EXPECT_EQ((*ev)[0].kind, "submit");
    EXPECT_EQ((*ev)[1].kind, "start");
    EXPECT_EQ((*ev)[1].payload, "gpus=0-1");
    EXPECT_EQ((*ev)[2].payload, "deadline=72 reason=preempt%20for%209");
    EXPECT_EQ((*ev)[3].time, 80);
    for (size_t i = 0; i < ev->size(); ++i) EXPECT_EQ((*ev)[i].seq, i + 1);
    auto tail = store->ReadEvents(2, 1);
    ASSERT_TRUE(tail);
    ASSERT_EQ(tail->size(), 1u);
    EXPECT_EQ((*tail)[0].seq, 3u);
    auto bad = store->Apply([] {
      Batch b2;
      b2.RecordCheckpoint(404, 1, 1, "/x");
      return b2;
    }());
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("job 404: recording checkpoint 1"), std::string::npos) << bad.error().message;
  }
  // Another connection cannot change the log either.
  std::unique_ptr<Db> db;
#ifdef PHALANX_HAVE_POSTGRES
  if (postgres()) {
    auto pg = PgDb::Connect(path);
    ASSERT_TRUE(pg) << pg.error().ToString();
    db = std::move(*pg);
  }
#endif
  if (!db) {
    auto lite = SqliteDb::Open(path, false, "");
    ASSERT_TRUE(lite) << lite.error().ToString();
    db = std::make_unique<SqliteDb>(std::move(*lite));
  }
  for (const char* sql : {"UPDATE events SET kind = 'x'", "DELETE FROM events"}) {
    auto st = db->Exec(sql);
    ASSERT_FALSE(st) << sql;
    EXPECT_NE(st.error().message.find("append-only"), std::string::npos) << st.error().message;
  }
}

TEST_P(StoreTest, NodesAndMeta) {
  const std::string path = Target("s.db");
  {
    auto store = OpenOrDie(path, Options());
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->SetNodeState("n2", NodeState::kDown, 5));
    ASSERT_TRUE(store->SetNodeState("n1", NodeState::kDrain, 6));
    ASSERT_TRUE(store->SetNodeState("n2", NodeState::kUp, 7));
    EXPECT_FALSE(store->SetNodeState("", NodeState::kUp, 7));
    Batch b;
    b.SetMeta("topology", "sha256:abc");
    ASSERT_TRUE(store->Apply(b));
  }
  auto store = OpenOrDie(path, Options());
  ASSERT_TRUE(store);
  auto all = store->LoadAll();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->nodes.size(), 2u);
  EXPECT_EQ(all->nodes[0].name, "n1");
  EXPECT_EQ(all->nodes[0].state, NodeState::kDrain);
  EXPECT_EQ(all->nodes[1].state, NodeState::kUp);
  EXPECT_EQ(all->nodes[1].since, 7);
  EXPECT_EQ(store->GetMeta("topology").value_or(std::nullopt).value_or(""), "sha256:abc");
  EXPECT_FALSE(store->GetMeta("nothing").value_or("x").has_value());
}

// Launch info (schema v2): an opaque blob per job, any bytes; LoadAll returns it for the jobs
// that are not final, LoadLaunchInfo for any job; it needs the job to exist.
TEST_P(StoreTest, LaunchInfoIsKeptAsOpaqueBytes) {
  const std::string path = Target("s.db");
  const std::string blob("\x0a\x00\xff launch \x00 info", 17);
  {
    auto store = OpenOrDie(path, Options());
    ASSERT_TRUE(store);
    JobSpec spec;
    spec.shape.gpus = 1;
    Batch b;
    spec.id = 1;
    b.SubmitJob(spec, 10);
    b.SetLaunchInfo(1, blob);
    spec.id = 2;
    b.SubmitJob(spec, 10);
    b.SetLaunchInfo(2, "first");
    b.SetLaunchInfo(2, "second");  // replaces
    ASSERT_TRUE(store->Apply(b));
    JobRecord done;
    done.spec = spec;
    done.state = JobState::kCompleted;
    done.end = 20;
    ASSERT_TRUE(store->SaveJobState(2, done));
    Batch orphan;
    orphan.SetLaunchInfo(77, "x");
    auto r = store->Apply(orphan);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("job 77: launch info"), std::string::npos) << r.error().ToString();
  }
  auto store = OpenOrDie(path, Options());
  ASSERT_TRUE(store);
  auto all = store->LoadAll();
  ASSERT_TRUE(all) << all.error().ToString();
  ASSERT_EQ(all->launch.size(), 1u) << "only unfinished jobs";
  EXPECT_EQ(all->launch.at(1), blob);
  EXPECT_EQ(store->LoadLaunchInfo(2).value_or(std::nullopt).value_or(""), "second");
  EXPECT_FALSE(store->LoadLaunchInfo(3).value_or("x").has_value());
}

// ---- fault injection (SQLite VFS) ----------------------------------------------------------

// A write fails at a random point: the submission in flight fails, the store stops writing
// (sticky error), and after reopening every acknowledged job is there and the file is intact.
TEST(StoreFaults, FailedWritesLoseNothingAcknowledged) {
  FaultVfs::Register();
  std::mt19937 rng(77);
  for (int round = 0; round < 25; ++round) {
    TempDir dir;
    const std::string path = dir.File("f.db");
    const SyncMode sync = round % 2 ? SyncMode::kFull : SyncMode::kNormal;
    std::set<JobId> acked;
    {
      StoreOptions options;
      options.sync = sync;
      options.vfs = FaultVfs::kName;
      auto store = OpenOrDie(path, options);
      ASSERT_TRUE(store);
      for (int i = 0; i < 20; ++i) {
        auto id = store->SubmitJob(RandomSpec(rng), i);
        ASSERT_TRUE(id);
        acked.insert(*id);
      }
      const bool syncs = sync == SyncMode::kFull && round % 4 == 1;
      if (syncs) {
        FaultVfs::FailSyncsAfter(rng() % 6);
      } else {
        FaultVfs::FailWritesAfter(rng() % 40);
      }
      bool failed = false;
      for (int i = 0; i < 60; ++i) {
        Batch b;
        for (int k = 1 + static_cast<int>(rng() % 5); k > 0; --k) b.SubmitJob(RandomSpec(rng), 100 + i);
        auto r = store->Apply(b);
        if (r) {
          EXPECT_FALSE(failed) << "a write succeeded after the store reported a fatal error";
          acked.insert(r->submitted.begin(), r->submitted.end());
        } else {
          EXPECT_EQ(r.error().where, path);
          failed = true;
        }
      }
      EXPECT_TRUE(failed) << "round " << round;
      EXPECT_TRUE(store->sticky_error().has_value());
      FaultVfs::Clear();
      auto after = store->SubmitJob(JobSpec{}, 1000);  // still refused: sticky until reopened
      ASSERT_FALSE(after);
      EXPECT_NE(after.error().message.find("reopen"), std::string::npos);
    }
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    auto st = store->CheckIntegrity();
    EXPECT_TRUE(st) << st.error().ToString();
    auto all = store->LoadAll();
    ASSERT_TRUE(all) << all.error().ToString();
    std::set<JobId> present;
    for (const JobRecord& j : all->jobs) present.insert(j.spec.id);
    for (JobId id : acked)
      EXPECT_TRUE(present.count(id)) << "round " << round << ": acknowledged job " << id << " lost";
    EXPECT_GT(all->next_job_id, *present.rbegin());
    ASSERT_TRUE(store->SubmitJob(JobSpec{}, 2000));  // writable again
  }
}

}  // namespace
}  // namespace phalanx::store
