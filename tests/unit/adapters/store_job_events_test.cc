// The store's job history (job_events, schema v4): every event of a job, bounded per job,
// pruned with the history's retention once the job is final, and filled from the event log
// when a v3 file is opened.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "adapters/store/schema.h"
#include "adapters/store/sqlite_db.h"
#include "adapters/store/store.h"
#include "store_test_util.h"

namespace phalanx::store {
namespace {

using testing::OpenOrDie;
using testing::TempDir;

JobSpec Spec(JobId id) {
  JobSpec s;
  s.id = id;
  s.user = "alice";
  s.account = "lab";
  s.shape.gpus = 8;
  return s;
}

std::string Kinds(const std::vector<StoredEvent>& events) {
  std::string out;
  for (const StoredEvent& e : events)
    out += (out.empty() ? "" : " ") + e.kind + "@" + std::to_string(e.time) + "#" + std::to_string(e.seq);
  return out;
}

TEST(StoreJobEvents, EveryEventOfAJobInOrderWithItsPayload) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("s.db"));
  ASSERT_TRUE(store->SubmitJob(Spec(7), 100));
  ASSERT_TRUE(store->SubmitJob(Spec(8), 101));
  Decision start;
  start.kind = DecisionKind::kStart;
  start.job = 7;
  start.at = 110;
  start.gpus = {GpuId(0), GpuId(1)};
  start.reason = "busbw 360.0 GB/s";
  ASSERT_TRUE(store->RecordDecision(start));
  ASSERT_TRUE(store->RecordEvent(120, "checkpoint_done", 7, "epoch=1"));
  ASSERT_TRUE(store->RecordEvent(121, "node", kNoJob, "node=node0"));  // not a job's
  auto events = store->ReadJobEvents(7);
  ASSERT_TRUE(events) << events.error().ToString();
  EXPECT_EQ(Kinds(*events), "submit@100#1 start@110#2 checkpoint_done@120#3");
  EXPECT_NE((*events)[1].payload.find("gpus=0-1"), std::string::npos) << (*events)[1].payload;
  EXPECT_EQ((*events)[2].payload, "epoch=1");
  EXPECT_EQ((*events)[2].job, 7u);
  EXPECT_EQ(Kinds(*store->ReadJobEvents(8)), "submit@101#1");
  EXPECT_TRUE(store->ReadJobEvents(9)->empty());
  // The event log keeps every row as before.
  EXPECT_EQ(store->ReadEvents(0, 100)->size(), 5u);
}

TEST(StoreJobEvents, BoundedPerJobKeepingTheFirstAndTheLatest) {
  TempDir dir;
  StoreOptions o;
  o.max_job_events = 4;
  auto store = OpenOrDie(dir.File("s.db"), o);
  ASSERT_TRUE(store->SubmitJob(Spec(1), 100));
  Batch b;  // one batch: the bound holds within a transaction too
  for (int i = 1; i <= 10; ++i) b.RecordEvent(100 + i, "checkpoint_done", 1, "epoch=" + std::to_string(i));
  ASSERT_TRUE(store->Apply(b));
  auto events = store->ReadJobEvents(1);
  ASSERT_TRUE(events);
  EXPECT_EQ(Kinds(*events), "submit@100#1 checkpoint_done@108#9 checkpoint_done@109#10 checkpoint_done@110#11");
  EXPECT_EQ(store->ReadEvents(0, 100)->size(), 11u) << "the event log is not bounded by it";
  StoreOptions bad;
  bad.max_job_events = 1;
  auto refused = Store::Open(dir.File("t.db"), bad);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("max_job_events: 1"), std::string::npos) << refused.error().ToString();
}

TEST(StoreJobEvents, PrunedWithTheHistoryOnceTheJobIsFinal) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("s.db"));
  ASSERT_TRUE(store->SubmitJob(Spec(1), 100));
  ASSERT_TRUE(store->SubmitJob(Spec(2), 100));
  ASSERT_TRUE(store->RecordEvent(200, "end", 1, "success=1"));
  ASSERT_TRUE(store->RecordEvent(300, "checkpoint_done", 1, "epoch=1"));  // after its end: kept
  auto job = store->LoadJob(1);
  ASSERT_TRUE(job && *job);
  JobRecord done = **job;
  done.state = JobState::kCompleted;
  done.end = 200;
  ASSERT_TRUE(store->SaveJobState(1, done));
  Batch prune;
  prune.PruneHistory(250);
  ASSERT_TRUE(store->Apply(prune));
  EXPECT_EQ(Kinds(*store->ReadJobEvents(1)), "checkpoint_done@300#3");
  // Job 2 is pending: its old events stay.
  EXPECT_EQ(Kinds(*store->ReadJobEvents(2)), "submit@100#1");
}

// A file written by a build of schema v3: the job history is filled from its event log (at
// most 128 per job: the first and the latest 127), the log itself unchanged.
TEST(StoreJobEvents, AVersion3FileOpensWithItsJobsHistory) {
  TempDir dir;
  const std::string path = dir.File("v3.db");
  {
    auto db = SqliteDb::Open(path, true, "");
    ASSERT_TRUE(db);
    auto r = Migrate(*db, StoreMigrations().first(3));
    ASSERT_TRUE(r) << r.error().ToString();
    ASSERT_EQ(r->to, 3);
    std::string sql =
        "BEGIN;"
        "INSERT INTO jobs(id, submit, spec) VALUES (1, 100, 'x'), (2, 100, 'x');"
        "UPDATE meta SET value = '3' WHERE key = 'next_job_id';"
        "INSERT INTO events(time, kind, job, payload) VALUES (100, 'submit', 1, ''), (100, 'submit', 2, ''),"
        "(105, 'node', 0, 'node=node0'), (110, 'start', 1, 'gpus=0-7 reason=busbw');";
    for (int i = 1; i <= 200; ++i)
      sql += "INSERT INTO events(time, kind, job, payload) VALUES (" + std::to_string(1000 + i) +
             ", 'checkpoint_done', 1, 'epoch=" + std::to_string(i) + "');";
    ASSERT_TRUE(db->Exec(sql + "COMMIT;"));
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store) << store.error().ToString();
  auto db = SqliteDb::Open(path, false, "");
  ASSERT_TRUE(db);
  EXPECT_EQ(db->QueryInt("SELECT max(version) FROM schema_version").value_or(-1), CurrentSchemaVersion());
  auto one = (*store)->ReadJobEvents(1);
  ASSERT_TRUE(one) << one.error().ToString();
  ASSERT_EQ(one->size(), 128u);
  EXPECT_EQ(one->front().kind, "submit");
  EXPECT_EQ(one->front().time, 100);
  EXPECT_EQ(one->front().seq, 1u);
  // 202 events of job 1: the first, then #76..#202 (epochs 74..200).
  EXPECT_EQ((*one)[1].seq, 76u);
  EXPECT_EQ((*one)[1].payload, "epoch=74");
  EXPECT_EQ(one->back().payload, "epoch=200");
  EXPECT_EQ(one->back().seq, 202u);
  EXPECT_EQ(Kinds(*(*store)->ReadJobEvents(2)), "submit@100#1");
  EXPECT_EQ((*store)->ReadEvents(0, 1000)->size(), 204u);
  // New events continue the job's numbering.
  ASSERT_TRUE((*store)->RecordEvent(2000, "end", 1, "success=1"));
  auto again = (*store)->ReadJobEvents(1);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->size(), 128u);
  EXPECT_EQ(again->back().kind, "end");
  EXPECT_EQ(again->back().seq, 203u);
  EXPECT_EQ(again->front().kind, "submit");
}

}  // namespace
}  // namespace phalanx::store
