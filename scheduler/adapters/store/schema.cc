#include "adapters/store/schema.h"

#include <string>

namespace phalanx::store {
namespace {

// v1. Columns of `jobs` mirror JobSpec (as one codec string, codec.h) and the persistent part
// of JobRecord; fields the core recomputes every pass (priority, class rank, wait reason,
// predicted bandwidth) are not stored. GPU lists are codec GPU lists of global GPU indices,
// meaningful for the topology recorded in meta('topology') by the daemon.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta(key, value) VALUES ('next_job_id', '1');

CREATE TABLE jobs(
  id                      INTEGER PRIMARY KEY CHECK (id > 0),
  submit                  INTEGER NOT NULL,
  spec                    TEXT NOT NULL,
  state                   TEXT NOT NULL DEFAULT 'pending',
  gpus                    TEXT NOT NULL DEFAULT '',
  start_time              INTEGER NOT NULL DEFAULT 0,
  end_time                INTEGER NOT NULL DEFAULT 0,
  walltime                INTEGER NOT NULL DEFAULT 0,
  run_walltime            INTEGER NOT NULL DEFAULT 0,
  progress                INTEGER NOT NULL DEFAULT 0,
  checkpoint_epoch        INTEGER NOT NULL DEFAULT 0,
  checkpoint_path         TEXT NOT NULL DEFAULT '',
  last_checkpoint         INTEGER NOT NULL DEFAULT 0,
  last_checkpoint_request INTEGER NOT NULL DEFAULT 0,
  checkpoint_deadline     INTEGER NOT NULL DEFAULT 0,
  after_checkpoint        TEXT NOT NULL DEFAULT 'nothing',
  shrink_to               TEXT NOT NULL DEFAULT '',
  preempted_for           INTEGER NOT NULL DEFAULT 0,
  victims                 TEXT NOT NULL DEFAULT '',
  claim                   TEXT NOT NULL DEFAULT '',
  preemptions             INTEGER NOT NULL DEFAULT 0,
  resizes                 INTEGER NOT NULL DEFAULT 0,
  gpu_seconds_lost        REAL NOT NULL DEFAULT 0,
  idle_since              INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE checkpoints(
  job   INTEGER NOT NULL REFERENCES jobs(id),
  epoch INTEGER NOT NULL,
  time  INTEGER NOT NULL,
  path  TEXT NOT NULL,
  PRIMARY KEY (job, epoch)
) WITHOUT ROWID;

CREATE TABLE nodes(
  name   TEXT PRIMARY KEY,
  state  TEXT NOT NULL CHECK (state IN ('up', 'drain', 'down')),
  since  INTEGER NOT NULL,
  reason TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- Append-only: seq is the rowid (never reused, as rows are never deleted).
CREATE TABLE events(
  seq     INTEGER PRIMARY KEY,
  time    INTEGER NOT NULL,
  kind    TEXT NOT NULL,
  job     INTEGER NOT NULL DEFAULT 0,
  payload TEXT NOT NULL DEFAULT ''
);
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
  BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
)sql";

// v2. How to run each job, for phalanxd: an opaque blob the daemon writes at submission (the
// API's JobSpec run fields, the submitter's uid/gid/user; a serialized phalanx.v1.Job). The
// store never looks inside; the core never sees it.
constexpr std::string_view kV2 = R"sql(
CREATE TABLE launch(
  job  INTEGER PRIMARY KEY REFERENCES jobs(id),
  info BLOB NOT NULL
);
)sql";

// v3. The cluster's history for dashboards (docs/monitoring.md): one row per series per sample
// (phalanxd's sampler, every history.interval seconds), pruned by time (history.retention).
// Series names are stored once in history_series; a row is (series id, time, value), about
// 20 bytes with its time index.
constexpr std::string_view kV3 = R"sql(
CREATE TABLE history_series(
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE history(
  series INTEGER NOT NULL REFERENCES history_series(id),
  time   INTEGER NOT NULL,
  value  REAL NOT NULL,
  PRIMARY KEY (series, time)
) WITHOUT ROWID;
CREATE INDEX history_by_time ON history(time);
)sql";

// v4. Partitions (core/sched/partition.h): the partitions a job names, comma-separated (rows
// from before have '' and so run in the default partition); who drained or downed a node.
constexpr std::string_view kV4 = R"sql(
ALTER TABLE jobs ADD COLUMN partitions TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN reason_user TEXT NOT NULL DEFAULT '';
)sql";

constexpr Migration kMigrations[] = {
    {1, "jobs, checkpoints, nodes, events, meta", kV1},
    {2, "launch: how to run each job (opaque, the daemon's)", kV2},
    {3, "history: sampled series for dashboards", kV3},
    {4, "partitions of jobs, who set a node's state", kV4},
};

}  // namespace

std::span<const Migration> StoreMigrations() { return kMigrations; }
int CurrentSchemaVersion() { return kMigrations[std::size(kMigrations) - 1].version; }

Result<MigrationResult> Migrate(SqliteDb& db, std::span<const Migration> migrations) {
  const std::string& path = db.path();
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1)
      return Fail(path, "internal: migrations are not numbered 1..N (entry " + std::to_string(i) + " is version " +
                            std::to_string(migrations[i].version) + ")");
  }
  if (migrations.empty()) return Fail(path, "internal: no migrations");
  const int target = migrations.back().version;

  // IMMEDIATE: take the write lock now, so that two processes cannot both migrate.
  if (auto st = db.Exec("BEGIN IMMEDIATE"); !st) return Fail(path, "not a usable store: " + st.error().message);
  const auto fail = [&db, &path](std::string message) -> Result<MigrationResult> {
    if (db.InTransaction()) (void)db.Exec("ROLLBACK");
    return Fail(path, std::move(message));
  };

  auto app = db.QueryInt("PRAGMA application_id");
  if (!app) return fail("not a usable store: " + app.error().message);
  auto tables = db.QueryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table'");
  if (!tables) return fail("not a usable store: " + tables.error().message);
  auto has_version = db.QueryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'");
  if (!has_version) return fail("not a usable store: " + has_version.error().message);
  const int64_t app_id = *app;

  int64_t version = 0;
  if (*has_version == 0) {
    if (app_id != 0 && app_id != kApplicationId)
      return fail("not a Phalanx store: SQLite application_id is " + std::to_string(app_id) + ", not " +
                  std::to_string(kApplicationId));
    if (*tables != 0)
      return fail("not a Phalanx store: it has " + std::to_string(*tables) + " tables but no schema_version table");
    if (auto st = db.Exec("CREATE TABLE schema_version(version INTEGER PRIMARY KEY, description TEXT NOT NULL);"
                          "PRAGMA application_id = " +
                          std::to_string(kApplicationId));
        !st)
      return fail("creating the schema: " + st.error().message);
  } else {
    if (app_id != kApplicationId)
      return fail("not a Phalanx store: it has a schema_version table but application_id " + std::to_string(app_id));
    auto v = db.QueryInt("SELECT coalesce(max(version), 0) FROM schema_version");
    if (!v) return fail("reading the schema version: " + v.error().message);
    version = *v;
  }
  if (version > target)
    return fail("schema version " + std::to_string(version) + " is newer than this build supports (" +
                std::to_string(target) + "); run a newer phalanxd, or restore a backup made by this version");

  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    if (auto st = db.Exec(m.sql); !st)
      return fail("migration to schema version " + std::to_string(m.version) + " failed: " + st.error().message);
    auto insert = db.Prepare("INSERT INTO schema_version(version, description) VALUES (?1, ?2)");
    if (!insert) return fail(insert.error().message);
    insert->Bind(1, int64_t{m.version}).Bind(2, m.description);
    if (auto st = insert->Run(); !st) return fail(st.error().message);
  }
  if (auto st = db.Exec("COMMIT"); !st) return fail("committing the migration: " + st.error().message);
  return MigrationResult{static_cast<int>(version), target};
}

}  // namespace phalanx::store
