#include "agent/job_env.h"

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
  if (!spec.partition.empty()) {
    set("PHALANX_PARTITION", spec.partition);
    set("SLURM_JOB_PARTITION", spec.partition);
  }
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
  set("MASTER_ADDR", MasterAddr(spec, ctx));
  set("MASTER_PORT", std::to_string(spec.master_port > 0 ? spec.master_port : DefaultMasterPort(spec.job_id)));
  set("WORLD_SIZE", std::to_string(spec.world_size > 0 ? spec.world_size : spec.gpu_indices.size()));
  set("NODE_RANK", std::to_string(spec.node_rank));
  set("NNODES", std::to_string(spec.nnodes > 0 ? spec.nnodes : 1));
  set("NPROC_PER_NODE", local);
  set("LOCAL_WORLD_SIZE", local);
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
