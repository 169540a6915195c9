#include "adapters/store/schema.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

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

// v1 and v3 on PostgreSQL: the same tables; SQLite's rowid aliases (events.seq,
// history_series.id) become identity columns and its trigger bodies plpgsql.
constexpr std::string_view kV1Postgres = R"sql(
CREATE TABLE meta(
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
INSERT INTO meta(key, value) VALUES ('next_job_id', '1');

CREATE TABLE jobs(
  id                      BIGINT PRIMARY KEY CHECK (id > 0),
  submit                  BIGINT NOT NULL,
  spec                    TEXT NOT NULL,
  state                   TEXT NOT NULL DEFAULT 'pending',
  gpus                    TEXT NOT NULL DEFAULT '',
  start_time              BIGINT NOT NULL DEFAULT 0,
  end_time                BIGINT NOT NULL DEFAULT 0,
  walltime                BIGINT NOT NULL DEFAULT 0,
  run_walltime            BIGINT NOT NULL DEFAULT 0,
  progress                BIGINT NOT NULL DEFAULT 0,
  checkpoint_epoch        BIGINT NOT NULL DEFAULT 0,
  checkpoint_path         TEXT NOT NULL DEFAULT '',
  last_checkpoint         BIGINT NOT NULL DEFAULT 0,
  last_checkpoint_request BIGINT NOT NULL DEFAULT 0,
  checkpoint_deadline     BIGINT NOT NULL DEFAULT 0,
  after_checkpoint        TEXT NOT NULL DEFAULT 'nothing',
  shrink_to               TEXT NOT NULL DEFAULT '',
  preempted_for           BIGINT NOT NULL DEFAULT 0,
  victims                 TEXT NOT NULL DEFAULT '',
  claim                   TEXT NOT NULL DEFAULT '',
  preemptions             BIGINT NOT NULL DEFAULT 0,
  resizes                 BIGINT NOT NULL DEFAULT 0,
  gpu_seconds_lost        DOUBLE PRECISION NOT NULL DEFAULT 0,
  idle_since              BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE checkpoints(
  job   BIGINT NOT NULL REFERENCES jobs(id),
  epoch BIGINT NOT NULL,
  time  BIGINT NOT NULL,
  path  TEXT NOT NULL,
  PRIMARY KEY (job, epoch)
);

CREATE TABLE nodes(
  name   TEXT PRIMARY KEY,
  state  TEXT NOT NULL CHECK (state IN ('up', 'drain', 'down')),
  since  BIGINT NOT NULL,
  reason TEXT NOT NULL DEFAULT ''
);

CREATE TABLE events(
  seq     BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  time    BIGINT NOT NULL,
  kind    TEXT NOT NULL,
  job     BIGINT NOT NULL DEFAULT 0,
  payload TEXT NOT NULL DEFAULT ''
);
CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN RAISE EXCEPTION 'the event log is append-only'; END $$;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
  FOR EACH ROW EXECUTE FUNCTION events_append_only();
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION events_append_only();
)sql";

constexpr std::string_view kV3Postgres = R"sql(
CREATE TABLE history_series(
  id   BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE history(
  series BIGINT NOT NULL REFERENCES history_series(id),
  time   BIGINT NOT NULL,
  value  DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (series, time)
);
CREATE INDEX history_by_time ON history(time);
)sql";

// v4. Each job's history for the dashboard's job page (docs/dashboard.md): the job's events
// (submit, start, checkpoint, preempt, resize, end, ...; the same rows as `events`, whose log
// stays whole) numbered per job, at most Store's max_job_events per job (the first and the
// latest are kept), and deleted with the history's retention once the job is final
// (Batch::PruneHistory). Filled from the event log of an older file, with the same bound (128).
constexpr std::string_view kV4 = R"sql(
CREATE TABLE job_events(
  job    INTEGER NOT NULL,
  seq    INTEGER NOT NULL,
  time   INTEGER NOT NULL,
  kind   TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (job, seq)
) WITHOUT ROWID;
CREATE INDEX job_events_by_time ON job_events(time);
INSERT INTO job_events(job, seq, time, kind, detail)
  SELECT job, row_number() OVER (PARTITION BY job ORDER BY seq), time, kind, payload FROM events WHERE job != 0;
DELETE FROM job_events WHERE seq > 1 AND
  seq <= (SELECT max(seq) FROM job_events AS later WHERE later.job = job_events.job) - 127;
)sql";

// v5. Partitions (core/sched/partition.h): the partitions a job names, comma-separated (rows
// from before have '' and so run in the default partition); who drained or downed a node.
constexpr std::string_view kV5 = R"sql(
ALTER TABLE jobs ADD COLUMN partitions TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN reason_user TEXT NOT NULL DEFAULT '';
)sql";

// v6. Attained service (JobRecord::service_gpu_s, service_until): the GPU-seconds a job has held
// GPUs in its runs so far, which orders the queue under `order: attained` and survives
// preemptions; without it a restart put every job back in the first service queue. Rows from
// before v6 have 0 and 0: their service counts from the restart (Scheduler::Restore).
constexpr std::string_view kV6 = R"sql(
ALTER TABLE jobs ADD COLUMN service_gpu_s REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN service_until INTEGER NOT NULL DEFAULT 0;
)sql";

constexpr Migration kMigrations[] = {
    {1, "jobs, checkpoints, nodes, events, meta", kV1, kV1Postgres},
    {2, "launch: how to run each job (opaque, the daemon's)", kV2},
    {3, "history: sampled series for dashboards", kV3, kV3Postgres},
    {4, "job_events: each job's history, bounded", kV4},
    {5, "partitions of jobs, who set a node's state", kV5},
    {6, "attained service of jobs", kV6},
};

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The header checks of Migrate, per engine: is there a schema_version table, how many tables
// are there, and the application mark (0 when absent).
struct StoreHeader {
  int64_t app_id = 0;
  int64_t tables = 0;
  bool has_version = false;
};

Result<StoreHeader> ReadHeader(Db& db) {
  StoreHeader h;
  if (db.dialect() == Dialect::kSqlite) {
    PHX_ASSIGN_OR_RETURN(h.app_id, db.QueryInt("PRAGMA application_id"));
    PHX_ASSIGN_OR_RETURN(h.tables, db.QueryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table'"));
    PHX_ASSIGN_OR_RETURN(auto v, db.QueryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                                             "name = 'schema_version'"));
    h.has_version = v != 0;
    return h;
  }
  PHX_ASSIGN_OR_RETURN(h.tables, db.QueryInt("SELECT count(*) FROM information_schema.tables "
                                             "WHERE table_schema = current_schema()"));
  PHX_ASSIGN_OR_RETURN(auto v, db.QueryInt("SELECT count(*) FROM information_schema.tables "
                                           "WHERE table_schema = current_schema() AND table_name = 'schema_version'"));
  h.has_version = v != 0;
  if (h.has_version) {
    Result<std::string> mark = db.QueryText(
        "SELECT coalesce(obj_description(c.oid, 'pg_class'), '') FROM "
        "pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relname = 'schema_version'");
    if (!mark) return std::unexpected(mark.error());
    h.app_id = *mark == "PHLX" ? kApplicationId : 0;
  }
  return h;
}

}  // namespace

std::string PostgresSql(const Migration& m) {
  if (!m.postgres.empty()) return std::string(m.postgres);
  const std::string_view sql = m.sql;
  std::string out;
  out.reserve(sql.size() + 64);
  size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    if (c == '\'' || c == '"') {  // a quoted string or identifier, copied as it is
      const size_t end = sql.find(c, i + 1);
      const size_t stop = end == std::string_view::npos ? sql.size() : end + 1;
      out.append(sql.substr(i, stop - i));
      i = stop;
      continue;
    }
    if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {  // a comment, to the end of the line
      const size_t end = sql.find('\n', i);
      const size_t stop = end == std::string_view::npos ? sql.size() : end;
      out.append(sql.substr(i, stop - i));
      i = stop;
      continue;
    }
    if (!IsWordChar(c)) {
      out += c;
      ++i;
      continue;
    }
    size_t j = i;
    while (j < sql.size() && IsWordChar(sql[j])) ++j;
    const std::string word = Upper(sql.substr(i, j - i));
    // Look ahead for the two-word and four-word forms.
    const auto next_words = [&](size_t from, int count) {
      std::vector<std::string> words;
      size_t k = from;
      while (static_cast<int>(words.size()) < count) {
        while (k < sql.size() && std::isspace(static_cast<unsigned char>(sql[k]))) ++k;
        size_t e = k;
        while (e < sql.size() && IsWordChar(sql[e])) ++e;
        if (e == k) break;
        words.push_back(Upper(sql.substr(k, e - k)));
        k = e;
      }
      return std::make_pair(words, k);
    };
    if (word == "INTEGER") {
      auto [words, end] = next_words(j, 3);
      if (words.size() == 3 && words[0] == "PRIMARY" && words[1] == "KEY" && words[2] == "AUTOINCREMENT") {
        out += "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";
        i = end;
        continue;
      }
      out += "BIGINT";
    } else if (word == "REAL") {
      out += "DOUBLE PRECISION";
    } else if (word == "BLOB") {
      out += "BYTEA";
    } else if (word == "WITHOUT") {
      auto [words, end] = next_words(j, 1);
      if (words.size() == 1 && words[0] == "ROWID") {
        i = end;
        continue;
      }
      out.append(sql.substr(i, j - i));
    } else {
      out.append(sql.substr(i, j - i));
    }
    i = j;
  }
  return out;
}

std::span<const Migration> StoreMigrations() { return kMigrations; }
int CurrentSchemaVersion() { return kMigrations[std::size(kMigrations) - 1].version; }

Result<MigrationResult> Migrate(Db& db, std::span<const Migration> migrations) {
  const std::string& path = db.path();
  const bool pg = db.dialect() == Dialect::kPostgres;
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1)
      return Fail(path, "internal: migrations are not numbered 1..N (entry " + std::to_string(i) + " is version " +
                            std::to_string(migrations[i].version) + ")");
  }
  if (migrations.empty()) return Fail(path, "internal: no migrations");
  const int target = migrations.back().version;

  // SQLite: IMMEDIATE takes the write lock now. PostgreSQL: a transaction-scoped advisory lock
  // (released at COMMIT/ROLLBACK). Either way two processes cannot both migrate.
  const std::string begin = pg ? "BEGIN; SELECT pg_advisory_xact_lock(" + std::to_string(kApplicationId) + ")"
                               : std::string("BEGIN IMMEDIATE");
  if (auto st = db.Exec(begin); !st) return Fail(path, "not a usable store: " + st.error().message);
  const auto fail = [&db, &path](std::string message) -> Result<MigrationResult> {
    if (db.InTransaction()) (void)db.Exec("ROLLBACK");
    return Fail(path, std::move(message));
  };

  auto header = ReadHeader(db);
  if (!header) return fail("not a usable store: " + header.error().message);
  const int64_t app_id = header->app_id;
  const char* mark_name = pg ? "the schema_version comment" : "SQLite application_id";

  int64_t version = 0;
  if (!header->has_version) {
    if (app_id != 0 && app_id != kApplicationId)
      return fail("not a Phalanx store: SQLite application_id is " + std::to_string(app_id) + ", not " +
                  std::to_string(kApplicationId));
    if (header->tables != 0)
      return fail("not a Phalanx store: it has " + std::to_string(header->tables) +
                  " tables but no schema_version table");
    const std::string create =
        pg ? "CREATE TABLE schema_version(version BIGINT PRIMARY KEY, description TEXT NOT NULL);"
             "COMMENT ON TABLE schema_version IS 'PHLX'"
           : "CREATE TABLE schema_version(version INTEGER PRIMARY KEY, description TEXT NOT NULL);"
             "PRAGMA application_id = " +
                 std::to_string(kApplicationId);
    if (auto st = db.Exec(create); !st) return fail("creating the schema: " + st.error().message);
  } else {
    if (app_id != kApplicationId)
      return fail(std::string("not a Phalanx store: it has a schema_version table but ") + mark_name + " " +
                  std::to_string(app_id));
    auto v = db.QueryInt("SELECT coalesce(max(version), 0) FROM schema_version");
    if (!v) return fail("reading the schema version: " + v.error().message);
    version = *v;
  }
  if (version > target)
    return fail("schema version " + std::to_string(version) + " is newer than this build supports (" +
                std::to_string(target) + "); run a newer phalanxd, or restore a backup made by this version");

  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    const std::string sql = pg ? PostgresSql(m) : std::string(m.sql);
    if (auto st = db.Exec(sql); !st)
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
