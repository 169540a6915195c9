#include "adapters/store/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

namespace phalanx::store {

struct SqliteDb::Conn {
  sqlite3* db = nullptr;
  std::string path;
  int last_error = 0;

  Error MakeError(int rc, std::string_view what) {
    last_error = rc;
    std::string msg(what);
    msg += ": ";
    // sqlite3_errmsg describes the connection's last error; fall back to the code's text.
    const char* detail = db != nullptr && sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    msg += detail != nullptr ? detail : "unknown error";
    msg += " (SQLite code " + std::to_string(rc) + ")";
    return Error{path, std::move(msg)};
  }
};

namespace {

class SqliteStatement final : public StatementImpl {
 public:
  SqliteStatement(sqlite3_stmt* stmt, SqliteDb::Conn* conn) : stmt_(stmt), conn_(conn) {}
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  void Bind(int index, int64_t value) override { sqlite3_bind_int64(stmt_, index, value); }
  void Bind(int index, double value) override { sqlite3_bind_double(stmt_, index, value); }
  void Bind(int index, std::string_view text) override {
    // An empty view may have a null data(), which SQLite would bind as NULL.
    sqlite3_bind_text64(stmt_, index, text.data() != nullptr ? text.data() : "", text.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
  }
  void BindBlob(int index, std::string_view bytes) override {
    sqlite3_bind_blob64(stmt_, index, bytes.data() != nullptr ? bytes.data() : "", bytes.size(), SQLITE_TRANSIENT);
  }
  Result<bool> Step() override {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    Error e = conn_->MakeError(rc, std::string("'") + sqlite3_sql(stmt_) + "'");
    sqlite3_reset(stmt_);
    return std::unexpected(std::move(e));
  }
  void Reset() override { sqlite3_reset(stmt_); }
  int64_t Int(int column) const override { return sqlite3_column_int64(stmt_, column); }
  double Real(int column) const override { return sqlite3_column_double(stmt_, column); }
  std::string_view Text(int column) const override {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    if (p == nullptr) return {};
    return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  std::string_view Blob(int column) const override {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
    if (p == nullptr) return {};
    return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  sqlite3_stmt* stmt_;
  SqliteDb::Conn* conn_;  // owned by the SqliteDb, which outlives its statements
};

}  // namespace

Result<SqliteDb> SqliteDb::Open(const std::string& path, bool create, const std::string& vfs) {
  auto conn = std::make_unique<Conn>();
  conn->path = path;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (create) flags |= SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(path.c_str(), &conn->db, flags, vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    Error e = conn->MakeError(rc, "cannot open");
    sqlite3_close(conn->db);
    conn->db = nullptr;
    return std::unexpected(std::move(e));
  }
  sqlite3_extended_result_codes(conn->db, 1);
  return SqliteDb(std::move(conn));
}

SqliteDb::SqliteDb(std::unique_ptr<Conn> conn) : conn_(std::move(conn)) {}
SqliteDb::SqliteDb(SqliteDb&& other) noexcept = default;
SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    if (conn_) sqlite3_close_v2(conn_->db);
    conn_ = std::move(other.conn_);
  }
  return *this;
}

SqliteDb::~SqliteDb() {
  // _v2: a statement still alive keeps the connection as a zombie until it is finalised.
  // The last close of a WAL database checkpoints it and removes the -wal and -shm files.
  if (conn_) sqlite3_close_v2(conn_->db);
}

Status SqliteDb::Exec(std::string_view sql) {
  const std::string text(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(conn_->db, text.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return std::unexpected(conn_->MakeError(rc, "'" + text.substr(0, 60) + "'"));
  return {};
}

Result<Statement> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(conn_->db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                                    &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return std::unexpected(conn_->MakeError(rc, "preparing '" + std::string(sql.substr(0, 60)) + "'"));
  }
  return Statement(std::make_unique<SqliteStatement>(stmt, conn_.get()));
}

int64_t SqliteDb::Changes() const { return sqlite3_changes64(conn_->db); }
bool SqliteDb::InTransaction() const { return sqlite3_get_autocommit(conn_->db) == 0; }
const std::string& SqliteDb::path() const { return conn_->path; }
int SqliteDb::last_error() const { return conn_->last_error; }

bool SqliteDb::IsFatal(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_IOERR || primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB ||
         primary == SQLITE_CANTOPEN || primary == SQLITE_FULL;
}

}  // namespace phalanx::store
