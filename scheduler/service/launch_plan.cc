#include "service/launch_plan.h"

#include <algorithm>
#include <map>

#include "util/hostlist.h"

namespace phalanx::service {

uint32_t MasterPort(JobId job, PortRange range) {
  const uint64_t span = static_cast<uint64_t>(range.max) - range.min + 1;
  return range.min + static_cast<uint32_t>(job % span);
}

std::vector<LaunchPart> PlanLaunch(JobId job, const std::vector<GpuId>& gpus, const Topology& topo, uint64_t launch_id,
                                   const std::function<std::string(const std::string&)>& address_of, PortRange ports) {
  std::map<NodeId, std::vector<uint32_t>> by_node;  // node (topology) order
  for (GpuId g : gpus) by_node[topo.node_of(g)].push_back(topo.local_index(g));
  std::vector<std::string> names;
  for (const auto& [n, _] : by_node) names.push_back(topo.domain(topo.node_domain(n)).name);
  const std::string nodelist = FormatHostlist(names);
  const std::string master = names.empty() ? std::string() : address_of(names.front());
  std::vector<LaunchPart> parts;
  uint32_t rank = 0;
  for (auto& [n, locals] : by_node) {
    std::sort(locals.begin(), locals.end());
    LaunchPart p;
    p.job = job;
    p.launch_id = launch_id;
    p.node = names[rank];
    p.gpu_indices = std::move(locals);
    p.node_rank = rank++;
    p.nnodes = static_cast<uint32_t>(by_node.size());
    p.world_size = static_cast<uint32_t>(gpus.size());
    p.master_addr = master;
    p.master_port = MasterPort(job, ports);
    p.nodelist = nodelist;
    parts.push_back(std::move(p));
  }
  return parts;
}

}  // namespace phalanx::service
