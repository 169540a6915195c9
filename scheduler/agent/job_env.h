// The environment a job part sees: the job's own environment (as the submitter exported it),
// defaults for what a login would set, and the agent's variables, which always win:
//
//   CUDA_VISIBLE_DEVICES  local GPU indices, "0,1,2,3" ("" when the part has no GPUs)
//   CUDA_DEVICE_ORDER     PCI_BUS_ID (so CUDA's indices are NVML's, which the daemon uses)
//   PHALANX_JOB_ID, PHALANX_LAUNCH_ID, PHALANX_JOB_NAME, PHALANX_NODE (this node),
//   PHALANX_NODELIST, PHALANX_NODE_RANK, PHALANX_CHECKPOINT_FILE, PHALANX_CHECKPOINT_SIGNAL,
//   PHALANX_CHECKPOINT_EPOCH and PHALANX_CHECKPOINT_PATH (only when resuming)
//   MASTER_ADDR, MASTER_PORT, WORLD_SIZE, NODE_RANK, NNODES, NPROC_PER_NODE and
//   LOCAL_WORLD_SIZE (both = the number of local GPUs): what torchrun's flags want.
//   Slurm's, for launchers that read them (docs/user-guide.md, "Coming from Slurm"), as a batch
//   step of one task per node sees them: SLURM_JOB_ID, SLURM_JOBID, SLURM_JOB_NAME,
//   SLURM_JOB_NODELIST = SLURM_NODELIST (the hostlist), SLURM_NNODES = SLURM_JOB_NUM_NODES,
//   SLURMD_NODENAME, SLURM_NODEID = SLURM_PROCID (the node's rank), SLURM_LOCALID=0,
//   SLURM_NTASKS = SLURM_NPROCS (-n, else --ntasks-per-node x nodes, else the node count),
//   SLURM_NTASKS_PER_NODE, SLURM_TASKS_PER_NODE ("2(x3)"), SLURM_GPUS_ON_NODE, SLURM_JOB_GPUS
//   (the local indices), SLURM_GPUS (all the job's), SLURM_CPUS_PER_TASK, SLURM_MEM_PER_NODE and
//   SLURM_MEM_PER_GPU (MB; only when asked for), SLURM_SUBMIT_DIR (gsub's cwd; else the working
//   dir), SLURM_SUBMIT_HOST, SLURM_JOB_USER, SLURM_JOB_UID, SLURM_JOB_GID, SLURM_JOB_ACCOUNT,
//   SLURM_JOB_PARTITION (the partition it runs in; "default" when unknown), SLURM_CLUSTER_NAME
//   (the topology's name). Every SLURM_* of the submitter's environment is dropped first (it
//   would describe another job).
//   SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, _MIN, _MAX, _STEP: an array
//   task's (STEP: the indices' common difference, 1 when uneven); removed for other jobs.
//
// Defaults, only when the job's environment lacks them: HOME, USER, LOGNAME, SHELL (from the
// passwd entry), PATH=/usr/local/bin:/usr/bin:/bin. MASTER_ADDR defaults to the first host of
// the nodelist (this node when there is none); MASTER_PORT to DefaultMasterPort(job id).
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/launch_spec.h"

namespace phalanx::agent {

struct JobEnvContext {
  std::string node;  // this node's name
  std::string user;  // passwd name
  std::string home;
  std::string shell;
  std::string checkpoint_file;  // PHALANX_CHECKPOINT_FILE
};

// 29500 + job_id % 20000: the same on every node of the job. The daemon should choose the port
// itself (avoiding another job's port on the same master node); this is only the fallback.
uint32_t DefaultMasterPort(JobId job_id);

std::map<std::string, std::string> BuildJobEnvironment(const LaunchSpec& spec, const JobEnvContext& ctx);

// "KEY=VALUE" strings for execve; keys that are empty or hold '=' or NUL are dropped.
std::vector<std::string> EnvironmentStrings(const std::map<std::string, std::string>& env);

}  // namespace phalanx::agent
