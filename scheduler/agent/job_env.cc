#include "agent/job_env.h"

#include <algorithm>
#include <csignal>

#include "util/hostlist.h"

namespace phalanx::agent {
namespace {

std::string JoinIndices(const std::vector<uint32_t>& indices) {
  std::string out;
  for (uint32_t i : indices) {
    if (!out.empty()) out += ',';
    out += std::to_string(i);
  }
  return out;
}

std::string MasterAddr(const LaunchSpec& spec, const JobEnvContext& ctx) {
  if (!spec.master_addr.empty()) return spec.master_addr;
  if (!spec.nodelist.empty()) {
    auto hosts = ExpandHostlist(spec.nodelist, "nodelist");
    if (hosts && !hosts->empty()) return hosts->front();
  }
  return ctx.node;
}

// Slurm's variables, as a batch step of one task per node would see them (job_env.h). Any
// SLURM_* the submitter's environment carried (gsub run inside a Slurm job) is dropped first:
// it describes another job.
void SetSlurmVariables(const LaunchSpec& spec, const JobEnvContext& ctx, std::map<std::string, std::string>& env) {
  std::erase_if(env, [](const auto& kv) { return kv.first.starts_with("SLURM_"); });
  auto set = [&env](const char* key, std::string value) { env[key] = std::move(value); };
  const LaunchSpec::Slurm& s = spec.slurm;
  const std::string id = std::to_string(spec.job_id);
  const std::string nodelist = spec.nodelist.empty() ? ctx.node : spec.nodelist;
  const uint32_t nnodes = spec.nnodes > 0 ? spec.nnodes : 1;
  set("SLURM_JOB_ID", id);
  set("SLURM_JOBID", id);
  set("SLURM_JOB_NAME", spec.job_name);
  set("SLURM_JOB_NODELIST", nodelist);
  set("SLURM_NODELIST", nodelist);
  set("SLURM_NNODES", std::to_string(nnodes));
  set("SLURM_JOB_NUM_NODES", std::to_string(nnodes));
  set("SLURMD_NODENAME", ctx.node);
  set("SLURM_NODEID", std::to_string(spec.node_rank));
  // One process per node (the agent starts the script once on each node): its task rank is the
  // node's rank, its local id 0.
  set("SLURM_PROCID", std::to_string(spec.node_rank));
  set("SLURM_LOCALID", "0");
  const uint32_t ntasks = s.ntasks > 0 ? s.ntasks : s.ntasks_per_node > 0 ? s.ntasks_per_node * nnodes : nnodes;
  set("SLURM_NTASKS", std::to_string(ntasks));
  set("SLURM_NPROCS", std::to_string(ntasks));
  const uint32_t per_node = s.ntasks_per_node > 0 ? s.ntasks_per_node : std::max<uint32_t>(1, ntasks / nnodes);
  set("SLURM_NTASKS_PER_NODE", std::to_string(per_node));
  set("SLURM_TASKS_PER_NODE", std::to_string(per_node) + (nnodes > 1 ? "(x" + std::to_string(nnodes) + ")" : ""));
  set("SLURM_GPUS_ON_NODE", std::to_string(spec.gpu_indices.size()));
  set("SLURM_JOB_GPUS", JoinIndices(spec.gpu_indices));
  set("SLURM_GPUS", std::to_string(spec.world_size > 0 ? spec.world_size : spec.gpu_indices.size()));
  if (s.cpus_per_task > 0) set("SLURM_CPUS_PER_TASK", std::to_string(s.cpus_per_task));
  if (s.mem_per_node_mb > 0) set("SLURM_MEM_PER_NODE", std::to_string(s.mem_per_node_mb));
  if (s.mem_per_gpu_mb > 0) set("SLURM_MEM_PER_GPU", std::to_string(s.mem_per_gpu_mb));
  set("SLURM_SUBMIT_DIR", s.submit_dir.empty() ? spec.working_dir : s.submit_dir);
  if (!s.submit_host.empty()) set("SLURM_SUBMIT_HOST", s.submit_host);
  set("SLURM_JOB_USER", ctx.user);
  set("SLURM_JOB_UID", std::to_string(spec.uid));
  set("SLURM_JOB_GID", std::to_string(spec.gid));
  if (!s.account.empty()) set("SLURM_JOB_ACCOUNT", s.account);
  set("SLURM_JOB_PARTITION", spec.partition.empty() ? "default" : spec.partition);
  if (!s.cluster.empty()) set("SLURM_CLUSTER_NAME", s.cluster);
}

}  // namespace

uint32_t DefaultMasterPort(JobId job_id) { return 29500 + static_cast<uint32_t>(job_id % 20000); }

std::map<std::string, std::string> BuildJobEnvironment(const LaunchSpec& spec, const JobEnvContext& ctx) {
  std::map<std::string, std::string> env = spec.env;
  env.try_emplace("HOME", ctx.home);
  env.try_emplace("USER", ctx.user);
  env.try_emplace("LOGNAME", ctx.user);
  env.try_emplace("SHELL", ctx.shell.empty() ? "/bin/sh" : ctx.shell);
  env.try_emplace("PATH", "/usr/local/bin:/usr/bin:/bin");

  const std::string local = std::to_string(spec.gpu_indices.size());
  auto set = [&env](const char* key, std::string value) { env[key] = std::move(value); };
  set("CUDA_VISIBLE_DEVICES", JoinIndices(spec.gpu_indices));
  set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  set("PHALANX_JOB_ID", std::to_string(spec.job_id));
  set("PHALANX_LAUNCH_ID", std::to_string(spec.launch_id));
  set("PHALANX_JOB_NAME", spec.job_name);
  if (!spec.partition.empty()) set("PHALANX_PARTITION", spec.partition);
  set("PHALANX_NODE", ctx.node);
  set("PHALANX_NODELIST", spec.nodelist.empty() ? ctx.node : spec.nodelist);
  set("PHALANX_NODE_RANK", std::to_string(spec.node_rank));
  set("PHALANX_CHECKPOINT_FILE", ctx.checkpoint_file);
  set("PHALANX_CHECKPOINT_SIGNAL", std::to_string(spec.checkpoint_signal > 0 ? spec.checkpoint_signal : SIGUSR1));
  if (spec.resume_epoch > 0) {
    set("PHALANX_CHECKPOINT_EPOCH", std::to_string(spec.resume_epoch));
    set("PHALANX_CHECKPOINT_PATH", spec.resume_path);
  } else {
    env.erase("PHALANX_CHECKPOINT_EPOCH");
    env.erase("PHALANX_CHECKPOINT_PATH");
  }
  // As the SPANK plugin sets them in Slurm mode (docs/slurm.md): a requeued job resumes.
  set("PHALANX_RESTART_COUNT", std::to_string(spec.restart_count));
  set("PHALANX_RESUME", spec.restart_count > 0 ? "1" : "0");
  set("MASTER_ADDR", MasterAddr(spec, ctx));
  set("MASTER_PORT", std::to_string(spec.master_port > 0 ? spec.master_port : DefaultMasterPort(spec.job_id)));
  set("WORLD_SIZE", std::to_string(spec.world_size > 0 ? spec.world_size : spec.gpu_indices.size()));
  set("NODE_RANK", std::to_string(spec.node_rank));
  set("NNODES", std::to_string(spec.nnodes > 0 ? spec.nnodes : 1));
  set("NPROC_PER_NODE", local);
  set("LOCAL_WORLD_SIZE", local);
  SetSlurmVariables(spec, ctx, env);
  if (spec.array_job_id != kNoJob) {
    // Slurm's array variables (sbatch's OUTPUT ENVIRONMENT VARIABLES).
    set("SLURM_ARRAY_JOB_ID", std::to_string(spec.array_job_id));
    set("SLURM_ARRAY_TASK_ID", std::to_string(spec.array_task_id));
    set("SLURM_ARRAY_TASK_COUNT", std::to_string(spec.array_shape.count));
    set("SLURM_ARRAY_TASK_MIN", std::to_string(spec.array_shape.min));
    set("SLURM_ARRAY_TASK_MAX", std::to_string(spec.array_shape.max));
    set("SLURM_ARRAY_TASK_STEP", std::to_string(spec.array_shape.step));
  } else {
    for (const char* k : {"SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                          "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP"})
      env.erase(k);  // a submitter's own, from inside another array task
  }
  return env;
}

std::vector<std::string> EnvironmentStrings(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env) {
    if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos) continue;
    out.push_back(key + "=" + value);
  }
  return out;
}

}  // namespace phalanx::agent
