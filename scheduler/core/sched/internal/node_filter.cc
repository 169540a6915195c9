#include "core/sched/internal/node_filter.h"

#include <string>

#include "core/sched/internal/spec_checks.h"
#include "util/constraint.h"

namespace phalanx {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

Result<std::vector<uint8_t>> ForbiddenNodes(const Topology& topo, const JobSpec& spec) {
  if (!spec.restricts_nodes()) return std::vector<uint8_t>{};
  const std::string where = JobWhere(spec.id);
  const size_t n = topo.node_count();
  std::vector<uint8_t> forbidden(n, spec.nodelist.empty() ? 0 : 1);
  for (const std::string& name : spec.nodelist) {
    const NodeId id = topo.find_node(name);
    if (!id.valid()) return Fail(where, "nodelist: no node '" + name + "' in this cluster");
    forbidden[id.value] = 0;
  }
  for (const std::string& name : spec.exclude) {
    const NodeId id = topo.find_node(name);
    if (!id.valid()) return Fail(where, "exclude: no node '" + name + "' in this cluster");
    forbidden[id.value] = 1;
  }
  auto constraint = ParseConstraint(spec.constraint, "constraint");
  if (!constraint) return Fail(where, constraint.error().ToString());
  if (!constraint->empty()) {
    for (uint32_t i = 0; i < n; ++i) {
      if (forbidden[i]) continue;
      const std::string& model = topo.domain(topo.node_domain(NodeId(i))).kind;
      if (!constraint->Matches(ModelFeatures(model))) forbidden[i] = 1;
    }
  }
  for (uint8_t f : forbidden) {
    if (!f) return forbidden;
  }
  std::string asked;
  if (!spec.nodelist.empty()) asked += " nodelist=" + Join(spec.nodelist);
  if (!spec.exclude.empty()) asked += " exclude=" + Join(spec.exclude);
  if (!spec.constraint.empty()) asked += " constraint=" + spec.constraint;
  return Fail(where, "no node of this cluster is allowed by" + asked +
                         " (a constraint matches the nodes' model names and their words, e.g. dgx-h100: dgx, h100)");
}

uint32_t AllowedGpus(const Topology& topo, const std::vector<uint8_t>& forbidden) {
  if (forbidden.empty()) return static_cast<uint32_t>(topo.gpu_count());
  uint32_t total = 0;
  for (uint32_t i = 0; i < forbidden.size(); ++i) {
    if (!forbidden[i]) total += topo.node_gpu_count(NodeId(i));
  }
  return total;
}

uint32_t FreeAllowedGpus(const Topology& topo, const std::vector<uint8_t>& forbidden) {
  if (forbidden.empty()) return topo.free_gpus(topo.root());
  uint32_t total = 0;
  for (uint32_t i = 0; i < forbidden.size(); ++i) {
    if (!forbidden[i]) total += topo.free_gpus(topo.node_domain(NodeId(i)));
  }
  return total;
}

std::vector<GpuId> NodeFilter::Gpus(const Topology& topo, const std::vector<uint8_t>& forbidden) {
  std::vector<GpuId> out;
  for (uint32_t i = 0; i < forbidden.size(); ++i) {
    if (!forbidden[i]) continue;
    const Domain& d = topo.domain(topo.node_domain(NodeId(i)));
    for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) out.push_back(GpuId(g));
  }
  return out;
}

NodeFilter::NodeFilter(Topology& topo, const std::vector<uint8_t>& forbidden) : what_if_(topo) {
  if (!forbidden.empty()) what_if_.Block(Gpus(topo, forbidden));
}

}  // namespace phalanx
