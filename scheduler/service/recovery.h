// Recovery: rebuilds the scheduling core from the store after a (re)start, as docs/store.md's
// recovery procedure describes, and decides what the daemon must do before serving.
//
//   1. LoadAll() (one read transaction).
//   2. Compare the stored topology fingerprint (meta 'topology') with the topology loaded now.
//      Changed while jobs hold GPUs: refuse ("the topology changed ...") unless `force`, which
//      requeues those jobs (their GPU indices are void) and lets the agents' reconciliation
//      kill what still runs.
//   3. Node states before any job: nodes an admin drained stay drained; nodes on which jobs
//      run stay as they were but are drained until their agent confirms (no new work while we
//      do not know whether the node is alive); every other node is down until its agent
//      registers.
//   4. Scheduler::Restore for every job, then FinishRestore (links to lost jobs dropped).
//   5. The launch info of every unfinished job.
// Returns the core and what the Controller needs, plus a batch to apply before serving
// (the fingerprint; jobs whose links FinishRestore dropped, re-saved).
// Thread-safety: a function; runs before the daemon's threads start.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "adapters/store/store.h"
#include "core/sched/scheduler.h"
#include "phalanx/v1/phalanx.pb.h"

namespace phalanx::service {

// Hex FNV-1a over the domain tree (level, name, parent, GPU count of every domain in order):
// equal fingerprints mean stored GPU and node indices mean the same hardware.
std::string TopologyFingerprint(const Topology& topo);

struct NodeAdmin {
  NodeState state = NodeState::kUp;  // kUp, kDrain or kDown: the admin's choice (persisted)
  std::string reason;
  std::string user;  // the admin who set it
  Time since = 0;
};

struct Recovered {
  std::unique_ptr<Scheduler> core;
  std::map<JobId, v1::Job> launch;         // unfinished jobs' launch info
  std::map<std::string, NodeAdmin> admin;  // stored admin node states (drain), by name
  std::set<std::string> unconfirmed;       // nodes with running jobs, waiting for their agent
  JobId next_job_id = 1;
  uint64_t next_launch_id = 1;
  std::vector<std::string> notes;  // for the log: what recovery changed
  store::Batch batch;              // to apply before serving
  size_t jobs = 0, unfinished = 0, running = 0;
};

struct RecoveryOptions {
  bool force_topology = false;
  Time now = 0;
};

// Fails on a store that cannot be read, a changed topology under running jobs (without
// force), a job the core refuses to restore (naming it), or launch info that does not decode.
Result<Recovered> Recover(store::Store& store, Topology topology, SchedulerConfig config,
                          const RecoveryOptions& options);

}  // namespace phalanx::service
