// The store's prepared statements (one set per Store, made at Open), shared by store.cc (writes,
// reads) and store_leadership.cc (the lease). Internal to the store: not part of its API.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "adapters/store/db.h"
#include "adapters/store/store.h"

namespace phalanx::store {
namespace detail {

inline constexpr JobId kMaxJobId = (uint64_t{1} << 62) - 1;  // the core's limit
inline constexpr std::string_view kNextJobIdKey = "next_job_id";
inline constexpr std::string_view kLeaderKey = "leader";  // meta('leader'): the lease
inline constexpr std::string_view kJobColumns =
    "id, submit, spec, state, gpus, start_time, end_time, walltime, run_walltime, progress, checkpoint_epoch, "
    "checkpoint_path, last_checkpoint, last_checkpoint_request, checkpoint_deadline, after_checkpoint, shrink_to, "
    "preempted_for, victims, claim, preemptions, resizes, gpu_seconds_lost, idle_since, partitions, "
    "service_gpu_s, service_until";

}  // namespace detail

struct Store::Statements {
  Statement begin, commit, rollback, savepoint, release, rollback_to;
  Statement insert_job, update_job, insert_event, insert_checkpoint, upsert_node, upsert_meta;
  Statement select_jobs, select_job, select_nodes, select_meta, select_events, max_seq;
  Statement upsert_launch, select_launch, select_active_launch;
  Statement insert_series, insert_sample, prune_history;
  Statement insert_job_event, trim_job_events, prune_job_events, select_job_events;
  Statement begin_read, lease_share, lease_update, insert_lease, db_now;

  static Result<std::unique_ptr<Statements>> Prepare(Db& db) {
    auto s = std::make_unique<Statements>();
    const std::string job_cols(detail::kJobColumns);
    const bool pg = db.dialect() == Dialect::kPostgres;
    const std::pair<Statement*, std::string> all[] = {
        // SQLite: IMMEDIATE takes the write lock at BEGIN. PostgreSQL: rows lock as written.
        {&s->begin, pg ? "BEGIN" : "BEGIN IMMEDIATE"},
        // One snapshot for every statement of LoadAll.
        {&s->begin_read, pg ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" : "BEGIN"},
        // The lease row: shared by writers (the fence), exclusive for takeover and renewal. In
        // SQLite the transaction's write lock already orders them.
        {&s->lease_share, std::string("SELECT value FROM meta WHERE key = 'leader'") + (pg ? " FOR SHARE" : "")},
        {&s->lease_update, std::string("SELECT value FROM meta WHERE key = 'leader'") + (pg ? " FOR UPDATE" : "")},
        {&s->insert_lease, "INSERT INTO meta(key, value) VALUES ('leader', ?1) ON CONFLICT(key) DO NOTHING"},
        {&s->db_now, pg ? "SELECT CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)"
                        : "SELECT CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"},
        {&s->commit, "COMMIT"},
        {&s->rollback, "ROLLBACK"},
        {&s->savepoint, "SAVEPOINT batch"},
        {&s->release, "RELEASE batch"},
        {&s->rollback_to, "ROLLBACK TO batch"},
        {&s->insert_job,
         "INSERT INTO jobs(id, submit, spec, partitions) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(id) DO NOTHING"},
        {&s->update_job,
         "UPDATE jobs SET spec = ?2, state = ?3, gpus = ?4, start_time = ?5, end_time = ?6, walltime = ?7, "
         "run_walltime = ?8, progress = ?9, checkpoint_epoch = ?10, checkpoint_path = ?11, last_checkpoint = ?12, "
         "last_checkpoint_request = ?13, checkpoint_deadline = ?14, after_checkpoint = ?15, shrink_to = ?16, "
         "preempted_for = ?17, victims = ?18, claim = ?19, preemptions = ?20, resizes = ?21, gpu_seconds_lost = ?22, "
         "idle_since = ?23, partitions = ?24, service_gpu_s = ?25, service_until = ?26 WHERE id = ?1"},
        {&s->insert_event, "INSERT INTO events(time, kind, job, payload) VALUES (?1, ?2, ?3, ?4)"},
        {&s->insert_checkpoint,
         "INSERT INTO checkpoints(job, epoch, time, path) VALUES (?1, ?2, ?3, ?4) "
         "ON CONFLICT(job, epoch) DO UPDATE SET time = excluded.time, path = excluded.path"},
        {&s->upsert_node,
         "INSERT INTO nodes(name, state, since, reason, reason_user) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) "
         "DO UPDATE SET state = excluded.state, since = excluded.since, reason = excluded.reason, "
         "reason_user = excluded.reason_user"},
        {&s->upsert_meta,
         "INSERT INTO meta(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value"},
        {&s->select_jobs, "SELECT " + job_cols + " FROM jobs ORDER BY id"},
        {&s->select_job, "SELECT " + job_cols + " FROM jobs WHERE id = ?1"},
        {&s->select_nodes, "SELECT name, state, since, reason, reason_user FROM nodes ORDER BY name"},
        {&s->select_meta, "SELECT value FROM meta WHERE key = ?1"},
        {&s->select_events, "SELECT seq, time, kind, job, payload FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"},
        {&s->max_seq, "SELECT coalesce(max(seq), 0) FROM events"},
        {&s->upsert_launch,
         "INSERT INTO launch(job, info) VALUES (?1, ?2) ON CONFLICT(job) DO UPDATE SET info = excluded.info"},
        {&s->select_launch, "SELECT info FROM launch WHERE job = ?1"},
        {&s->select_active_launch,
         "SELECT l.job, l.info FROM launch l JOIN jobs j ON j.id = l.job "
         "WHERE j.state IN ('pending', 'running', 'checkpointing') ORDER BY l.job"},
        {&s->insert_series, "INSERT INTO history_series(name) VALUES (?1) ON CONFLICT(name) DO NOTHING"},
        {&s->insert_sample,
         "INSERT INTO history(series, time, value) SELECT id, ?2, ?3 FROM history_series WHERE name = ?1 "
         "ON CONFLICT(series, time) DO UPDATE SET value = excluded.value"},
        {&s->prune_history, "DELETE FROM history WHERE time < ?1"},
        {&s->insert_job_event,
         "INSERT INTO job_events(job, seq, time, kind, detail) "
         "SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4 FROM job_events WHERE job = ?1"},
        // The first and the latest ?2 - 1.
        {&s->trim_job_events,
         "DELETE FROM job_events WHERE job = ?1 AND seq > (SELECT min(seq) FROM job_events WHERE job = ?1) AND "
         "seq <= (SELECT max(seq) FROM job_events WHERE job = ?1) - (?2 - 1)"},
        // Through the time index, each old row's job looked up by id (an IN (SELECT ...) would
        // scan every job at each prune).
        {&s->prune_job_events,
         "DELETE FROM job_events WHERE time < ?1 AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_events.job AND "
         "jobs.state IN ('completed', 'failed', 'cancelled', 'killed'))"},
        {&s->select_job_events, "SELECT seq, time, kind, detail FROM job_events WHERE job = ?1 ORDER BY seq"},
    };
    for (const auto& [stmt, sql] : all) {
      auto prepared = db.Prepare(sql);
      if (!prepared) return Fail(db.path(), "the schema does not match this build: " + prepared.error().message);
      *stmt = std::move(*prepared);
    }
    return s;
  }
};

}  // namespace phalanx::store
