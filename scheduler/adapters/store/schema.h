// The store's schema and its ordered migrations.
//
// A store carries a `schema_version(version, description)` table with one row per migration
// applied, and a mark of its application: SQLite's application_id 0x50484C58 ("PHLX") in the
// file header, or on PostgreSQL the comment 'PHLX' on schema_version (the store lives in the
// connection's current schema). Opening applies every missing migration, in order, in ONE
// transaction (all or nothing), and refuses a store whose version is newer than this build
// knows, a database of another application, and a file that is not a database -- each with an
// Error naming the file (or the server and database).
//
// To change the schema: append a Migration with the next version; never edit a released one.
// Its `sql` is written once for both engines, in the portable subset (docs/store.md,
// "Migrations on both backends"): on PostgreSQL the column types INTEGER, REAL and BLOB become
// BIGINT, DOUBLE PRECISION and BYTEA, `INTEGER PRIMARY KEY AUTOINCREMENT` an identity column,
// and `WITHOUT ROWID` is dropped (PostgresSql()). What cannot be said that way (triggers, say)
// goes in `postgres`, which then replaces `sql` there.
// Thread-safety: functions over one Db; same rules as Db.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "adapters/store/db.h"
#include "core/common/result.h"

namespace phalanx::store {

inline constexpr int32_t kApplicationId = 0x50484C58;  // "PHLX"

struct Migration {
  int version;                   // 1, 2, 3, ... without gaps
  std::string_view description;  // recorded in schema_version
  std::string_view sql;          // any number of statements (both engines, see above)
  std::string_view postgres{};   // non-empty: PostgreSQL runs this instead of PostgresSql(sql)
};

// A migration's SQL as PostgreSQL runs it: `postgres` if given, else `sql` with the type words
// mapped (outside quotes and comments; case-insensitive, whole words).
std::string PostgresSql(const Migration& m);

// The store's migrations; the last one's version is the current schema version.
std::span<const Migration> StoreMigrations();
int CurrentSchemaVersion();

struct MigrationResult {
  int from = 0;  // 0: the file was empty
  int to = 0;
};

// Brings `db` to the last version of `migrations` (in one transaction: SQLite's BEGIN
// IMMEDIATE, or on PostgreSQL a transaction holding an advisory lock, so that two processes
// cannot both migrate). Fails, leaving the store unchanged, when: the file is not a database;
// it is a database of another application (foreign application_id / comment, or tables
// without schema_version); its version is newer than the last migration; `migrations` is not
// 1..N without gaps; or a migration's SQL fails.
Result<MigrationResult> Migrate(Db& db, std::span<const Migration> migrations);

}  // namespace phalanx::store
