// SqliteDb: the one place that talks to the SQLite C API. A connection (RAII) and prepared
// Statements that turn SQLite result codes into Errors naming the database file.
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

#include "core/common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace phalanx::store {

class Statement {
 public:
  Statement() = default;
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQL's ?1.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view text);
  Statement& BindBlob(int index, std::string_view bytes);  // any bytes, NULs included

  // One step: true when a row is available, false when the statement is done. An error
  // (constraint, I/O, corruption, ...) names the file and SQLite's message.
  Result<bool> Step();
  // Steps to the end, then resets; for statements that return no rows.
  Status Run();
  // Ready to run again (bindings kept until rebound).
  void Reset();

  // Columns of the current row (0-based).
  int64_t Int(int column) const;
  double Real(int column) const;
  std::string_view Text(int column) const;  // valid until the next Step/Reset
  std::string_view Blob(int column) const;  // valid until the next Step/Reset

 private:
  friend class SqliteDb;
  struct Conn;
  Statement(sqlite3_stmt* stmt, Conn* conn) : stmt_(stmt), conn_(conn) {}
  sqlite3_stmt* stmt_ = nullptr;
  Conn* conn_ = nullptr;  // owned by the SqliteDb, which outlives its statements
};

class SqliteDb {
 public:
  // Opens (and with `create`, creates) the file. `vfs` empty: SQLite's default VFS.
  // Fails when the file cannot be opened (the error names it); a file that is not a database
  // is only detected by the first read (see schema.h).
  static Result<SqliteDb> Open(const std::string& path, bool create, const std::string& vfs);

  SqliteDb(SqliteDb&& other) noexcept;
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb();  // finalises nothing: every Statement must be destroyed first

  // Runs one or more ';'-separated statements that return no rows we need.
  Status Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);
  // The single value of a one-row, one-column query (e.g. a PRAGMA), as text.
  Result<std::string> QueryText(std::string_view sql);
  Result<int64_t> QueryInt(std::string_view sql);

  int64_t Changes() const;  // rows changed by the last statement
  bool InTransaction() const;
  const std::string& path() const;
  // The result code of the last error this connection reported (0 if none yet). After I/O
  // errors and corruption (IsFatal) the file may not match what the caller believes.
  int last_error() const;
  static bool IsFatal(int rc);

 private:
  explicit SqliteDb(std::unique_ptr<Statement::Conn> conn);
  std::unique_ptr<Statement::Conn> conn_;  // stable address for the Statements
};

}  // namespace phalanx::store
