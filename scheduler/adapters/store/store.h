// Store: phalanxd's durable state in one SQLite file (WAL): jobs (spec + persistent state),
// checkpoints, nodes, an append-only event log, and meta (the job id counter). On restart the
// daemon rebuilds the core from LoadAll(); see docs/store.md for the schema, the durability
// argument and the recovery procedure.
//
// Writes are Batches (LevelDB's WriteBatch): a list of operations applied atomically in one
// transaction by Apply(), or several batches in one transaction by ApplyGroup() (each batch
// all-or-nothing inside it; GroupCommitter uses this). When Apply returns OK the batch is
// durable: with SyncMode::kNormal it survives the process being killed (kill -9, a crash), with
// kFull it also survives power loss and OS crashes.
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

#include "adapters/store/sqlite_db.h"
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

struct StoreOptions {
  SyncMode sync = SyncMode::kNormal;
  bool create_if_missing = true;
  bool verify_on_open = false;  // PRAGMA quick_check at open (O(file size))
  std::string vfs;              // SQLite VFS name; empty: the default (tests inject faults)
  int busy_timeout_ms = 5000;   // waiting for another connection's lock
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
  // change the job's row: save the job states the pass changed in the same batch.
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
  // to). "next_job_id" is the store's own and is refused.
  void SetMeta(std::string key, std::string value);
  // History (docs/monitoring.md): one value per series at `time` (a second sample of a series
  // at the same time replaces the first). Names are non-empty, at most 200 bytes, and hold no
  // ',' or '*' (the history API's separators); values are finite.
  void RecordSamples(Time time, std::vector<std::pair<std::string, double>> samples);
  // Deletes every history row older than `before` (retention).
  void PruneHistory(Time before);

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
  using Op = std::variant<Submit, Save, Event, Checkpoint, Node, Meta, Launch, Samples, Prune>;
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
  std::string reason_user;  // who set the state (empty: phalanxd itself, or before schema v4)
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

class Store {
 public:
  // Opens (creating if allowed) and migrates the file. Fails, naming the file, when it cannot
  // be opened or created, is not a database, is another application's database, has a newer
  // schema version than this build, has a schema this build cannot use, or (verify_on_open)
  // fails its quick check.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, const StoreOptions& options = {});
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
  Result<std::optional<std::string>> GetMeta(std::string_view key);
  Result<std::optional<std::string>> LoadLaunchInfo(JobId id);
  // The history (Batch::RecordSamples). Fails on a SQLite error, and when the answer would hold
  // more than q.max_points points (the error says how many).
  Result<HistoryAnswer> ReadHistory(const HistoryQuery& q);

  // PRAGMA integrity_check: OK, or an Error listing the first problems.
  Status CheckIntegrity();
  // Copies the WAL into the database file and truncates the WAL (e.g. before a backup).
  Status CheckpointWal();

  const std::string& path() const { return db_.path(); }
  JobId next_job_id() const { return next_id_; }
  // The first fatal error (I/O, corruption, disk full); writes fail with it. Empty if none.
  const std::optional<Error>& sticky_error() const { return sticky_; }

 private:
  struct Statements;
  Store(SqliteDb db, std::unique_ptr<Statements> stmts, JobId next_id);
  Status ApplyOne(const Batch& batch, BatchResult* result);
  Status ApplyOp(const Batch::Op& op, BatchResult* result);
  Status Run(Statement& stmt);  // Run() and record a fatal error
  Status Exec(std::string_view sql);
  Status CheckWritable() const;
  Result<JobRecord> ReadJobRow(Statement& stmt) const;

  SqliteDb db_;
  std::unique_ptr<Statements> stmts_;  // destroyed before db_ (declared after it)
  JobId next_id_ = 1;                  // cached meta('next_job_id'); written with each commit
  std::optional<Error> sticky_;
};

}  // namespace phalanx::store
