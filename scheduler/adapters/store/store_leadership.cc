// Store's leadership: the lease in meta('leader'), its epoch, and the fence every write
// transaction of a leader checks (docs/store.md, "Leadership").
#include <cstdlib>
#include <string>

#include "adapters/store/codec.h"
#include "adapters/store/store.h"
#include "adapters/store/store_statements.h"

namespace phalanx::store {
namespace {

using detail::kLeaderKey;
using detail::kMaxJobId;
using detail::kNextJobIdKey;
constexpr size_t kMaxHolder = 200;

// meta('leader'): "EPOCH EXPIRES_MS HOLDER".
std::string EncodeLease(const LeaderLease& l) {
  return std::to_string(l.epoch) + " " + std::to_string(l.expires_ms) + " " + l.holder;
}

std::optional<LeaderLease> DecodeLease(std::string_view v) {
  LeaderLease l;
  const size_t a = v.find(' ');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = v.find(' ', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  char* end = nullptr;
  const std::string epoch(v.substr(0, a)), expires(v.substr(a + 1, b - a - 1));
  l.epoch = std::strtoull(epoch.c_str(), &end, 10);
  if (epoch.empty() || *end != '\0') return std::nullopt;
  l.expires_ms = std::strtoll(expires.c_str(), &end, 10);
  if (expires.empty() || *end != '\0') return std::nullopt;
  l.holder = std::string(v.substr(b + 1));
  return l;
}

}  // namespace

// ---- leadership ------------------------------------------------------------------------------

Result<int64_t> Store::DbNowMs() {
  Statement& q = stmts_->db_now;
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  const int64_t now = row ? q.Int(0) : 0;
  q.Reset();
  if (!row) return Fail(path(), "the database's clock returned no row");
  return now;
}

Result<LeaderLease> Store::LockLease(bool* found) {
  Statement& q = stmts_->lease_update;
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  LeaderLease lease;
  *found = row;
  if (row) {
    const std::string value(q.Text(0));
    q.Reset();
    auto decoded = DecodeLease(value);
    if (!decoded) return Fail(path(), "meta 'leader' is malformed: '" + Escape(value) + "'");
    lease = std::move(*decoded);
  } else {
    q.Reset();
  }
  PHX_ASSIGN_OR_RETURN(lease.now_ms, DbNowMs());
  return lease;
}

Status Store::WriteLease(const LeaderLease& lease) {
  Statement& u = stmts_->upsert_meta;
  u.Bind(1, kLeaderKey).Bind(2, EncodeLease(lease));
  return Run(u);
}

Status Store::Fence(bool for_update) {
  if (epoch_ == 0) return {};
  Statement& q = for_update ? stmts_->lease_update : stmts_->lease_share;
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  const std::string value = row ? std::string(q.Text(0)) : std::string();
  q.Reset();
  auto lease = DecodeLease(value);
  if (lease && lease->epoch == epoch_ && lease->holder == holder_) return {};
  deposed_ = true;
  const std::string now = lease ? "epoch " + std::to_string(lease->epoch) + " (" + Escape(lease->holder) + ")"
                                : std::string("no valid lease");
  deposed_why_ = "deposed: this store led epoch " + std::to_string(epoch_) + " but the store now records " + now;
  return Fail(path(), deposed_why_ + "; the write is refused (fencing)");
}

// A leader stopped inside a write transaction (SIGSTOP, a hung host) holds the lease row's lock:
// a takeover's SELECT ... FOR UPDATE would wait for as long as it stays stopped. On PostgreSQL
// the server can end such a session: unless the site set idle_in_transaction_session_timeout
// itself (dsn options, role or server), this session's is the lease, so a takeover waits at most
// about one lease for a stopped leader's lock. The stopped leader then finds its connection
// gone and exits (a failed commit is fatal). SQLite has no sessions to end: its lock file keeps
// a second daemon out.
Status Store::BoundIdleTransactions(int64_t lease_ms) {
  if (idle_timeout_checked_ || db_->dialect() != Dialect::kPostgres) return {};
  PHX_ASSIGN_OR_RETURN(auto current, IdleTransactionTimeoutMs());
  if (current == 0) PHX_RETURN_IF_ERROR(Exec("SET idle_in_transaction_session_timeout = " + std::to_string(lease_ms)));
  idle_timeout_checked_ = true;
  return {};
}

Result<int64_t> Store::IdleTransactionTimeoutMs() {
  if (db_->dialect() != Dialect::kPostgres) return 0;
  PHX_ASSIGN_OR_RETURN(auto q, db_->Prepare("SELECT setting FROM pg_settings WHERE name = "
                                            "'idle_in_transaction_session_timeout'"));
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  const std::string setting = row ? std::string(q.Text(0)) : std::string("0");
  q.Reset();
  char* end = nullptr;
  const long long ms = std::strtoll(setting.c_str(), &end, 10);
  if (setting.empty() || *end != '\0' || ms < 0)
    return Fail(path(), "idle_in_transaction_session_timeout reads '" + Escape(setting) + "', not milliseconds");
  return static_cast<int64_t>(ms);
}

Result<LeaderLease> Store::AcquireLeadership(std::string_view holder, int64_t lease_ms) {
  if (holder.empty() || holder.size() > kMaxHolder ||
      std::any_of(holder.begin(), holder.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    return Fail(path(), "leadership: holder '" + Escape(holder) + "' must be 1.." + std::to_string(kMaxHolder) +
                            " printable bytes");
  if (lease_ms <= 0) return Fail(path(), "leadership: lease " + std::to_string(lease_ms) + " ms must be > 0");
  if (sticky_) return std::unexpected(CheckWritable().error());
  PHX_RETURN_IF_ERROR(BoundIdleTransactions(lease_ms));
  Statements& s = *stmts_;
  const auto abort = [&](const Error& e) -> Result<LeaderLease> {
    if (db_->InTransaction()) (void)s.rollback.Run();
    return std::unexpected(e);
  };
  if (auto st = Run(s.begin); !st) return abort(st.error());
  bool found = false;
  auto lease = LockLease(&found);
  if (!lease) return abort(lease.error());
  LeaderLease next;
  next.holder = std::string(holder);
  next.now_ms = lease->now_ms;
  next.expires_ms = lease->now_ms + lease_ms;
  if (!found) {
    next.epoch = 1;
    Statement& ins = s.insert_lease;
    ins.Bind(1, EncodeLease(next));
    if (auto st = Run(ins); !st) return abort(st.error());
    if (db_->Changes() == 0) return abort(Error{path(), "leadership: another store took the lease first; try again"});
  } else {
    const bool mine = epoch_ != 0 && !deposed_ && lease->epoch == epoch_ && lease->holder == holder_;
    if (mine) {
      next.epoch = epoch_;
    } else if (lease->expires_ms > lease->now_ms) {
      return abort(Error{path(), "leadership: held by " + Escape(lease->holder) + " (epoch " +
                                     std::to_string(lease->epoch) + ") for another " +
                                     std::to_string(lease->expires_ms - lease->now_ms) + " ms"});
    } else {
      next.epoch = lease->epoch + 1;
    }
    if (auto st = WriteLease(next); !st) return abort(st.error());
  }
  // The previous leader may have moved the id counter since this Store opened.
  Statement& meta = s.select_meta;
  meta.Bind(1, kNextJobIdKey);
  auto row = meta.Step();
  if (!row) return abort(row.error());
  const int64_t next_id = *row ? meta.Int(0) : 0;
  meta.Reset();
  if (next_id < 1 || static_cast<uint64_t>(next_id) > kMaxJobId + 1)
    return abort(Error{path(), "meta next_job_id is missing or invalid (" + std::to_string(next_id) + ")"});
  if (auto st = Run(s.commit); !st) return abort(st.error());
  next_id_ = static_cast<JobId>(next_id);
  epoch_ = next.epoch;
  holder_ = next.holder;
  deposed_ = false;
  return next;
}

Result<LeaderLease> Store::RenewLeadership(int64_t lease_ms) {
  if (epoch_ == 0) return Fail(path(), "leadership: this store does not lead (AcquireLeadership first)");
  if (lease_ms <= 0) return Fail(path(), "leadership: lease " + std::to_string(lease_ms) + " ms must be > 0");
  PHX_RETURN_IF_ERROR(CheckWritable());
  Statements& s = *stmts_;
  const auto abort = [&](const Error& e) -> Result<LeaderLease> {
    if (db_->InTransaction()) (void)s.rollback.Run();
    return std::unexpected(e);
  };
  if (auto st = Run(s.begin); !st) return abort(st.error());
  bool found = false;
  auto lease = LockLease(&found);
  if (!lease) return abort(lease.error());
  if (!found || lease->epoch != epoch_ || lease->holder != holder_) {
    deposed_ = true;
    deposed_why_ =
        "deposed: this store led epoch " + std::to_string(epoch_) +
        (found ? " but the store now records epoch " + std::to_string(lease->epoch) + " (" + Escape(lease->holder) + ")"
               : std::string(" but the lease is gone"));
    return abort(Error{path(), deposed_why_ + "; renewal refused"});
  }
  LeaderLease next = *lease;
  next.expires_ms = lease->now_ms + lease_ms;
  if (auto st = WriteLease(next); !st) return abort(st.error());
  if (auto st = Run(s.commit); !st) return abort(st.error());
  return next;
}

Status Store::ResignLeadership() {
  if (epoch_ == 0) return {};
  Statements& s = *stmts_;
  const auto abort = [&](const Error& e) -> Status {
    if (db_->InTransaction()) (void)s.rollback.Run();
    return std::unexpected(e);
  };
  if (auto st = Run(s.begin); !st) return abort(st.error());
  bool found = false;
  auto lease = LockLease(&found);
  if (!lease) return abort(lease.error());
  if (found && lease->epoch == epoch_ && lease->holder == holder_) {
    LeaderLease ended = *lease;
    ended.expires_ms = 0;
    if (auto st = WriteLease(ended); !st) return abort(st.error());
  }
  if (auto st = Run(s.commit); !st) return abort(st.error());
  deposed_ = true;  // no more writes as leader
  deposed_why_ = "this store resigned the leadership of epoch " + std::to_string(epoch_);
  return {};
}

Result<std::optional<LeaderLease>> Store::ReadLeader() {
  Statement& q = stmts_->select_meta;
  q.Bind(1, kLeaderKey);
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  const std::string value = row ? std::string(q.Text(0)) : std::string();
  q.Reset();
  if (!row) return std::optional<LeaderLease>();
  auto lease = DecodeLease(value);
  if (!lease) return Fail(path(), "meta 'leader' is malformed: '" + Escape(value) + "'");
  PHX_ASSIGN_OR_RETURN(lease->now_ms, DbNowMs());
  return std::optional<LeaderLease>(std::move(*lease));
}

}  // namespace phalanx::store
