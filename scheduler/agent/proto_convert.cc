#include "agent/proto_convert.h"

#include <cstdio>

namespace phalanx::agent {

Result<LaunchSpec> LaunchSpecFromProto(const v1::LaunchCommand& cmd) {
  if (cmd.job_id() == 0) return Fail("launch.job_id", "must be set");
  if (cmd.launch_id() == 0) return Fail("launch.launch_id", "must be set");
  if (cmd.master_port() > 65535)
    return Fail("launch.master_port", std::to_string(cmd.master_port()) + " is not a port");
  const v1::JobSpec& js = cmd.spec();
  LaunchSpec s;
  s.job_id = cmd.job_id();
  s.launch_id = cmd.launch_id();
  s.job_name = js.name();
  if (!js.partitions().empty()) s.partition = js.partitions(0);
  s.user = cmd.user();
  s.uid = cmd.uid();
  s.gid = cmd.gid();
  s.argv.assign(js.command().begin(), js.command().end());
  s.script = js.script();
  s.working_dir = js.working_dir();
  s.env.insert(js.env().begin(), js.env().end());
  s.stdout_pattern = js.stdout_pattern();
  s.stderr_pattern = js.stderr_pattern();
  if (js.has_umask()) {
    if (js.umask() > 0777) {
      char octal[16];
      std::snprintf(octal, sizeof octal, "0%o", js.umask());
      return Fail("launch.spec.umask", std::string(octal) + " is above 0777");
    }
    s.umask = static_cast<mode_t>(js.umask());
  }
  s.truncate_output = js.submit_info().open_truncate();
  s.slurm.account = js.account();
  s.slurm.cluster = cmd.cluster_name();
  s.slurm.submit_dir = js.submit_info().submit_dir();
  s.slurm.submit_host = js.submit_info().submit_host();
  s.slurm.cpus_per_task = js.cpus_per_task();
  s.slurm.ntasks = js.ntasks();
  s.slurm.ntasks_per_node = js.ntasks_per_node();
  s.slurm.mem_per_node_mb = js.mem_per_node_mb();
  s.slurm.mem_per_gpu_mb = js.mem_per_gpu_mb();
  s.gpu_indices.assign(cmd.gpu_indices().begin(), cmd.gpu_indices().end());
  s.nodelist = cmd.nodelist();
  s.master_addr = cmd.master_addr();
  s.master_port = cmd.master_port();
  s.world_size = cmd.world_size();
  s.node_rank = cmd.node_rank();
  s.nnodes = cmd.nnodes();
  const int64_t walltime_s = cmd.walltime_s() > 0 ? cmd.walltime_s() : js.walltime_s();
  s.walltime = std::chrono::seconds(std::max<int64_t>(walltime_s, 0));
  s.checkpoint_signal = js.checkpoint_signal();
  s.resume_epoch = cmd.checkpoint_epoch();
  s.resume_path = cmd.checkpoint_path();
  s.restart_count = cmd.restart_count();
  if (cmd.array_job_id() != 0) {
    s.array_job_id = cmd.array_job_id();
    s.array_task_id = cmd.array_task_id();
    auto array = ParseArraySpec(js.array(), kArraySizeCeiling);
    if (!array) return Fail("launch.spec.array", array.error().message);
    s.array_shape = ShapeOfArray(array->tasks);
  }
  return s;
}

v1::GpuInfo GpuToProto(const GpuDevice& gpu) {
  v1::GpuInfo out;
  out.set_index(gpu.index);
  out.set_uuid(gpu.uuid);
  out.set_name(gpu.name);
  out.set_memory_bytes(gpu.memory_bytes);
  out.set_numa_node(gpu.numa_node);
  for (uint32_t peer : gpu.nvlink_peers) out.add_nvlink_peers(peer);
  return out;
}

v1::RunningPart RunningToProto(const PartInfo& part) {
  v1::RunningPart out;
  out.set_job_id(part.job_id);
  out.set_launch_id(part.launch_id);
  out.set_pid(part.pid);
  return out;
}

v1::PartExited PartEndToProto(const PartEnd& end) {
  v1::PartExited out;
  out.set_job_id(end.job_id);
  out.set_launch_id(end.launch_id);
  out.set_exit_code(end.exit_code);
  out.set_term_signal(end.term_signal);
  out.set_reason(end.reason);
  return out;
}

v1::CheckpointReport CheckpointToProto(const CheckpointSeen& seen) {
  v1::CheckpointReport out;
  out.set_job_id(seen.job_id);
  out.set_epoch(seen.epoch);
  out.set_path(seen.path);
  out.set_launch_id(seen.launch_id);
  return out;
}

}  // namespace phalanx::agent
