// The store's schema and its ordered migrations.
//
// A store file carries application_id 0x50484C58 ("PHLX") in its header and a
// `schema_version(version, description)` table with one row per migration applied. Opening
// applies every missing migration, in order, in ONE transaction (all or nothing), and refuses a
// file whose version is newer than this build knows, a SQLite file of another application, and
// a file that is not a database -- each with an Error naming the file.
//
// To change the schema: append a Migration with the next version; never edit a released one.
// Thread-safety: functions over one SqliteDb; same rules as SqliteDb.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "adapters/store/sqlite_db.h"
#include "core/common/result.h"

namespace phalanx::store {

inline constexpr int32_t kApplicationId = 0x50484C58;  // "PHLX"

struct Migration {
  int version;                   // 1, 2, 3, ... without gaps
  std::string_view description;  // recorded in schema_version
  std::string_view sql;          // any number of statements
};

// The store's migrations; the last one's version is the current schema version.
std::span<const Migration> StoreMigrations();
int CurrentSchemaVersion();

struct MigrationResult {
  int from = 0;  // 0: the file was empty
  int to = 0;
};

// Brings `db` to the last version of `migrations` (in one IMMEDIATE transaction).
// Fails, leaving the file unchanged, when: the file is not a database; it is a SQLite database
// of another application (foreign application_id, or tables without schema_version); its
// version is newer than the last migration; `migrations` is not 1..N without gaps; or a
// migration's SQL fails.
Result<MigrationResult> Migrate(SqliteDb& db, std::span<const Migration> migrations);

}  // namespace phalanx::store
