// What phalanxd's Slurm mode reads from Slurm, in plain values: nodes, partitions, jobs. The
// adapter (slurm_adapter.h) fills them from whatever Slurm release runs; nothing here depends
// on slurm.h, so the mapping to the core (slurm_mapping.h) and the executor are unit-tested
// without Slurm.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/time.h"

namespace phalanx::slurm {

using SlurmJobId = uint32_t;

struct SlurmNode {
  std::string name;
  bool down = false;     // DOWN, FAIL, NOT_RESPONDING, FUTURE, POWERED_DOWN, INVALID_REG
  bool drained = false;  // DRAIN / DRAINING / MAINT
  uint32_t gpus = 0;     // gres gpu count configured
  std::string reason;    // why down or drained
};

// Slurm's partition states (PARTITION_UP, _DOWN, _DRAIN, _INACTIVE).
enum class SlurmPartitionState : uint8_t { kUp, kDown, kDrain, kInactive };

struct SlurmPartition {
  std::string name;
  std::vector<std::string> nodes;  // expanded, in Slurm's order
  SlurmPartitionState state = SlurmPartitionState::kUp;
  bool is_default = false;  // Default=YES: the partition of jobs that name none
  Duration max_time = 0;    // MaxTime in seconds; 0: UNLIMITED (or not set)
  bool operator==(const SlurmPartition&) const = default;
};

// Slurm's base job states (enum job_states), plus kOther for anything newer.
enum class SlurmJobState : uint8_t {
  kPending,
  kRunning,
  kSuspended,
  kCompleted,
  kCancelled,
  kFailed,
  kTimeout,
  kNodeFail,
  kPreempted,
  kBootFail,
  kDeadline,
  kOutOfMemory,
  kOther,
};
std::string_view SlurmJobStateName(SlurmJobState s);
inline bool IsSlurmFinal(SlurmJobState s) {
  return s != SlurmJobState::kPending && s != SlurmJobState::kRunning && s != SlurmJobState::kSuspended;
}

// Why a pending job waits, as far as the Slurm mode cares (enum job_state_reason).
enum class SlurmWait : uint8_t {
  kNone,
  kBeginTime,  // WAIT_TIME: job_submit.lua's delay (or phalanxd's lease, or a requeue's cred_expire)
  kHeldUser,   // WAIT_HELD_USER: the owner's own hold (sbatch -H, scontrol hold)
  kHeldAdmin,  // WAIT_HELD: priority 0 set by an admin
  kResources,
  kOther,
};

struct SlurmJob {
  SlurmJobId id = 0;
  std::string name;
  uint32_t uid = 0;
  std::string user;  // may be empty (the daemon resolves the uid)
  SlurmJobState state = SlurmJobState::kPending;
  bool completing = false;
  SlurmWait wait = SlurmWait::kNone;
  std::string reason;  // Slurm's reason text (Resources, BeginTime, JobHeldUser, ...)
  uint32_t priority = 0;
  std::string admin_comment;  // "phalanx:<options>" for managed jobs (job_submit.lua)
  std::string comment;
  std::string partition, qos, account;
  uint32_t num_nodes = 0;               // the minimum node count asked for
  uint32_t gpus_per_node = 0;           // --gres=gpu:N / --gpus-per-node
  uint32_t gpus_per_job = 0;            // --gpus
  Duration time_limit = 0;              // seconds; 0: none (INFINITE / not set)
  Time submit = 0, start = 0, end = 0;  // start/end: actual or expected (Slurm's)
  std::vector<std::string> nodes;       // allocated (running), expanded
  // GPUs allocated on each of `nodes` (Slurm's per-node GRES detail, "gpu:2(IDX:0-1)"), in the
  // same order; empty when Slurm did not say (the counts asked for are used then).
  std::vector<uint32_t> gpus_by_node;
  std::string req_nodes;   // ReqNodeList as Slurm keeps it
  std::string batch_host;  // the node running the batch script (running jobs)
  uint32_t restarts = 0;   // requeues so far
  int32_t exit_code = 0;   // the wait status's exit code (finished jobs)
  int32_t exit_signal = 0;
  bool requeue_allowed = true;
};

}  // namespace phalanx::slurm
