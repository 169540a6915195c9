// Store: phalanxd's durable state in one SQLite file (WAL), or in a PostgreSQL database
// (StoreOptions::backend; the same tables, SQL and promises, through the Db interface of db.h):
// jobs (spec + persistent state), checkpoints, nodes, an append-only event log, and meta (the
// job id counter). On restart the daemon rebuilds the core from LoadAll(); see docs/store.md
// for the schema, the durability argument and the recovery procedure.
//
// Writes are Batches (LevelDB's WriteBatch): a list of operations applied atomically in one
// transaction by Apply(), or several batches in one transaction by ApplyGroup() (each batch
// all-or-nothing inside it; GroupCommitter uses this). When Apply returns OK the batch is
// durable: with SyncMode::kNormal it survives the process being killed (kill -9, a crash), with
// kFull it also survives power loss and OS crashes. On PostgreSQL a commit returns when the
// server says it committed (with the default synchronous_commit = on: its WAL is flushed).
//
// Leadership (AcquireLeadership): several Stores on one database elect one leader by a lease
// kept in meta('leader') with the database's own clock; each takeover increases an epoch, and
// every write of a leading Store checks, in its own transaction, that its epoch is still the
// current one, so a deposed leader's writes are refused (fencing) and it learns it was deposed.
//
// Errors name the file. After an I/O error, corruption or a full disk the store refuses every
// later write with that first error (LevelDB's sticky background error): the caller reopens it,
// which recovers the file to its last committed transaction.
//
// Thread-safety: not thread-safe. One thread at a time (the daemon's store thread, or a
// GroupCommitter's writer); const methods too (they share the connection).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "adapters/store/db.h"
#include "core/common/result.h"
#include "core/sched/decision.h"
#include "core/sched/job.h"
#include "core/topology/topology.h"

namespace phalanx::store {

enum class SyncMode : uint8_t {
  kNormal,  // PRAGMA synchronous=NORMAL: a commit is written to the WAL (the OS has it) before
            // it returns; fsync only at checkpoints. Survives process death, not power loss.
  kFull,    // PRAGMA synchronous=FULL: the WAL is fsynced at every commit. Survives power loss.
};

enum class Backend : uint8_t {
  kSqlite,    // Open(path): a file
  kPostgres,  // Open(dsn): a libpq connection string; the store lives in its current schema
};

// "sqlite" / "postgresql" (the daemon config's store.backend); nullopt for anything else.
std::optional<Backend> ParseBackend(std::string_view name);
// Whether this build has the PostgreSQL backend (libpq-dev was found at configure time).
bool PostgresBuilt();

struct StoreOptions {
  Backend backend = Backend::kSqlite;
  SyncMode sync = SyncMode::kNormal;  // SQLite's; PostgreSQL follows the server's settings
  bool create_if_missing = true;
  bool verify_on_open = false;  // PRAGMA quick_check at open (O(file size)); SQLite only
  std::string vfs;              // SQLite VFS name; empty: the default (tests inject faults)
  int busy_timeout_ms = 5000;   // waiting for another connection's lock (PostgreSQL: lock_timeout)
  // Events kept per job in job_events (the job page's history): the first and the latest
  // max_job_events - 1. At least 2.
  size_t max_job_events = 128;
};

// A batch of writes, applied atomically. Plain value; building one does no I/O.
class Batch {
 public:
  // A new job. spec.id == kNoJob: the store assigns the next id; otherwise the id must be new
  // and below 2^62 (the counter moves past it). spec.submit == 0 becomes `now`. Also appends a
  // "submit" event.
  void SubmitJob(JobSpec spec, Time now);
  // The job's spec (hold/release change it) and persistent state; the job must exist.
  void SaveJobState(const JobRecord& job);
  // Appends the decision to the event log (kind = DecisionKindName, time = d.at). It does not
  // change the job's row: save the job states the pass changed in the same batch. Every event
  // of a job (this, RecordEvent and SubmitJob's "submit") also goes to the job's history
  // (ReadJobEvents), bounded per job (StoreOptions::max_job_events).
  void RecordDecision(const Decision& d);
  void RecordEvent(Time time, std::string kind, JobId job, std::string payload);
  // A checkpoint the job reported (history; the job's row holds the latest).
  void RecordCheckpoint(JobId job, uint64_t epoch, Time time, std::string path);
  // `user`: who set it (an admin's name; empty: phalanxd itself).
  void SetNodeState(std::string name, NodeState state, Time now, std::string reason = {}, std::string user = {});
  // How to run the job: an opaque blob (phalanxd stores a serialized phalanx.v1.Job with the
  // API spec and the submitter's identity). Replaces an earlier one; the job must exist (in
  // the store or earlier in this batch).
  void SetLaunchInfo(JobId job, std::string info);
  // Free-form settings (e.g. "topology" = a fingerprint of the topology the GPU indices refer
  // to). "next_job_id" and "leader" are the store's own and are refused.
  void SetMeta(std::string key, std::string value);
  // History (docs/monitoring.md): one value per series at `time` (a second sample of a series
  // at the same time replaces the first). Names are non-empty, at most 200 bytes, and hold no
  // ',' or '*' (the history API's separators); values are finite.
  void RecordSamples(Time time, std::vector<std::pair<std::string, double>> samples);
  // Deletes every history row older than `before` (retention), and the job_events rows older
  // than `before` of jobs that are final.
  void PruneHistory(Time before);
  // Extends this Store's leadership lease to `lease_ms` from now (the database's clock), in the
  // batch's transaction: a leader renews through its GroupCommitter, behind its other writes.
  // Fails when the Store does not lead; when it was deposed the fence refuses the batch anyway.
  void RenewLeadership(int64_t lease_ms);

  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }
  void Clear() { ops_.clear(); }

 private:
  friend class Store;
  struct Submit {
    JobSpec spec;
    Time now;
  };
  struct Save {
    JobRecord job;
  };
  struct Event {
    Time time;
    std::string kind;
    JobId job;
    std::string payload;
  };
  struct Checkpoint {
    JobId job;
    uint64_t epoch;
    Time time;
    std::string path;
  };
  struct Node {
    std::string name;
    NodeState state;
    Time now;
    std::string reason;
    std::string user;
  };
  struct Meta {
    std::string key, value;
  };
  struct Launch {
    JobId job;
    std::string info;
  };
  struct Samples {
    Time time;
    std::vector<std::pair<std::string, double>> values;
  };
  struct Prune {
    Time before;
  };
  struct Renew {
    int64_t lease_ms;
  };
  using Op = std::variant<Submit, Save, Event, Checkpoint, Node, Meta, Launch, Samples, Prune, Renew>;
  std::vector<Op> ops_;
};

struct BatchResult {
  std::vector<JobId> submitted;  // ids of the batch's SubmitJob operations, in order
};

struct StoredNode {
  std::string name;
  NodeState state = NodeState::kUp;
  Time since = 0;
  std::string reason;
  std::string reason_user;  // who set the state (empty: phalanxd itself, or before schema v5)
};

struct StoredEvent {
  uint64_t seq = 0;
  Time time = 0;
  std::string kind;
  JobId job = kNoJob;
  std::string payload;
};

// Everything a restart needs, read in one transaction (a consistent snapshot).
struct RecoveredState {
  // By id. Each has its spec and the persistent fields (state, gpus, start, end, walltime,
  // run_walltime, progress, checkpoint fields and protocol, preemption links, counters,
  // idle_since); priority, class_rank, preemptible, wait and busbw_gbs are the core's to
  // recompute.
  std::vector<JobRecord> jobs;
  std::vector<StoredNode> nodes;  // by name
  JobId next_job_id = 1;
  uint64_t last_event_seq = 0;  // 0: empty log
  // Launch info (Batch::SetLaunchInfo) of the jobs that are not final, by id; final jobs'
  // are read on demand with LoadLaunchInfo.
  std::map<JobId, std::string> launch;
};

struct HistoryPoint {
  Time time = 0;
  double value = 0;
};

struct HistoryQuery {
  // Exact series names; a name ending in ".*" stands for every series that starts with what
  // precedes the '*' ("user_gpus.*": user_gpus.alice, user_gpus.bob, ...).
  std::vector<std::string> names;
  Time since = 0;         // points at or after this time
  Duration step = 0;      // > 0: one point per step-wide bucket (the mean; time = bucket start)
  size_t max_points = 0;  // > 0: fail when the answer would hold more points
};

// Series name -> points by time. Exact names asked for are present even without points.
using HistoryAnswer = std::map<std::string, std::vector<HistoryPoint>>;

// The lease in meta('leader'). Times are milliseconds since the epoch on the database's clock
// (PostgreSQL's clock_timestamp(); SQLite's julianday('now'), the local clock).
struct LeaderLease {
  std::string holder;
  uint64_t epoch = 0;      // 1 for the first leader, +1 at every takeover
  int64_t expires_ms = 0;  // the lease lapses then unless renewed; 0: resigned
  int64_t now_ms = 0;      // the database's clock when this was read
};

class Store {
 public:
  // Opens (creating if allowed) and migrates the store: `target` is the file (SQLite) or the
  // connection string (PostgreSQL). Fails, naming the file (or server and database), when it
  // cannot be opened, created or connected to, is not a database, is another application's
  // database, has a newer schema version than this build, has a schema this build cannot use,
  // or (verify_on_open) fails its quick check; and for kPostgres in a build without libpq.
  static Result<std::unique_ptr<Store>> Open(const std::string& target, const StoreOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // One transaction. Fails (nothing applied) on an invalid operation (duplicate or unknown job,
  // bad id, reserved meta key), a SQLite error, or a sticky earlier error.
  Result<BatchResult> Apply(const Batch& batch);
  // One transaction for all batches: one result per batch. A batch that fails is rolled back
  // alone (a savepoint) and the others commit; if the commit itself fails, all fail.
  std::vector<Result<BatchResult>> ApplyGroup(std::span<const Batch* const> batches);

  // One-operation batches.
  Result<JobId> SubmitJob(JobSpec spec, Time now);
  Status SaveJobState(JobId id, const JobRecord& job);  // id must equal job.spec.id
  Status RecordDecision(const Decision& d);
  Status RecordEvent(Time time, std::string_view kind, JobId job, std::string_view payload);
  Status SetNodeState(std::string_view name, NodeState state, Time now);

  // Reads. Fail on SQLite errors and on rows that do not decode (naming the file and the job).
  Result<RecoveredState> LoadAll();
  Result<std::optional<JobRecord>> LoadJob(JobId id);
  Result<std::vector<StoredEvent>> ReadEvents(uint64_t after_seq, size_t limit);
  // The job's history (job_events), oldest first: `seq` numbers the job's events from 1 (gaps
  // where the bound dropped some), `payload` is the event's. Empty for an unknown job.
  Result<std::vector<StoredEvent>> ReadJobEvents(JobId job);
  Result<std::optional<std::string>> GetMeta(std::string_view key);
  Result<std::optional<std::string>> LoadLaunchInfo(JobId id);
  // The history (Batch::RecordSamples). Fails on a SQLite error, and when the answer would hold
  // more than q.max_points points (the error says how many).
  Result<HistoryAnswer> ReadHistory(const HistoryQuery& q);

  // PRAGMA integrity_check: OK, or an Error listing the first problems. PostgreSQL: the tables
  // answer a count (the server keeps its own checksums; pg_amcheck is the site's tool).
  Status CheckIntegrity();
  // Copies the WAL into the database file and truncates the WAL (e.g. before a backup).
  Status CheckpointWal();  // PostgreSQL: nothing to do (the server checkpoints)

  // ---- leadership (docs/store.md, "Leadership") ----
  // Becomes the leader when no one holds an unexpired lease: the epoch increases by one, the
  // lease lasts `lease_ms` from now (the database's clock), and the job id counter is re-read
  // (the previous leader may have moved it). From then on every write of this Store checks its
  // epoch in the same transaction. Fails, naming the holder, its epoch and the time left, when
  // another holds the lease; `holder` is 1..200 printable bytes (e.g. "host:pid").
  // Called again by the leader it renews (same epoch).
  Result<LeaderLease> AcquireLeadership(std::string_view holder, int64_t lease_ms);
  // Extends the lease by `lease_ms` from now. Fails (and deposed() becomes true) when another
  // took over; a lapsed lease that nobody took is renewed.
  Result<LeaderLease> RenewLeadership(int64_t lease_ms);
  // Ends the lease now (the epoch stays: the next leader takes epoch + 1); later writes fail.
  Status ResignLeadership();
  // PostgreSQL: this session's idle_in_transaction_session_timeout in ms (0: none; SQLite: 0).
  // AcquireLeadership sets it to the lease unless the site set one (docs/store.md, "Leadership").
  Result<int64_t> IdleTransactionTimeoutMs();
  // The lease as stored (nullopt: nobody ever led), read without taking it.
  Result<std::optional<LeaderLease>> ReadLeader();
  uint64_t epoch() const { return epoch_; }  // 0: this Store does not lead
  // True once a write or renewal found a newer epoch (or after ResignLeadership): this Store
  // must stop acting as leader; its writes fail, naming the epoch and holder that replaced it.
  bool deposed() const { return deposed_; }

  Backend backend() const { return db_->dialect() == Dialect::kPostgres ? Backend::kPostgres : Backend::kSqlite; }
  const std::string& path() const { return db_->path(); }
  JobId next_job_id() const { return next_id_; }
  // The first fatal error (I/O, corruption, disk full); writes fail with it. Empty if none.
  const std::optional<Error>& sticky_error() const { return sticky_; }

 private:
  struct Statements;
  Store(std::unique_ptr<Db> db, std::unique_ptr<Statements> stmts, JobId next_id, size_t max_job_events);
  Status InsertEvent(Time time, std::string_view kind, JobId job, std::string_view payload);
  Status Fence(bool for_update);               // in a write transaction: is epoch_ current?
  Result<LeaderLease> LockLease(bool* found);  // in a transaction: read meta('leader') for update
  Result<int64_t> DbNowMs();
  Status WriteLease(const LeaderLease& lease);
  Status BoundIdleTransactions(int64_t lease_ms);
  // One transaction for the group, each batch in a savepoint or (savepoints false) none: then
  // false when a batch failed -- nothing committed, `out` to be filled again.
  bool ApplyGroupOnce(std::span<const Batch* const> batches, bool savepoints, std::vector<Result<BatchResult>>& out);
  Status ApplyOne(const Batch& batch, BatchResult* result);
  Status ApplyOp(const Batch::Op& op, BatchResult* result);
  Status Run(Statement& stmt);  // Run() and record a fatal error
  Status Exec(std::string_view sql);
  Status CheckWritable() const;
  Result<JobRecord> ReadJobRow(Statement& stmt) const;

  std::unique_ptr<Db> db_;
  std::unique_ptr<Statements> stmts_;  // destroyed before db_ (declared after it)
  JobId next_id_ = 1;                  // cached meta('next_job_id'); written with each commit
  size_t max_job_events_ = 128;
  std::optional<Error> sticky_;
  uint64_t epoch_ = 0;  // the epoch this Store leads; 0: no fencing (single writer)
  bool deposed_ = false;
  std::string deposed_why_;  // what writes fail with once deposed_
  std::string holder_;
  bool idle_timeout_checked_ = false;  // PostgreSQL: idle_in_transaction_session_timeout looked at
};

}  // namespace phalanx::store
