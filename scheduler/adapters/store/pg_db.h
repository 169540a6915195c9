// PgDb: the store's Db on PostgreSQL, through libpq (built where libpq-dev is found at configure
// time: PHALANX_HAVE_POSTGRES). One connection, opened from a libpq connection string
// ("host=/run/postgresql dbname=phalanx", "postgresql://phalanx@db1/phalanx", ...).
//
// Statements: the store's ?N parameters become $N. A statement is parsed with its bound types
// (int8, float8, text, bytea) at its first run and kept as a named prepared statement from its
// second run on (one-off queries cost no extra round trip). Parameters and results travel in
// binary form; Int() reads int2/int4/int8/bool (and parses text), Real() float4/float8.
// Errors name "postgresql://HOST:PORT/DB" (never the password), the statement and the server's
// message with its SQLSTATE. last_error_fatal(): the connection is gone, or SQLSTATE class 53
// (out of resources: disk full), 58 (I/O) or XX (internal, data corrupted).
// Thread-safety: none (one thread at a time per PgDb and its Statements).
#pragma once

#include <memory>
#include <string>

#include "adapters/store/db.h"
#include "core/common/result.h"

namespace phalanx::store {

class PgDb final : public Db {
 public:
  struct Conn;
  // Connects. Fails naming the server (from the connection string) with libpq's message.
  static Result<std::unique_ptr<PgDb>> Connect(const std::string& dsn);
  ~PgDb() override;
  PgDb(const PgDb&) = delete;
  PgDb& operator=(const PgDb&) = delete;

  Status Exec(std::string_view sql) override;
  Result<Statement> Prepare(std::string_view sql) override;
  int64_t Changes() const override;
  bool InTransaction() const override;
  const std::string& path() const override;
  bool last_error_fatal() const override;
  Dialect dialect() const override { return Dialect::kPostgres; }

 private:
  explicit PgDb(std::unique_ptr<Conn> conn);
  std::unique_ptr<Conn> conn_;  // stable address for the Statements
};

// "?1 ... ?12" -> "$1 ... $12" outside quoted strings and identifiers; the highest index.
std::string PgPlaceholders(std::string_view sql, int* max_index);

}  // namespace phalanx::store
