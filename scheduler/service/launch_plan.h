// LaunchPlan: how a Start (or a restart after a Resize) becomes one part per node, torchrun
// style: world_size = the job's GPUs, node_rank = the node's position in node (topology)
// order, master = the first node (its agent's address), MASTER_PORT deterministic per job in
// the configured range, the nodes as a Slurm hostlist. Pure: the daemon supplies addresses.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/topology/topology.h"

namespace phalanx::service {

struct LaunchPart {
  JobId job = kNoJob;
  uint64_t launch_id = 0;
  std::string node;
  std::vector<uint32_t> gpu_indices;  // local indices on `node`, ascending
  uint32_t node_rank = 0, nnodes = 0, world_size = 0;
  std::string master_addr;
  uint32_t master_port = 0;
  std::string nodelist;
};

struct PortRange {
  uint32_t min = 29500, max = 29999;
};

// min + job mod (max - min + 1): the same port for every start of a job.
uint32_t MasterPort(JobId job, PortRange range);

// One part per node holding any of `gpus`, in node order. `address_of(node)` gives the agent's
// address (the master is the first node's).
std::vector<LaunchPart> PlanLaunch(JobId job, const std::vector<GpuId>& gpus, const Topology& topo, uint64_t launch_id,
                                   const std::function<std::string(const std::string&)>& address_of, PortRange ports);

}  // namespace phalanx::service
