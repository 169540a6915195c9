// SqliteDb: the one place that talks to the SQLite C API. A connection (RAII) and prepared
// statements (db.h's Statement) that turn SQLite result codes into Errors naming the database
// file.
//
// Everything above this file (schema, store) sees Status/Result, never an sqlite3 pointer.
// The VFS is chosen at open: tests pass the name of a fault-injecting VFS (LevelDB's
// fault_injection_test idea, with SQLite's VFS as the injectable I/O interface).
// Thread-safety: none. One thread at a time per SqliteDb and its Statements (the store's
// owner serialises; SQLite itself is built thread-safe, so distinct connections may be used
// from distinct threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/store/db.h"
#include "core/common/result.h"

namespace phalanx::store {

class SqliteDb final : public Db {
 public:
  struct Conn;
  // Opens (and with `create`, creates) the file. `vfs` empty: SQLite's default VFS.
  // Fails when the file cannot be opened (the error names it); a file that is not a database
  // is only detected by the first read (see schema.h).
  static Result<SqliteDb> Open(const std::string& path, bool create, const std::string& vfs);

  SqliteDb(SqliteDb&& other) noexcept;
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb() override;  // finalises nothing: every Statement must be destroyed first

  Status Exec(std::string_view sql) override;
  Result<Statement> Prepare(std::string_view sql) override;
  int64_t Changes() const override;
  bool InTransaction() const override;
  const std::string& path() const override;
  bool last_error_fatal() const override { return IsFatal(last_error()); }
  Dialect dialect() const override { return Dialect::kSqlite; }

  // The result code of the last error this connection reported (0 if none yet). After I/O
  // errors and corruption (IsFatal) the file may not match what the caller believes.
  int last_error() const;
  static bool IsFatal(int rc);

 private:
  explicit SqliteDb(std::unique_ptr<Conn> conn);
  std::unique_ptr<Conn> conn_;  // stable address for the Statements
};

}  // namespace phalanx::store
