// Opening a store file: the versioned schema and its migrations, and bad files (foreign, newer,
// tampered, corrupted) giving errors that name the file -- never a crash.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "adapters/store/codec.h"
#include "adapters/store/schema.h"
#include "adapters/store/sqlite_db.h"
#include "adapters/store/store.h"
#include "store_test_util.h"

namespace phalanx::store {
namespace {

using testing::OpenOrDie;
using testing::RandomSpec;
using testing::TempDir;

// Raw SQL on a closed store file, for tampering.
void RawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// A store file at schema `version` (an older build's), with no rows; one job spec to put in it.
void OldStore(const std::string& path, int version) {
  auto db = SqliteDb::Open(path, true, "");
  ASSERT_TRUE(db);
  auto r = Migrate(*db, StoreMigrations().first(version));
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_EQ(r->to, version);
}

JobSpec OldSpec(uint32_t gpus) {
  JobSpec spec;
  spec.id = 1;
  spec.name = "old";
  spec.user = "alice";
  spec.shape.gpus = gpus;
  return spec;
}

TEST(Store, CreatesVersionedSchema) {
  TempDir dir;
  auto store = OpenOrDie(dir.File("s.db"));
  ASSERT_TRUE(store);
  EXPECT_EQ(store->next_job_id(), 1u);
  store.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.File("s.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &q, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), CurrentSchemaVersion());
  sqlite3_finalize(q);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)), "wal");
  sqlite3_finalize(q);
  sqlite3_close(db);
}

// Migrations of a test schema: a v1 file is brought to v2 with its data, and a v2 file is
// refused by a build that only knows v1 -- both through Migrate(), which Store::Open uses.
TEST(Store, MigratesOldFilesAndRefusesNewerOnes) {
  TempDir dir;
  const std::string path = dir.File("m.db");
  const Migration v1[] = {{1, "t", "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (42);"}};
  const Migration v2[] = {v1[0], {2, "t.y", "ALTER TABLE t ADD COLUMN y TEXT NOT NULL DEFAULT 'new';"}};
  {
    auto db = SqliteDb::Open(path, true, "");
    ASSERT_TRUE(db);
    auto r = Migrate(*db, v1);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->from, 0);
    EXPECT_EQ(r->to, 1);
  }
  {
    auto db = SqliteDb::Open(path, true, "");
    ASSERT_TRUE(db);
    auto r = Migrate(*db, v2);
    ASSERT_TRUE(r) << r.error().ToString();
    EXPECT_EQ(r->from, 1);
    EXPECT_EQ(r->to, 2);
    EXPECT_EQ(db->QueryText("SELECT x || y FROM t").value_or("?"), "42new");
    EXPECT_EQ(db->QueryInt("SELECT count(*) FROM schema_version").value_or(-1), 2);
    auto again = Migrate(*db, v2);  // idempotent
    ASSERT_TRUE(again);
    EXPECT_EQ(again->from, 2);
  }
  {
    auto db = SqliteDb::Open(path, true, "");
    ASSERT_TRUE(db);
    auto r = Migrate(*db, v1);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().where, path);
    EXPECT_NE(r.error().message.find("schema version 2 is newer than this build supports (1)"), std::string::npos)
        << r.error().message;
    EXPECT_FALSE(db->InTransaction());
  }
  // A failing migration leaves the file at its old version.
  const Migration broken[] = {v2[0], v2[1], {3, "bad", "CREATE TABLE u(a); SELECT nope FROM nowhere;"}};
  {
    auto db = SqliteDb::Open(path, true, "");
    ASSERT_TRUE(db);
    auto r = Migrate(*db, broken);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("migration to schema version 3 failed"), std::string::npos) << r.error().message;
    EXPECT_EQ(db->QueryInt("SELECT max(version) FROM schema_version").value_or(-1), 2);
    EXPECT_EQ(db->QueryInt("SELECT count(*) FROM sqlite_schema WHERE name = 'u'").value_or(-1), 0);
  }
}

// Schema v5: a v4 file's jobs (no partitions column) load with none named, so the core puts
// them in the default partition; nodes have no reason_user. New rows keep both.
TEST(Store, MigratesV4JobsToTheDefaultPartition) {
  TempDir dir;
  const std::string path = dir.File("v4.db");
  const JobSpec spec = OldSpec(2);
  ASSERT_NO_FATAL_FAILURE(OldStore(path, 4));
  RawSql(path, "INSERT INTO jobs(id, submit, spec) VALUES (1, 5, '" + EncodeJobSpec(spec) + "');" +
                   "INSERT INTO nodes(name, state, since, reason) VALUES ('n1', 'drain', 9, 'fan');");
  {
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    auto all = store->LoadAll();
    ASSERT_TRUE(all) << all.error().ToString();
    ASSERT_EQ(all->jobs.size(), 1u);
    EXPECT_TRUE(all->jobs[0].spec.partitions.empty());
    ASSERT_EQ(all->nodes.size(), 1u);
    EXPECT_EQ(all->nodes[0].reason, "fan");
    EXPECT_EQ(all->nodes[0].reason_user, "");
    JobSpec two = spec;
    two.id = 2;
    two.partitions = {"gpu", "debug"};
    Batch b;
    b.SubmitJob(two, 10);
    b.SetNodeState("n2", NodeState::kDown, 11, "psu", "admin1");
    ASSERT_TRUE(store->Apply(b));
  }
  auto store = OpenOrDie(path);
  ASSERT_TRUE(store);
  auto all = store->LoadAll();
  ASSERT_TRUE(all) << all.error().ToString();
  ASSERT_EQ(all->jobs.size(), 2u);
  EXPECT_EQ(all->jobs[1].spec.partitions, (std::vector<std::string>{"gpu", "debug"}));
  ASSERT_EQ(all->nodes.size(), 2u);
  EXPECT_EQ(all->nodes[1].reason_user, "admin1");
  // The saved record keeps them too.
  JobRecord rec = all->jobs[1];
  rec.spec.partitions = {"debug"};
  ASSERT_TRUE(store->SaveJobState(rec.spec.id, rec));
  auto again = store->LoadAll();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->jobs[1].spec.partitions, std::vector<std::string>{"debug"});
}

// Schema v6: a v5 file's jobs load with no attained service (Scheduler::Restore counts a running
// job's from the restart); a saved record keeps its count and time. A count that is not a finite
// number >= 0 is refused, naming the job and the field.
TEST(Store, MigratesV5JobsWithoutAttainedServiceAndKeepsItFromThen) {
  TempDir dir;
  const std::string path = dir.File("v5.db");
  const JobSpec spec = OldSpec(8);
  ASSERT_NO_FATAL_FAILURE(OldStore(path, 5));
  RawSql(path, "INSERT INTO jobs(id, submit, spec, state, gpus, start_time) VALUES (1, 5, '" + EncodeJobSpec(spec) +
                   "', 'running', '0-7', 10);");
  {
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    auto all = store->LoadAll();
    ASSERT_TRUE(all) << all.error().ToString();
    ASSERT_EQ(all->jobs.size(), 1u);
    EXPECT_EQ(all->jobs[0].service_gpu_s, 0.0);
    EXPECT_EQ(all->jobs[0].service_until, 0);
    JobRecord rec = all->jobs[0];
    rec.service_gpu_s = 8.0 * 3600 + 0.5;
    rec.service_until = 3700;
    ASSERT_TRUE(store->SaveJobState(rec.spec.id, rec));
  }
  {
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    auto all = store->LoadAll();
    ASSERT_TRUE(all) << all.error().ToString();
    ASSERT_EQ(all->jobs.size(), 1u);
    EXPECT_EQ(all->jobs[0].service_gpu_s, 8.0 * 3600 + 0.5);
    EXPECT_EQ(all->jobs[0].service_until, 3700);
  }
  for (const char* value : {"-1", "9e999"}) {
    RawSql(path, std::string("UPDATE jobs SET service_gpu_s = ") + value + " WHERE id = 1;");
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    auto all = store->LoadAll();
    ASSERT_FALSE(all) << value;
    EXPECT_NE(all.error().message.find("job 1: service_gpu_s"), std::string::npos) << all.error().message;
  }
}

TEST(Store, RefusesNewerSchemaVersionNamingTheFile) {
  TempDir dir;
  const std::string path = dir.File("new.db");
  ASSERT_TRUE(OpenOrDie(path));
  RawSql(path, "INSERT INTO schema_version VALUES (99, 'from the future')");
  auto s = Store::Open(path);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().where, path);
  EXPECT_NE(s.error().message.find("schema version 99 is newer"), std::string::npos) << s.error().ToString();
}

TEST(Store, BadFilesGiveClearErrors) {
  TempDir dir;
  struct Case {
    std::string name, setup_sql, raw_text, expect;
  };
  const std::vector<Case> cases = {
      {"text.db", "", "this is not a database, just text\n", "not a usable store: "},
      {"zeros.db", "", std::string(8192, '\0'), "not a usable store: "},
      {"foreign.db", "CREATE TABLE users(name TEXT);", "",
       "not a Phalanx store: it has 1 tables but no schema_version"},
      {"appid.db", "PRAGMA application_id = 1234;", "", "not a Phalanx store: SQLite application_id is 1234"},
      {"impostor.db", "CREATE TABLE schema_version(version INTEGER);", "",
       "not a Phalanx store: it has a schema_version"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.File(c.name);
    if (!c.raw_text.empty()) std::ofstream(path, std::ios::binary) << c.raw_text;
    if (!c.setup_sql.empty()) RawSql(path, c.setup_sql);
    auto s = Store::Open(path);
    ASSERT_FALSE(s) << c.name;
    EXPECT_EQ(s.error().where, path) << c.name;
    EXPECT_NE(s.error().message.find(c.expect), std::string::npos) << c.name << ": " << s.error().ToString();
  }
  auto missing = Store::Open(dir.File("no/such/dir/s.db"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().where, dir.File("no/such/dir/s.db"));
  StoreOptions no_create;
  no_create.create_if_missing = false;
  auto absent = Store::Open(dir.File("absent.db"), no_create);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().where, dir.File("absent.db"));
}

TEST(Store, TamperedSchemaOrRowsGiveClearErrors) {
  TempDir dir;
  const std::string path = dir.File("t.db");
  {
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->SubmitJob(JobSpec{}, 5));
    ASSERT_TRUE(store->SubmitJob(JobSpec{}, 5));
  }
  RawSql(path, "UPDATE jobs SET spec = 'v=1 name=x' WHERE id = 2");
  {
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    auto all = store->LoadAll();
    ASSERT_FALSE(all);
    EXPECT_EQ(all.error().where, path);
    EXPECT_NE(all.error().message.find("job 2: spec: missing field 'user'"), std::string::npos) << all.error().message;
    auto one = store->LoadJob(1);
    ASSERT_TRUE(one && *one);
  }
  for (const auto& [sql, expect] : std::vector<std::pair<std::string, std::string>>{
           {"UPDATE jobs SET spec = (SELECT spec FROM jobs WHERE id = 1), state = 'flying' WHERE id = 2",
            "job 2: state: unknown state 'flying'"},
           {"UPDATE jobs SET state = 'pending', gpus = '1-x' WHERE id = 2", "job 2: gpus: bad GPU list item"},
           {"UPDATE jobs SET gpus = '', preemptions = -3 WHERE id = 2", "job 2: preemptions: out of range"}}) {
    RawSql(path, sql);
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store);
    auto all = store->LoadAll();
    ASSERT_FALSE(all) << sql;
    EXPECT_NE(all.error().message.find(expect), std::string::npos) << all.error().message;
  }
  RawSql(path, "ALTER TABLE jobs DROP COLUMN idle_since");
  auto s = Store::Open(path);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().where, path);
  EXPECT_NE(s.error().message.find("the schema does not match this build"), std::string::npos) << s.error().message;
  const std::string path2 = dir.File("t2.db");
  ASSERT_TRUE(OpenOrDie(path2));
  RawSql(path2, "DELETE FROM meta");
  s = Store::Open(path2);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("next_job_id is missing"), std::string::npos) << s.error().message;
}

// Random byte damage to a store file: Open/LoadAll/CheckIntegrity report or succeed, never
// crash (ASan/UBSan builds make "never" meaningful).
TEST(Store, CorruptedFilesNeverCrash) {
  TempDir dir;
  const std::string clean = dir.File("clean.db");
  {
    auto store = OpenOrDie(clean);
    ASSERT_TRUE(store);
    std::mt19937 rng(3);
    Batch b;
    for (int i = 0; i < 400; ++i) b.SubmitJob(RandomSpec(rng), 10);
    ASSERT_TRUE(store->Apply(b));
    ASSERT_TRUE(store->CheckpointWal());
  }
  const auto size = std::filesystem::file_size(clean);
  std::mt19937 rng(2024);
  int detected = 0;
  for (int round = 0; round < 60; ++round) {
    const std::string path = dir.File("bad" + std::to_string(round) + ".db");
    std::filesystem::copy_file(clean, path);
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      if (round % 10 == 9) {
        f.close();
        std::filesystem::resize_file(path, rng() % size);
      } else {
        // Damage a run of bytes somewhere (page 1 holds the header and the schema).
        const size_t at = rng() % size, len = 1 + rng() % 64;
        for (size_t i = 0; i < len && at + i < size; ++i) {
          f.seekp(static_cast<std::streamoff>(at + i));
          f.put(static_cast<char>(rng()));
        }
      }
    }
    auto store = Store::Open(path);
    if (!store) {
      EXPECT_EQ(store.error().where, path);
      ++detected;
      continue;
    }
    auto all = (*store)->LoadAll();
    auto check = (*store)->CheckIntegrity();
    if (!all) {
      EXPECT_EQ(all.error().where, path) << all.error().message;
    }
    if (!check) {
      EXPECT_EQ(check.error().where, path) << check.error().message;
    }
    detected += !all || !check;
  }
  EXPECT_GT(detected, 10);
}

}  // namespace
}  // namespace phalanx::store
