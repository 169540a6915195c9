// LaunchSpec: everything the agent needs to start one job part on this node, as plain values
// (the gRPC LaunchCommand is converted into it in proto_convert.cc; nothing below proto_convert
// sees protobuf). One job has one part per node it runs on; a part is one process group.
// Thread-safety: a plain value.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/common/ids.h"
#include "util/job_array.h"

namespace phalanx::agent {

// Unique per start of a job (a requeued job gets a new one); names the part's files.
using LaunchId = uint64_t;

struct LaunchSpec {
  JobId job_id = kNoJob;
  LaunchId launch_id = 0;
  std::string job_name;   // %x
  std::string partition;  // the partition it runs in (SLURM_JOB_PARTITION); empty: unknown

  // Who runs it. When the agent runs as root the part runs as uid/gid with the user's
  // supplementary groups; otherwise uid must be the agent's own uid.
  std::string user;  // %u; empty: the passwd name of uid
  uid_t uid = 0;
  gid_t gid = 0;

  // Without a script: argv is the command (argv[0] without a '/' is looked up in the job's PATH).
  // With a script: argv holds the script's arguments ($1 $2 ...; may be empty).
  std::vector<std::string> argv;
  std::string script;                      // run with /bin/sh unless it starts with "#!"
  std::string working_dir;                 // absolute; empty: the user's home
  std::map<std::string, std::string> env;  // the job's environment (the agent adds its own)
  std::string stdout_pattern;              // %j %x %u %N %n %%; empty: phalanx-%j.out
  std::string stderr_pattern;              // empty: the stdout file
  std::optional<mode_t> umask;             // the submitter's; nullopt: LauncherOptions::umask
  bool truncate_output = false;            // --open-mode=truncate: output files emptied at the start

  // Placement (torchrun-style); see job_env.h for the variables they become.
  std::vector<uint32_t> gpu_indices;  // local indices -> CUDA_VISIBLE_DEVICES
  std::string nodelist;               // PHALANX_NODELIST (Slurm hostlist)
  std::string master_addr;
  uint32_t master_port = 0;
  uint32_t world_size = 0;
  uint32_t node_rank = 0;
  uint32_t nnodes = 1;

  // What Slurm's variables say beyond the placement (job_env.h SLURM_*); 0 / empty: not given.
  struct Slurm {
    std::string account;
    std::string cluster;      // SLURM_CLUSTER_NAME
    std::string submit_dir;   // empty: working_dir
    std::string submit_host;  // empty: not set
    uint32_t cpus_per_task = 0;
    uint32_t ntasks = 0;  // 0: one task per node
    uint32_t ntasks_per_node = 0;
    uint64_t mem_per_node_mb = 0;
    uint64_t mem_per_gpu_mb = 0;
  } slurm;

  // Lifetime. walltime 0: none. checkpoint_signal 0: SIGUSR1.
  std::chrono::milliseconds walltime{0};
  int checkpoint_signal = 0;
  uint64_t resume_epoch = 0;  // > 0: PHALANX_CHECKPOINT_EPOCH/PATH are set
  std::string resume_path;
  uint32_t restart_count = 0;  // requeues before this start: PHALANX_RESTART_COUNT, PHALANX_RESUME

  // An array task (SLURM_ARRAY_*, %A and %a); array_job_id kNoJob: not a task.
  JobId array_job_id = kNoJob;
  uint32_t array_task_id = 0;
  ArrayShape array_shape;  // of the array's indices (spec.array)
};

}  // namespace phalanx::agent
