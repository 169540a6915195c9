// Small cluster builders shared by the core tests, and a Scheduler on the demo cluster.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"
#include "core/topology/topology.h"

namespace phalanx::testing {

// `leaves` leaves of `nodes_per_leaf` nodes of `model` under one spine.
inline TopologySpec TwoTier(int leaves, int nodes_per_leaf, const std::string& model = "dgx-h100", double oversub = 1.0,
                            bool rails = false) {
  TopologySpec spec;
  spec.name = "test";
  spec.models.push_back(*BuiltinNodeModel(model));
  spec.switches.push_back(SwitchSpec{"spine", Level::kSpine, "", {}, 1.0, false, "t:1"});
  for (int l = 0; l < leaves; ++l) {
    const std::string leaf = "leaf" + std::to_string(l);
    spec.switches.push_back(SwitchSpec{leaf, Level::kLeaf, "spine", {}, oversub, rails, "t:2"});
    for (int n = 0; n < nodes_per_leaf; ++n) {
      spec.nodes.push_back(NodeSpec{leaf + "-n" + std::to_string(n), leaf, 0, "t:3"});
    }
  }
  return spec;
}

inline Topology Build(const TopologySpec& spec) {
  auto t = Topology::Build(spec);
  if (!t) throw std::runtime_error(t.error().ToString());
  return std::move(*t);
}

// All GPUs of node `name`.
inline std::vector<GpuId> NodeGpus(const Topology& t, const std::string& name) {
  const Domain& d = t.domain(t.find(name));
  std::vector<GpuId> out;
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count; ++g) out.push_back(GpuId(g));
  return out;
}

// A Scheduler with `config` on gen:demo (4 nodes x 8 GPUs).
inline std::unique_ptr<Scheduler> DemoScheduler(SchedulerConfig config = {}) {
  auto spec = GenerateByName("demo");
  if (!spec) throw std::runtime_error(spec.error().ToString());
  auto s = Scheduler::Create(Build(*spec), std::move(config));
  if (!s) throw std::runtime_error(s.error().ToString());
  return std::move(*s);
}

}  // namespace phalanx::testing
