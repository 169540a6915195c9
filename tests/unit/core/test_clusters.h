// Small cluster builders shared by the core tests, and a Scheduler on the demo cluster.
#pragma once

#include <algorithm>
#include <memory>
#include <numeric>
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

// A small cluster of mixed nodes after config/topologies/philly.yaml: leaf "big" of `big` 8-GPU
// PCIe nodes (two sockets of one 4-GPU PCIe switch each, 19 GB/s between them) and leaf "small"
// of `small` 2-GPU PCIe nodes, one 100 Gb/s NIC each, both leaves 2:1 under one spine. Four
// small nodes make the best 8-GPU block (11.5 GB/s, the NIC); one big node is about as good (11.4,
// the sockets' link); 2 GPUs on each of four big nodes are not.
// MixedNodes' two kinds of node on many leaves, as on the Philly cluster: `big_leaves` leaves
// of `big` 8-GPU nodes ("big0", ...), then `small_leaves` of `small` 2-GPU nodes ("small0", ...).
inline TopologySpec MixedNodeLeaves(int big_leaves, int big, int small_leaves, int small);

inline TopologySpec MixedNodes(int big = 4, int small = 4) {
  auto pcie = [](std::vector<int> gpus) {
    GroupSpec g;
    g.kind = "pcie";
    g.gpus = std::move(gpus);
    g.gpu_link_gbs = 16;
    g.gpu_link_type = LinkType::kPcie;
    g.uplink = LinkSpec{16, 0, 0, LinkType::kPcie};
    return g;
  };
  auto numa = [&](int socket, std::vector<int> gpus) {
    GroupSpec g;
    g.kind = "numa";
    g.numa = socket;
    g.uplink = LinkSpec{19, 0, 0, LinkType::kSmp};
    g.children.push_back(pcie(std::move(gpus)));
    return g;
  };
  TopologySpec spec;
  spec.name = "mixed-test";
  NodeModel p8{.name = "p8", .gpus = 8, .groups = {numa(0, {0, 1, 2, 3}), numa(1, {4, 5, 6, 7})}};
  NodeModel k2{.name = "k2", .gpus = 2, .groups = {pcie({0, 1})}};
  for (NodeModel* m : {&p8, &k2}) {
    m->nics = 1;
    m->nic_gbs = 12.5;
    m->nic_type = LinkType::kInfiniband;
  }
  spec.models = {p8, k2};
  spec.switches.push_back(SwitchSpec{"spine", Level::kSpine, "", {}, 1.0, false, "t:1"});
  spec.switches.push_back(SwitchSpec{"big", Level::kLeaf, "spine", {}, 2.0, false, "t:2"});
  spec.switches.push_back(SwitchSpec{"small", Level::kLeaf, "spine", {}, 2.0, false, "t:3"});
  for (int n = 0; n < big; ++n) spec.nodes.push_back(NodeSpec{"big-n" + std::to_string(n), "big", 0, "t:4"});
  for (int n = 0; n < small; ++n) spec.nodes.push_back(NodeSpec{"small-n" + std::to_string(n), "small", 1, "t:5"});
  return spec;
}

inline TopologySpec MixedNodeLeaves(int big_leaves, int big, int small_leaves, int small) {
  TopologySpec spec = MixedNodes(0, 0);
  spec.name = "mixed-leaves-test";
  spec.switches.resize(1);  // the spine
  for (int l = 0; l < big_leaves + small_leaves; ++l) {
    const bool is_big = l < big_leaves;
    const std::string leaf = (is_big ? "big" : "small") + std::to_string(is_big ? l : l - big_leaves);
    spec.switches.push_back(SwitchSpec{leaf, Level::kLeaf, "spine", {}, 2.0, false, "t:2"});
    for (int n = 0; n < (is_big ? big : small); ++n)
      spec.nodes.push_back(NodeSpec{leaf + "-n" + std::to_string(n), leaf, is_big ? 0 : 1, "t:4"});
  }
  return spec;
}

// A job of alice's: `gpus` GPUs anywhere, `walltime` asked.
inline JobSpec PlainJob(JobId id, uint32_t gpus, Duration walltime) {
  JobSpec j;
  j.id = id;
  j.user = "alice";
  j.shape.gpus = gpus;
  j.walltime = walltime;
  return j;
}

inline Topology Build(const TopologySpec& spec) {
  auto t = Topology::Build(spec);
  if (!t) throw std::runtime_error(t.error().ToString());
  return std::move(*t);
}

// Jobs 1, 2, ... of 1 to `max_gpus` GPUs each on the GPUs in a random order, from the `skip`-th
// on (the first `skip` stay free), those of several GPUs with a ring of 40-139 GB/s (so jobs
// across nodes cross domains). Returns each job's GPUs, job i + 1's at i.
template <class Rng>
std::vector<std::vector<GpuId>> AllocateRandomJobs(Topology& t, Rng& rng, size_t skip, size_t max_gpus) {
  std::vector<uint32_t> order(t.gpu_count());
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<GpuId>> jobs;
  for (size_t at = skip; at < order.size();) {
    const size_t k = std::min<size_t>(order.size() - at, 1 + rng() % max_gpus);
    std::vector<GpuId> gpus;
    for (size_t i = at; i < at + k; ++i) gpus.push_back(GpuId(order[i]));
    at += k;
    std::sort(gpus.begin(), gpus.end());
    const double ring = gpus.size() > 1 ? 40.0 + static_cast<double>(rng() % 100) : 0.0;
    if (!t.Allocate(jobs.size() + 1, gpus, ring)) throw std::runtime_error("AllocateRandomJobs: allocation refused");
    jobs.push_back(std::move(gpus));
  }
  return jobs;
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
