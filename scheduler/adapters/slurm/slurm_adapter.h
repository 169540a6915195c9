// SlurmAdapter: the one seam between phalanxd's Slurm mode and a Slurm release. Everything
// version-specific (libslurm's structs, enums, the TRES string format, the soname) sits behind
// it; the executor and the mapping see only slurm_types.h. OpenLibslurm() returns the
// implementation over the libslurm C API this phalanxd was built against (slurm.h:
// slurm_load_jobs, slurm_load_node, slurm_load_partitions, slurm_update_job, slurm_requeue,
// slurm_kill_job, slurm_load_ctl_conf); tests use a fake (tests/unit/service/fake_slurm_adapter.h).
//
// Contract:
//  1. Calls block for at most Slurm's MessageTimeout (a slurmctld RPC each); the daemon makes
//     them on one worker thread of its own (SlurmExecutor), never on its io thread.
//  2. Loads return a consistent snapshot (one RPC each) or an Error naming the call and
//     Slurm's error text (code kInternal: slurmctld unreachable; kNotFound: no such job).
//  3. Actions change one job; an Error leaves it as it was (Slurm applies an update whole or
//     not at all).
//  4. Placement of a managed job (22.05, the way NOTES/docs/slurm.md describe): the job waits
//     pending with a begin time in the future (job_submit.lua's delay, renewed by Defer);
//     StartOn sets ReqNodeList to exactly the given nodes (and NumNodes to their count) and the
//     begin time to `begin`, in one update: Slurm starts it on those nodes at its next pass.
// Thread-safety: one caller at a time (libslurm's API is not documented as thread-safe for one
// connection's state; the daemon uses it from its Slurm worker thread only).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapters/slurm/slurm_types.h"
#include "core/common/result.h"

namespace phalanx::slurm {

class SlurmAdapter {
 public:
  virtual ~SlurmAdapter() = default;

  // "22.05.8 (libslurm)" or "fake".
  virtual std::string version() const = 0;

  virtual Result<std::vector<SlurmNode>> LoadNodes() = 0;
  virtual Result<std::vector<SlurmPartition>> LoadPartitions() = 0;
  virtual Result<std::vector<SlurmJob>> LoadJobs() = 0;
  // One job (slurm_load_job: one cheap RPC, for watching a job that is about to end). Fails:
  // kNotFound when Slurm no longer knows it.
  virtual Result<SlurmJob> LoadJob(SlurmJobId job) = 0;

  // ReqNodeList=nodes, NumNodes=their count, StartTime=begin (Unix seconds; pass now, not 0,
  // which means "unchanged"), Comment=comment (empty: unchanged), in one update. Fails: no such
  // job (kNotFound), not pending (kFailedPrecondition), Slurm refused the update.
  virtual Status StartOn(SlurmJobId job, const std::vector<std::string>& nodes, Time begin,
                         const std::string& comment) = 0;
  // StartTime=until: keeps a pending job from being scheduled by Slurm itself until then (the
  // fallback lease; also undoes a StartOn whose job did not start).
  virtual Status Defer(SlurmJobId job, Time until, bool clear_nodes) = 0;
  // Shrinks a running job to `nodes`, a subset of its allocation that keeps its batch host
  // (`scontrol update JobId=N NodeList=...`, 22.05): the other nodes' GPUs are freed and the
  // job's step tasks there killed; the batch script keeps running. Fails: no such job
  // (kNotFound), not running or not a subset (Slurm's error).
  virtual Status ShrinkTo(SlurmJobId job, const std::vector<std::string>& nodes) = 0;
  // scontrol requeue (running -> pending again; Slurm delays the restart by cred_expire).
  virtual Status Requeue(SlurmJobId job) = 0;
  // `batch`: the batch shell too (scancel -b semantics), not only the steps.
  virtual Status Signal(SlurmJobId job, int signal, bool batch) = 0;
  // scancel.
  virtual Status Cancel(SlurmJobId job) = 0;
  // The job's Comment (squeue %k): Phalanx's reason and predicted start.
  virtual Status SetComment(SlurmJobId job, const std::string& comment) = 0;
  // Slurm's credential lifetime in seconds (slurm.conf `AuthInfo=...,cred_expire=N`, default 120;
  // slurm_load_ctl_conf): a requeued batch job may not start again before its requeue ended plus
  // this plus 1 s (Slurm sets that begin time; a start before it is "Job credential revoked").
  virtual Result<Duration> CredentialLifetime() = 0;
};

// The libslurm implementation; `slurm_conf` empty: libslurm's default (SLURM_CONF or
// /etc/slurm/slurm.conf). Fails when this phalanxd was built without libslurm.
Result<std::unique_ptr<SlurmAdapter>> OpenLibslurm(const std::string& slurm_conf);

}  // namespace phalanx::slurm
