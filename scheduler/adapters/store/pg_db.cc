#include "adapters/store/pg_db.h"

#include <libpq-fe.h>

#include <bit>
#include <cstring>
#include <vector>

namespace phalanx::store {
namespace {

// Type OIDs (pg_type.dat); stable across releases.
constexpr Oid kBoolOid = 16, kByteaOid = 17, kInt8Oid = 20, kInt2Oid = 21, kInt4Oid = 23, kTextOid = 25,
              kFloat4Oid = 700, kFloat8Oid = 701;

uint64_t LoadBe(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string Be64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
  return out;
}

std::string Trimmed(const char* msg) {
  std::string s = msg != nullptr ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

struct PgDb::Conn {
  PGconn* pg = nullptr;
  std::string path;
  int64_t changes = 0;
  bool fatal = false;  // the last error
  uint64_t next_name = 0;

  Error MakeError(std::string_view what, const PGresult* res) {
    std::string msg(what);
    msg += ": ";
    const char* state = res != nullptr ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    std::string detail = res != nullptr ? Trimmed(PQresultErrorMessage(res)) : "";
    if (detail.empty()) detail = Trimmed(PQerrorMessage(pg));
    if (detail.empty()) detail = "unknown error";
    msg += detail;
    if (state != nullptr) msg += std::string(" (SQLSTATE ") + state + ")";
    fatal = PQstatus(pg) != CONNECTION_OK ||
            (state != nullptr && (std::strncmp(state, "53", 2) == 0 || std::strncmp(state, "58", 2) == 0 ||
                                  std::strncmp(state, "XX", 2) == 0 || std::strncmp(state, "08", 2) == 0));
    return Error{path, std::move(msg)};
  }
};

std::string PgPlaceholders(std::string_view sql, int* max_index) {
  std::string out;
  out.reserve(sql.size());
  int max = 0;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote != 0) {
      if (c == quote) quote = 0;  // a doubled quote reopens at once: same result
      out += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c == '?' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      int n = 0;
      out += '$';
      while (i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
        n = n * 10 + (sql[i + 1] - '0');
        out += sql[++i];
      }
      max = std::max(max, n);
      continue;
    }
    out += c;
  }
  if (max_index != nullptr) *max_index = max;
  return out;
}

namespace {

class PgStatement final : public StatementImpl {
 public:
  PgStatement(PgDb::Conn* conn, std::string sql, int params)
      : conn_(conn),
        sql_(std::move(sql)),
        types_(static_cast<size_t>(params), kTextOid),
        values_(static_cast<size_t>(params)) {}
  ~PgStatement() override { PQclear(res_); }
  PgStatement(const PgStatement&) = delete;
  PgStatement& operator=(const PgStatement&) = delete;

  void Bind(int index, int64_t value) override { Set(index, kInt8Oid, Be64(static_cast<uint64_t>(value))); }
  void Bind(int index, double value) override { Set(index, kFloat8Oid, Be64(std::bit_cast<uint64_t>(value))); }
  void Bind(int index, std::string_view text) override { Set(index, kTextOid, std::string(text)); }
  void BindBlob(int index, std::string_view bytes) override { Set(index, kByteaOid, std::string(bytes)); }

  Result<bool> Step() override {
    if (res_ == nullptr) {
      if (auto st = Execute(); !st) return std::unexpected(st.error());
      row_ = -1;
    }
    if (++row_ < PQntuples(res_)) return true;
    return false;
  }
  void Reset() override {
    PQclear(res_);
    res_ = nullptr;
    row_ = -1;
  }

  int64_t Int(int column) const override {
    if (PQgetisnull(res_, row_, column)) return 0;
    const char* p = PQgetvalue(res_, row_, column);
    const int n = PQgetlength(res_, row_, column);
    switch (PQftype(res_, column)) {
      case kInt8Oid: return static_cast<int64_t>(LoadBe(p, 8));
      case kInt4Oid: return static_cast<int32_t>(static_cast<uint32_t>(LoadBe(p, 4)));
      case kInt2Oid: return static_cast<int16_t>(static_cast<uint16_t>(LoadBe(p, 2)));
      case kBoolOid: return n > 0 && p[0] != 0;
      case kFloat8Oid: return static_cast<int64_t>(Real(column));
      default: return std::strtoll(std::string(p, static_cast<size_t>(n)).c_str(), nullptr, 10);
    }
  }
  double Real(int column) const override {
    if (PQgetisnull(res_, row_, column)) return 0;
    const char* p = PQgetvalue(res_, row_, column);
    switch (PQftype(res_, column)) {
      case kFloat8Oid: return std::bit_cast<double>(LoadBe(p, 8));
      case kFloat4Oid: return std::bit_cast<float>(static_cast<uint32_t>(LoadBe(p, 4)));
      default: return static_cast<double>(Int(column));
    }
  }
  std::string_view Text(int column) const override {
    if (PQgetisnull(res_, row_, column)) return {};
    return std::string_view(PQgetvalue(res_, row_, column), static_cast<size_t>(PQgetlength(res_, row_, column)));
  }
  std::string_view Blob(int column) const override { return Text(column); }

 private:
  void Set(int index, Oid type, std::string value) {
    const auto i = static_cast<size_t>(index - 1);
    if (i >= values_.size()) return;  // no such parameter: the server reports the count mismatch
    if (types_[i] != type) {
      types_[i] = type;
      prepared_.clear();  // parsed with other types: parse again
    }
    values_[i] = std::move(value);
  }

  Status Execute() {
    std::vector<const char*> values(values_.size());
    std::vector<int> lengths(values_.size()), formats(values_.size(), 1);
    for (size_t i = 0; i < values_.size(); ++i) {
      values[i] = values_[i].data();
      lengths[i] = static_cast<int>(values_[i].size());
    }
    const int n = static_cast<int>(values_.size());
    ++runs_;
    PGresult* res = nullptr;
    if (prepared_.empty() && runs_ >= 2) {
      // Run again: worth a named prepared statement.
      std::string name = "phx_" + std::to_string(++conn_->next_name);
      PGresult* prep = PQprepare(conn_->pg, name.c_str(), sql_.c_str(), n, types_.data());
      if (PQresultStatus(prep) != PGRES_COMMAND_OK) {
        Error e = conn_->MakeError("preparing '" + sql_.substr(0, 60) + "'", prep);
        PQclear(prep);
        return std::unexpected(std::move(e));
      }
      PQclear(prep);
      prepared_ = std::move(name);
    }
    if (!prepared_.empty()) {
      res = PQexecPrepared(conn_->pg, prepared_.c_str(), n, values.data(), lengths.data(), formats.data(), 1);
    } else {
      res = PQexecParams(conn_->pg, sql_.c_str(), n, types_.data(), values.data(), lengths.data(), formats.data(), 1);
    }
    const ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      Error e = conn_->MakeError("'" + sql_.substr(0, 60) + "'", res);
      PQclear(res);
      return std::unexpected(std::move(e));
    }
    // COMMIT of a transaction that had failed "succeeds" as a ROLLBACK: that is a failure here.
    if (sql_ == "COMMIT" && std::strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
      PQclear(res);
      conn_->fatal = false;
      return Fail(conn_->path, "'COMMIT': the transaction had failed and was rolled back");
    }
    const char* tuples = PQcmdTuples(res);
    conn_->changes = tuples != nullptr && *tuples != '\0' ? std::strtoll(tuples, nullptr, 10) : 0;
    res_ = res;
    return {};
  }

  PgDb::Conn* conn_;  // owned by the PgDb, which outlives its statements
  std::string sql_;
  std::vector<Oid> types_;
  std::vector<std::string> values_;
  std::string prepared_;  // the server-side name, once prepared
  uint64_t runs_ = 0;
  PGresult* res_ = nullptr;
  int row_ = -1;
};

void IgnoreNotice(void*, const char*) {}

}  // namespace

Result<std::unique_ptr<PgDb>> PgDb::Connect(const std::string& dsn) {
  auto conn = std::make_unique<Conn>();
  conn->pg = PQconnectdb(dsn.c_str());
  if (conn->pg == nullptr) return Fail("postgresql", "out of memory connecting");
  {
    // Name the server without the password: host (or socket directory), port, database.
    const char* host = PQhost(conn->pg);
    const char* port = PQport(conn->pg);
    const char* db = PQdb(conn->pg);
    conn->path = std::string("postgresql://") + (host != nullptr ? host : "") + ":" + (port != nullptr ? port : "") +
                 "/" + (db != nullptr ? db : "");
  }
  if (PQstatus(conn->pg) != CONNECTION_OK) {
    Error e{conn->path, "cannot connect: " + Trimmed(PQerrorMessage(conn->pg))};
    PQfinish(conn->pg);
    conn->pg = nullptr;
    return std::unexpected(std::move(e));
  }
  PQsetNoticeProcessor(conn->pg, IgnoreNotice, nullptr);
  return std::unique_ptr<PgDb>(new PgDb(std::move(conn)));
}

PgDb::PgDb(std::unique_ptr<Conn> conn) : conn_(std::move(conn)) {}

PgDb::~PgDb() {
  if (conn_ && conn_->pg != nullptr) PQfinish(conn_->pg);
}

Status PgDb::Exec(std::string_view sql) {
  const std::string text(sql);
  PGresult* res = PQexec(conn_->pg, text.c_str());
  const ExecStatusType status = PQresultStatus(res);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    Error e = conn_->MakeError("'" + text.substr(0, 60) + "'", res);
    PQclear(res);
    return std::unexpected(std::move(e));
  }
  if (text == "COMMIT" && std::strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
    PQclear(res);
    conn_->fatal = false;
    return Fail(conn_->path, "'COMMIT': the transaction had failed and was rolled back");
  }
  PQclear(res);
  return {};
}

Result<Statement> PgDb::Prepare(std::string_view sql) {
  int params = 0;
  std::string text = PgPlaceholders(sql, &params);
  return Statement(std::make_unique<PgStatement>(conn_.get(), std::move(text), params));
}

int64_t PgDb::Changes() const { return conn_->changes; }
bool PgDb::InTransaction() const {
  const PGTransactionStatusType t = PQtransactionStatus(conn_->pg);
  return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}
const std::string& PgDb::path() const { return conn_->path; }
bool PgDb::last_error_fatal() const { return conn_->fatal; }

}  // namespace phalanx::store
