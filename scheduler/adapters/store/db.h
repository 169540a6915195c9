// Db: the small interface the store's SQL goes through, so that one Store runs on SQLite
// (sqlite_db.h, the embedded default) or PostgreSQL (pg_db.h, through libpq). A Db is one
// connection; a Statement is one prepared statement on it.
//
// The SQL the store sends is the subset both engines accept: ?N parameters (PgDb rewrites them
// to $N), INSERT ... ON CONFLICT ... DO UPDATE SET x = excluded.x, SAVEPOINT / RELEASE /
// ROLLBACK TO. The few differences (BEGIN IMMEDIATE, read snapshots, column types in
// migrations, the clock) are chosen by dialect() in schema.cc and store.cc.
//
// Contract of every implementation:
//  1. Errors are Error{where = path(), message naming the statement and the engine's message}.
//  2. Step() returns true while rows remain; a statement that fails is reset (it can be run
//     again after rebinding).
//  3. Text()/Blob() views stay valid until the next Step/Reset of that statement.
//  4. last_error_fatal(): the last error may have left the connection or the data in an unknown
//     state (SQLite: I/O, corruption, disk full; PostgreSQL: the connection is gone). The store
//     makes such an error sticky.
// Thread-safety: none. One thread at a time per Db and its Statements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::store {

enum class Dialect : uint8_t { kSqlite, kPostgres };

// What a Statement does underneath; one per engine.
class StatementImpl {
 public:
  virtual ~StatementImpl() = default;
  virtual void Bind(int index, int64_t value) = 0;
  virtual void Bind(int index, double value) = 0;
  virtual void Bind(int index, std::string_view text) = 0;
  virtual void BindBlob(int index, std::string_view bytes) = 0;
  virtual Result<bool> Step() = 0;
  virtual void Reset() = 0;
  virtual int64_t Int(int column) const = 0;
  virtual double Real(int column) const = 0;
  virtual std::string_view Text(int column) const = 0;
  virtual std::string_view Blob(int column) const = 0;
};

class Statement {
 public:
  Statement() = default;
  explicit Statement(std::unique_ptr<StatementImpl> impl) : impl_(std::move(impl)) {}
  Statement(Statement&&) noexcept = default;
  Statement& operator=(Statement&&) noexcept = default;

  // Parameters are 1-based, as in SQL's ?1.
  Statement& Bind(int index, int64_t value) {
    impl_->Bind(index, value);
    return *this;
  }
  Statement& Bind(int index, double value) {
    impl_->Bind(index, value);
    return *this;
  }
  Statement& Bind(int index, std::string_view text) {
    impl_->Bind(index, text);
    return *this;
  }
  Statement& BindBlob(int index, std::string_view bytes) {  // any bytes, NULs included
    impl_->BindBlob(index, bytes);
    return *this;
  }

  // One step: true when a row is available, false when the statement is done.
  Result<bool> Step() { return impl_->Step(); }
  // Steps to the end, then resets; for statements that return no rows.
  Status Run() {
    while (true) {
      PHX_ASSIGN_OR_RETURN(auto row, Step());
      if (!row) break;
    }
    Reset();
    return {};
  }
  // Ready to run again (bindings kept until rebound).
  void Reset() { impl_->Reset(); }

  // Columns of the current row (0-based).
  int64_t Int(int column) const { return impl_->Int(column); }
  double Real(int column) const { return impl_->Real(column); }
  std::string_view Text(int column) const { return impl_->Text(column); }
  std::string_view Blob(int column) const { return impl_->Blob(column); }

 private:
  std::unique_ptr<StatementImpl> impl_;
};

class Db {
 public:
  virtual ~Db() = default;
  // Runs one or more ';'-separated statements that return no rows we need.
  virtual Status Exec(std::string_view sql) = 0;
  virtual Result<Statement> Prepare(std::string_view sql) = 0;
  virtual int64_t Changes() const = 0;  // rows changed by the last statement
  virtual bool InTransaction() const = 0;
  // What errors name: the file (SQLite) or "postgresql://host/db" (never a password).
  virtual const std::string& path() const = 0;
  virtual bool last_error_fatal() const = 0;
  virtual Dialect dialect() const = 0;

  // The single value of a one-row, one-column query, as text or as an integer.
  Result<std::string> QueryText(std::string_view sql);
  Result<int64_t> QueryInt(std::string_view sql);
};

}  // namespace phalanx::store
