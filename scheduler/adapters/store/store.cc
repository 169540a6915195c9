#include "adapters/store/store.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "adapters/store/codec.h"
#include "adapters/store/schema.h"
#include "adapters/store/sqlite_db.h"
#include "adapters/store/store_statements.h"
#ifdef PHALANX_HAVE_POSTGRES
#include "adapters/store/pg_db.h"
#endif

namespace phalanx::store {
namespace {

using detail::kJobColumns;
using detail::kLeaderKey;
using detail::kMaxJobId;
using detail::kNextJobIdKey;

constexpr size_t kMaxSeriesName = 200;

std::string JobWhere(JobId id) { return "job " + std::to_string(id); }

// A job's partitions in their column: "a,b" ('' for none: the default partition). Partition
// names have no commas (PartitionTable::Build refuses them).
std::string JoinPartitions(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}
std::vector<std::string> SplitPartitions(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

std::optional<Backend> ParseBackend(std::string_view name) {
  if (name == "sqlite") return Backend::kSqlite;
  if (name == "postgresql") return Backend::kPostgres;
  return std::nullopt;
}

bool PostgresBuilt() {
#ifdef PHALANX_HAVE_POSTGRES
  return true;
#else
  return false;
#endif
}

// ---- Batch -----------------------------------------------------------------------------------

void Batch::SubmitJob(JobSpec spec, Time now) { ops_.emplace_back(Submit{std::move(spec), now}); }
void Batch::SaveJobState(const JobRecord& job) { ops_.emplace_back(Save{job}); }
void Batch::RecordDecision(const Decision& d) {
  ops_.emplace_back(Event{d.at, std::string(DecisionKindName(d.kind)), d.job, EncodeDecisionPayload(d)});
}
void Batch::RecordEvent(Time time, std::string kind, JobId job, std::string payload) {
  ops_.emplace_back(Event{time, std::move(kind), job, std::move(payload)});
}
void Batch::RecordCheckpoint(JobId job, uint64_t epoch, Time time, std::string path) {
  ops_.emplace_back(Checkpoint{job, epoch, time, std::move(path)});
}
void Batch::SetNodeState(std::string name, NodeState state, Time now, std::string reason, std::string user) {
  ops_.emplace_back(Node{std::move(name), state, now, std::move(reason), std::move(user)});
}
void Batch::SetMeta(std::string key, std::string value) { ops_.emplace_back(Meta{std::move(key), std::move(value)}); }
void Batch::SetLaunchInfo(JobId job, std::string info) { ops_.emplace_back(Launch{job, std::move(info)}); }
void Batch::RecordSamples(Time time, std::vector<std::pair<std::string, double>> samples) {
  ops_.emplace_back(Samples{time, std::move(samples)});
}
void Batch::PruneHistory(Time before) { ops_.emplace_back(Prune{before}); }
void Batch::RenewLeadership(int64_t lease_ms) { ops_.emplace_back(Renew{lease_ms}); }

// ---- Open ------------------------------------------------------------------------------------

namespace {

Result<std::unique_ptr<Db>> OpenSqlite(const std::string& path, const StoreOptions& options) {
  PHX_ASSIGN_OR_RETURN(auto opened, SqliteDb::Open(path, options.create_if_missing, options.vfs));
  auto db = std::make_unique<SqliteDb>(std::move(opened));
  PHX_RETURN_IF_ERROR(db->Exec("PRAGMA busy_timeout = " + std::to_string(options.busy_timeout_ms)));
  // Migrate first: it refuses foreign and newer files before anything below changes them.
  PHX_RETURN_IF_ERROR(Migrate(*db, StoreMigrations()));
  // WAL is persistent in the file; NORMAL/FULL and foreign keys are per connection.
  PHX_ASSIGN_OR_RETURN(auto mode, db->QueryText("PRAGMA journal_mode = WAL"));
  if (mode != "wal") return Fail(path, "cannot switch to WAL mode (journal_mode is '" + mode + "')");
  const char* sync = options.sync == SyncMode::kFull ? "FULL" : "NORMAL";
  PHX_RETURN_IF_ERROR(db->Exec(std::string("PRAGMA synchronous = ") + sync + "; PRAGMA foreign_keys = ON"));
  if (options.verify_on_open) {
    PHX_ASSIGN_OR_RETURN(auto check, db->QueryText("PRAGMA quick_check"));
    if (check != "ok") return Fail(path, "quick_check failed: " + check);
  }
  return std::unique_ptr<Db>(std::move(db));
}

Result<std::unique_ptr<Db>> OpenPostgres(const std::string& dsn, const StoreOptions& options) {
#ifdef PHALANX_HAVE_POSTGRES
  PHX_ASSIGN_OR_RETURN(auto db, PgDb::Connect(dsn));
  PHX_RETURN_IF_ERROR(db->Exec("SET lock_timeout = " + std::to_string(options.busy_timeout_ms)));
  PHX_RETURN_IF_ERROR(Migrate(*db, StoreMigrations()));
  return std::unique_ptr<Db>(std::move(db));
#else
  (void)dsn;
  (void)options;
  return Fail("store.backend",
              "postgresql: this build has no PostgreSQL backend (libpq-dev was not found when it "
              "was configured); use backend: sqlite, or rebuild with libpq-dev installed");
#endif
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& target, const StoreOptions& options) {
  const std::string& path = target;
  PHX_ASSIGN_OR_RETURN(
      auto db, options.backend == Backend::kPostgres ? OpenPostgres(target, options) : OpenSqlite(target, options));
  PHX_ASSIGN_OR_RETURN(auto stmts, Statements::Prepare(*db));
  // The counter.
  Statement& meta = stmts->select_meta;
  meta.Bind(1, kNextJobIdKey);
  PHX_ASSIGN_OR_RETURN(auto row, meta.Step());
  const int64_t next = row ? meta.Int(0) : 0;
  meta.Reset();
  if (next < 1 || static_cast<uint64_t>(next) > kMaxJobId + 1)
    return Fail(db->path(), "meta next_job_id is missing or invalid (" + std::to_string(next) + ")");
  if (options.max_job_events < 2)
    return Fail(db->path(), "max_job_events: " + std::to_string(options.max_job_events) +
                                " (at least 2: the first and the latest)");
  (void)path;
  return std::unique_ptr<Store>(
      new Store(std::move(db), std::move(stmts), static_cast<JobId>(next), options.max_job_events));
}

Store::Store(std::unique_ptr<Db> db, std::unique_ptr<Statements> stmts, JobId next_id, size_t max_job_events)
    : db_(std::move(db)), stmts_(std::move(stmts)), next_id_(next_id), max_job_events_(max_job_events) {}

Store::~Store() = default;

// ---- writes ----------------------------------------------------------------------------------

Status Store::CheckWritable() const {
  if (sticky_) return Fail(path(), "the store stopped writing after an earlier error (reopen it): " + sticky_->message);
  if (deposed_) return Fail(path(), deposed_why_ + "; this store no longer writes");
  return {};
}

Status Store::Run(Statement& stmt) {
  auto st = stmt.Run();
  if (!st && db_->last_error_fatal() && !sticky_) sticky_ = st.error();
  return st;
}

Status Store::Exec(std::string_view sql) {
  auto st = db_->Exec(sql);
  if (!st && db_->last_error_fatal() && !sticky_) sticky_ = st.error();
  return st;
}

// The event log's row, and for a job's event its history row (bounded per job).
Status Store::InsertEvent(Time time, std::string_view kind, JobId job, std::string_view payload) {
  Statements& s = *stmts_;
  s.insert_event.Bind(1, time).Bind(2, kind).Bind(3, static_cast<int64_t>(job)).Bind(4, payload);
  if (auto st = Run(s.insert_event); !st) return st;
  if (job == kNoJob) return {};
  s.insert_job_event.Bind(1, static_cast<int64_t>(job)).Bind(2, time).Bind(3, kind).Bind(4, payload);
  if (auto st = Run(s.insert_job_event); !st) return st;
  s.trim_job_events.Bind(1, static_cast<int64_t>(job)).Bind(2, static_cast<int64_t>(max_job_events_));
  return Run(s.trim_job_events);
}

Status Store::ApplyOp(const Batch::Op& op, BatchResult* result) {
  Statements& s = *stmts_;
  if (const auto* submit = std::get_if<Batch::Submit>(&op)) {
    JobSpec spec = submit->spec;
    if (spec.id == kNoJob) {
      if (next_id_ > kMaxJobId) return Fail(path(), "job ids exhausted");
      spec.id = next_id_;
    } else if (spec.id > kMaxJobId) {
      return Fail(path(), JobWhere(spec.id) + ": job ids must be in 1..2^62-1");
    }
    if (spec.submit == 0) spec.submit = submit->now;
    s.insert_job.Bind(1, static_cast<int64_t>(spec.id))
        .Bind(2, spec.submit)
        .Bind(3, EncodeJobSpec(spec))
        .Bind(4, JoinPartitions(spec.partitions));
    if (auto st = Run(s.insert_job); !st) return st;
    if (db_->Changes() == 0) return Fail(path(), JobWhere(spec.id) + ": already exists");
    if (spec.id >= next_id_) next_id_ = spec.id + 1;
    if (auto st = InsertEvent(submit->now, "submit", spec.id, ""); !st) return st;
    result->submitted.push_back(spec.id);
    return {};
  }
  if (const auto* save = std::get_if<Batch::Save>(&op)) {
    const JobRecord& j = save->job;
    Statement& u = s.update_job;
    u.Bind(1, static_cast<int64_t>(j.spec.id))
        .Bind(2, EncodeJobSpec(j.spec))
        .Bind(3, JobStateName(j.state))
        .Bind(4, EncodeGpus(j.gpus))
        .Bind(5, j.start)
        .Bind(6, j.end)
        .Bind(7, j.walltime)
        .Bind(8, j.run_walltime)
        .Bind(9, j.progress)
        .Bind(10, static_cast<int64_t>(j.checkpoint_epoch))
        .Bind(11, j.checkpoint_path)
        .Bind(12, j.last_checkpoint)
        .Bind(13, j.last_checkpoint_request)
        .Bind(14, j.checkpoint_deadline)
        .Bind(15, AfterCheckpointName(j.after_checkpoint))
        .Bind(16, EncodeGpus(j.shrink_to))
        .Bind(17, static_cast<int64_t>(j.preempted_for))
        .Bind(18, EncodeJobIds(j.victims))
        .Bind(19, EncodeGpus(j.claim))
        .Bind(20, int64_t{j.preemptions})
        .Bind(21, int64_t{j.resizes})
        .Bind(22, j.gpu_seconds_lost)
        .Bind(23, j.idle_since)
        .Bind(24, JoinPartitions(j.spec.partitions))
        .Bind(25, j.service_gpu_s)
        .Bind(26, j.service_until);
    if (auto st = Run(u); !st) return st;
    if (db_->Changes() == 0) return Fail(path(), JobWhere(j.spec.id) + ": no such job to save");
    return {};
  }
  if (const auto* event = std::get_if<Batch::Event>(&op)) {
    return InsertEvent(event->time, event->kind, event->job, event->payload);
  }
  if (const auto* ckpt = std::get_if<Batch::Checkpoint>(&op)) {
    s.insert_checkpoint.Bind(1, static_cast<int64_t>(ckpt->job))
        .Bind(2, static_cast<int64_t>(ckpt->epoch))
        .Bind(3, ckpt->time)
        .Bind(4, ckpt->path);
    if (auto st = Run(s.insert_checkpoint); !st)
      return Fail(path(), JobWhere(ckpt->job) + ": recording checkpoint " + std::to_string(ckpt->epoch) + ": " +
                              st.error().message);
    return {};
  }
  if (const auto* node = std::get_if<Batch::Node>(&op)) {
    if (node->name.empty()) return Fail(path(), "node state: empty node name");
    s.upsert_node.Bind(1, node->name)
        .Bind(2, NodeStateName(node->state))
        .Bind(3, node->now)
        .Bind(4, node->reason)
        .Bind(5, node->user);
    return Run(s.upsert_node);
  }
  if (const auto* launch = std::get_if<Batch::Launch>(&op)) {
    s.upsert_launch.Bind(1, static_cast<int64_t>(launch->job)).BindBlob(2, launch->info);
    if (auto st = Run(s.upsert_launch); !st)
      return Fail(path(), JobWhere(launch->job) + ": launch info: " + st.error().message);
    return {};
  }
  if (const auto* samples = std::get_if<Batch::Samples>(&op)) {
    for (const auto& [name, value] : samples->values) {
      if (name.empty() || name.size() > kMaxSeriesName || name.find_first_of(",*") != std::string::npos)
        return Fail(path(), "history: bad series name '" + name.substr(0, kMaxSeriesName) + "' (1.." +
                                std::to_string(kMaxSeriesName) + " bytes, no ',' or '*')");
      if (!std::isfinite(value)) return Fail(path(), "history: series " + name + ": value is not finite");
      s.insert_series.Bind(1, name);
      if (auto st = Run(s.insert_series); !st) return st;
      s.insert_sample.Bind(1, name).Bind(2, samples->time).Bind(3, value);
      if (auto st = Run(s.insert_sample); !st) return st;
    }
    return {};
  }
  if (const auto* prune = std::get_if<Batch::Prune>(&op)) {
    s.prune_history.Bind(1, prune->before);
    if (auto st = Run(s.prune_history); !st) return st;
    s.prune_job_events.Bind(1, prune->before);
    return Run(s.prune_job_events);
  }
  if (const auto* renew = std::get_if<Batch::Renew>(&op)) {
    // The fence of this transaction checked the epoch, with the row locked for update.
    if (epoch_ == 0) return Fail(path(), "leadership: this store does not lead (AcquireLeadership first)");
    if (renew->lease_ms <= 0)
      return Fail(path(), "leadership: lease " + std::to_string(renew->lease_ms) + " ms must be > 0");
    PHX_ASSIGN_OR_RETURN(const int64_t now, DbNowMs());
    LeaderLease lease;
    lease.holder = holder_;
    lease.epoch = epoch_;
    lease.expires_ms = now + renew->lease_ms;
    return WriteLease(lease);
  }
  const auto& meta = std::get<Batch::Meta>(op);
  if (meta.key == kNextJobIdKey || meta.key == kLeaderKey)
    return Fail(path(), "meta key '" + meta.key + "' belongs to the store");
  s.upsert_meta.Bind(1, meta.key).Bind(2, meta.value);
  return Run(s.upsert_meta);
}

Status Store::ApplyOne(const Batch& batch, BatchResult* result) {
  for (const Batch::Op& op : batch.ops_) {
    if (auto st = ApplyOp(op, result); !st) return st;
  }
  return {};
}

std::vector<Result<BatchResult>> Store::ApplyGroup(std::span<const Batch* const> batches) {
  std::vector<Result<BatchResult>> out(batches.size());
  if (batches.empty()) return out;
  // PostgreSQL: a savepoint costs two round trips per batch. Try the group without them first;
  // only when a batch fails (rare: a duplicate id, a reserved key) is nothing committed and the
  // group run again with them. SQLite's savepoints cost next to nothing: always.
  if (batches.size() > 1 && db_->dialect() == Dialect::kPostgres && ApplyGroupOnce(batches, false, out)) return out;
  ApplyGroupOnce(batches, batches.size() > 1, out);
  return out;
}

bool Store::ApplyGroupOnce(std::span<const Batch* const> batches, bool savepoints,
                           std::vector<Result<BatchResult>>& out) {
  const auto fail_all = [&out](const Error& e) {
    for (auto& r : out) r = std::unexpected(e);
  };
  if (auto st = CheckWritable(); !st) {
    fail_all(st.error());
    return true;
  }
  Statements& s = *stmts_;
  const JobId id_at_start = next_id_;
  const auto abort = [&](const Error& e) {
    if (db_->InTransaction()) (void)s.rollback.Run();
    next_id_ = id_at_start;
    fail_all(e);
  };
  if (auto st = Run(s.begin); !st) {
    abort(st.error());
    return true;
  }
  // A renewal writes the lease row: lock it for update from the start (a share lock upgraded
  // later could deadlock with a standby waiting to take over).
  const bool renews = std::any_of(batches.begin(), batches.end(), [](const Batch* b) {
    return std::any_of(b->ops_.begin(), b->ops_.end(),
                       [](const Batch::Op& op) { return std::holds_alternative<Batch::Renew>(op); });
  });
  if (auto st = Fence(renews); !st) {
    abort(st.error());
    return true;
  }
  for (size_t i = 0; i < batches.size(); ++i) {
    const JobId id_before = next_id_;
    if (savepoints) {
      if (auto st = Run(s.savepoint); !st) {
        abort(st.error());
        return true;
      }
    }
    BatchResult result;
    auto st = ApplyOne(*batches[i], &result);
    if (st) {
      if (savepoints) {
        if (auto rel = Run(s.release); !rel) {
          abort(rel.error());
          return true;
        }
      }
      out[i] = std::move(result);
      continue;
    }
    // A fatal error, or a lone batch: nothing commits.
    if (sticky_ || batches.size() == 1) {
      abort(st.error());
      return true;
    }
    if (!savepoints) {  // the optimistic try: nothing committed; again with savepoints
      if (db_->InTransaction()) (void)s.rollback.Run();
      next_id_ = id_at_start;
      return false;
    }
    next_id_ = id_before;
    out[i] = std::unexpected(st.error());
    if (auto rb = Run(s.rollback_to); !rb) {
      abort(rb.error());
      return true;
    }
    if (auto rel = Run(s.release); !rel) {
      abort(rel.error());
      return true;
    }
  }
  if (next_id_ != id_at_start) {
    s.upsert_meta.Bind(1, kNextJobIdKey).Bind(2, std::to_string(next_id_));
    if (auto st = Run(s.upsert_meta); !st) {
      abort(st.error());
      return true;
    }
  }
  if (auto st = Run(s.commit); !st) abort(st.error());
  return true;
}

Result<BatchResult> Store::Apply(const Batch& batch) {
  const Batch* one[] = {&batch};
  return std::move(ApplyGroup(one)[0]);
}

Result<JobId> Store::SubmitJob(JobSpec spec, Time now) {
  Batch b;
  b.SubmitJob(std::move(spec), now);
  PHX_ASSIGN_OR_RETURN(auto r, Apply(b));
  return r.submitted.at(0);
}

Status Store::SaveJobState(JobId id, const JobRecord& job) {
  if (id != job.spec.id)
    return Fail(path(), JobWhere(id) + ": SaveJobState given the record of job " + std::to_string(job.spec.id));
  Batch b;
  b.SaveJobState(job);
  PHX_ASSIGN_OR_RETURN(auto r, Apply(b));
  return {};
}

Status Store::RecordDecision(const Decision& d) {
  Batch b;
  b.RecordDecision(d);
  PHX_ASSIGN_OR_RETURN(auto r, Apply(b));
  return {};
}

Status Store::RecordEvent(Time time, std::string_view kind, JobId job, std::string_view payload) {
  Batch b;
  b.RecordEvent(time, std::string(kind), job, std::string(payload));
  PHX_ASSIGN_OR_RETURN(auto r, Apply(b));
  return {};
}

Status Store::SetNodeState(std::string_view name, NodeState state, Time now) {
  Batch b;
  b.SetNodeState(std::string(name), state, now);
  PHX_ASSIGN_OR_RETURN(auto r, Apply(b));
  return {};
}

// ---- reads -----------------------------------------------------------------------------------

Result<JobRecord> Store::ReadJobRow(Statement& q) const {
  const int64_t id = q.Int(0);
  const std::string where = JobWhere(static_cast<JobId>(id));
  const auto bad = [&](std::string_view field, const std::string& why) -> Result<JobRecord> {
    return Fail(path(), where + ": " + std::string(field) + ": " + why);
  };
  if (id <= 0 || static_cast<uint64_t>(id) > kMaxJobId) return bad("id", "out of range");
  auto spec = DecodeJobSpec(q.Text(2));
  if (!spec) return Fail(path(), where + ": " + spec.error().ToString());
  JobRecord j;
  j.spec = std::move(*spec);
  j.spec.id = static_cast<JobId>(id);
  auto state = ParseJobState(q.Text(3));
  if (!state) return bad("state", "unknown state '" + Escape(q.Text(3)) + "'");
  j.state = *state;
  const auto gpus = [&](int col, std::string_view field, std::vector<GpuId>* out) -> Status {
    auto g = DecodeGpus(q.Text(col));
    if (!g) return Fail(path(), where + ": " + std::string(field) + ": " + g.error().message);
    *out = std::move(*g);
    return {};
  };
  const auto u32 = [&](int col, std::string_view field, uint32_t* out) -> Status {
    const int64_t v = q.Int(col);
    if (v < 0 || v > std::numeric_limits<uint32_t>::max())
      return Fail(path(), where + ": " + std::string(field) + ": out of range (" + std::to_string(v) + ")");
    *out = static_cast<uint32_t>(v);
    return {};
  };
  PHX_RETURN_IF_ERROR(gpus(4, "gpus", &j.gpus));
  j.start = q.Int(5);
  j.end = q.Int(6);
  j.walltime = q.Int(7);
  j.run_walltime = q.Int(8);
  j.progress = q.Int(9);
  j.checkpoint_epoch = static_cast<uint64_t>(q.Int(10));
  j.checkpoint_path = std::string(q.Text(11));
  j.last_checkpoint = q.Int(12);
  j.last_checkpoint_request = q.Int(13);
  j.checkpoint_deadline = q.Int(14);
  auto after = ParseAfterCheckpoint(q.Text(15));
  if (!after) return bad("after_checkpoint", "unknown value '" + Escape(q.Text(15)) + "'");
  j.after_checkpoint = *after;
  PHX_RETURN_IF_ERROR(gpus(16, "shrink_to", &j.shrink_to));
  j.preempted_for = static_cast<JobId>(q.Int(17));
  auto victims = DecodeJobIds(q.Text(18));
  if (!victims) return bad("victims", victims.error().message);
  j.victims = std::move(*victims);
  PHX_RETURN_IF_ERROR(gpus(19, "claim", &j.claim));
  PHX_RETURN_IF_ERROR(u32(20, "preemptions", &j.preemptions));
  PHX_RETURN_IF_ERROR(u32(21, "resizes", &j.resizes));
  j.gpu_seconds_lost = q.Real(22);
  j.idle_since = q.Int(23);
  j.spec.partitions = SplitPartitions(q.Text(24));
  j.service_gpu_s = q.Real(25);
  if (!std::isfinite(j.service_gpu_s) || j.service_gpu_s < 0)
    return bad("service_gpu_s", "not a finite count of GPU-seconds >= 0 (" + std::to_string(j.service_gpu_s) + ")");
  j.service_until = q.Int(26);
  return j;
}

Result<RecoveredState> Store::LoadAll() {
  Statements& s = *stmts_;
  // One read transaction: a consistent snapshot even if another connection writes meanwhile.
  PHX_RETURN_IF_ERROR(Run(s.begin_read));
  struct EndRead {
    Store* store;
    ~EndRead() { (void)store->Exec("COMMIT"); }
  } end_read{this};

  RecoveredState out;
  out.next_job_id = next_id_;
  while (true) {
    PHX_ASSIGN_OR_RETURN(auto row, s.select_jobs.Step());
    if (!row) break;
    auto job = ReadJobRow(s.select_jobs);
    if (!job) {
      s.select_jobs.Reset();
      return std::unexpected(job.error());
    }
    out.jobs.push_back(std::move(*job));
  }
  s.select_jobs.Reset();
  while (true) {
    PHX_ASSIGN_OR_RETURN(auto row, s.select_nodes.Step());
    if (!row) break;
    StoredNode n;
    n.name = std::string(s.select_nodes.Text(0));
    auto state = ParseNodeState(s.select_nodes.Text(1));
    if (!state) {
      s.select_nodes.Reset();
      return Fail(path(), "node " + Escape(n.name) + ": unknown state '" + Escape(s.select_nodes.Text(1)) + "'");
    }
    n.state = *state;
    n.since = s.select_nodes.Int(2);
    n.reason = std::string(s.select_nodes.Text(3));
    n.reason_user = std::string(s.select_nodes.Text(4));
    out.nodes.push_back(std::move(n));
  }
  s.select_nodes.Reset();
  PHX_RETURN_IF_ERROR(s.max_seq.Step());
  out.last_event_seq = static_cast<uint64_t>(s.max_seq.Int(0));
  s.max_seq.Reset();
  while (true) {
    PHX_ASSIGN_OR_RETURN(auto row, s.select_active_launch.Step());
    if (!row) break;
    out.launch.emplace(static_cast<JobId>(s.select_active_launch.Int(0)), std::string(s.select_active_launch.Blob(1)));
  }
  s.select_active_launch.Reset();
  return out;
}

Result<std::optional<JobRecord>> Store::LoadJob(JobId id) {
  Statement& q = stmts_->select_job;
  q.Bind(1, static_cast<int64_t>(id));
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  std::optional<JobRecord> out;
  if (row) {
    auto job = ReadJobRow(q);
    if (!job) {
      q.Reset();
      return std::unexpected(job.error());
    }
    out = std::move(*job);
  }
  q.Reset();
  return out;
}

Result<std::vector<StoredEvent>> Store::ReadEvents(uint64_t after_seq, size_t limit) {
  Statement& q = stmts_->select_events;
  q.Bind(1, static_cast<int64_t>(std::min<uint64_t>(after_seq, std::numeric_limits<int64_t>::max())))
      .Bind(2, static_cast<int64_t>(std::min<size_t>(limit, std::numeric_limits<int64_t>::max())));
  std::vector<StoredEvent> out;
  while (true) {
    PHX_ASSIGN_OR_RETURN(auto row, q.Step());
    if (!row) break;
    out.push_back(StoredEvent{static_cast<uint64_t>(q.Int(0)), q.Int(1), std::string(q.Text(2)),
                              static_cast<JobId>(q.Int(3)), std::string(q.Text(4))});
  }
  q.Reset();
  return out;
}

Result<std::vector<StoredEvent>> Store::ReadJobEvents(JobId job) {
  Statement& q = stmts_->select_job_events;
  q.Bind(1, static_cast<int64_t>(std::min<JobId>(job, std::numeric_limits<int64_t>::max())));
  std::vector<StoredEvent> out;
  while (true) {
    auto row = q.Step();
    if (!row) {
      q.Reset();
      return Fail(path(), JobWhere(job) + ": reading its events: " + row.error().message);
    }
    if (!*row) break;
    out.push_back(
        StoredEvent{static_cast<uint64_t>(q.Int(0)), q.Int(1), std::string(q.Text(2)), job, std::string(q.Text(3))});
  }
  q.Reset();
  return out;
}

Result<std::optional<std::string>> Store::GetMeta(std::string_view key) {
  Statement& q = stmts_->select_meta;
  q.Bind(1, key);
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  std::optional<std::string> out;
  if (row) out = std::string(q.Text(0));
  q.Reset();
  return out;
}

Result<std::optional<std::string>> Store::LoadLaunchInfo(JobId id) {
  Statement& q = stmts_->select_launch;
  q.Bind(1, static_cast<int64_t>(id));
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  std::optional<std::string> out;
  if (row) out = std::string(q.Blob(0));
  q.Reset();
  return out;
}

Result<HistoryAnswer> Store::ReadHistory(const HistoryQuery& q) {
  HistoryAnswer out;
  // One statement per name; a prefix is a range of names: [prefix, prefix with its last byte + 1).
  const std::string value = q.step > 0 ? "(h.time / ?4) * ?4 AS t, avg(h.value)" : "h.time AS t, h.value";
  const std::string group = q.step > 0 ? " GROUP BY s.name, t" : "";
  const std::string from = " FROM history_series s JOIN history h ON h.series = s.id WHERE ";
  size_t points = 0;
  for (const std::string& name : q.names) {
    const bool prefix = name.size() >= 2 && name.ends_with(".*");
    std::string lo = prefix ? name.substr(0, name.size() - 1) : name;
    std::string hi = lo;
    if (prefix) hi.back() = static_cast<char>(hi.back() + 1);  // '.' + 1 == '/'
    const std::string where = prefix ? "s.name >= ?1 AND s.name < ?2" : "s.name = ?1";
    PHX_ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT s.name, " + value + from + where + " AND h.time >= ?3" +
                                                 group + " ORDER BY s.name, t"));
    stmt.Bind(1, lo).Bind(3, q.since);
    if (prefix) stmt.Bind(2, hi);
    if (q.step > 0) stmt.Bind(4, q.step);
    if (!prefix) out[name];
    while (true) {
      PHX_ASSIGN_OR_RETURN(auto row, stmt.Step());
      if (!row) break;
      if (q.max_points > 0 && ++points > q.max_points)
        return Fail(path(), "history: more than " + std::to_string(q.max_points) +
                                " points; ask for fewer series, a later since, or a larger step");
      out[std::string(stmt.Text(0))].push_back(HistoryPoint{stmt.Int(1), stmt.Real(2)});
    }
  }
  return out;
}

Status Store::CheckIntegrity() {
  if (db_->dialect() == Dialect::kPostgres) {
    PHX_ASSIGN_OR_RETURN(auto n, db_->QueryInt("SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM events)"));
    (void)n;
    return {};
  }
  PHX_ASSIGN_OR_RETURN(auto q, db_->Prepare("PRAGMA integrity_check(20)"));
  std::string problems;
  while (true) {
    PHX_ASSIGN_OR_RETURN(auto row, q.Step());
    if (!row) break;
    if (q.Text(0) == "ok") continue;
    if (!problems.empty()) problems += "; ";
    problems += q.Text(0);
  }
  if (!problems.empty()) return Fail(path(), "integrity check failed: " + problems);
  return {};
}

Status Store::CheckpointWal() {
  if (db_->dialect() == Dialect::kPostgres) return {};
  PHX_ASSIGN_OR_RETURN(auto q, db_->Prepare("PRAGMA wal_checkpoint(TRUNCATE)"));
  PHX_ASSIGN_OR_RETURN(auto row, q.Step());
  if (row && q.Int(0) != 0) return Fail(path(), "WAL checkpoint could not complete (another connection is reading)");
  return {};
}

}  // namespace phalanx::store
