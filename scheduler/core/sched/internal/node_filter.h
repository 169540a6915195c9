// A job's node selection (Slurm's -w/--nodelist, -x/--exclude, -C/--constraint): which nodes of
// the topology it may use, and the placement of such a job with the others taken out of reach.
// Jobs without a selection pay nothing (an empty mask; no what-if).
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/common/result.h"
#include "core/sched/internal/what_if.h"
#include "core/sched/job.h"
#include "core/topology/topology.h"

namespace phalanx {

struct SchedulerState;

// By node id, 1 where the spec forbids the node; empty when it forbids none. Fails (where =
// "job N") on a node name the topology does not have (nodelist or exclude), a bad constraint,
// or a selection that leaves no node, naming what was asked.
Result<std::vector<uint8_t>> ForbiddenNodes(const Topology& topo, const JobSpec& spec);

// GPUs of the nodes the mask allows (all GPUs when it is empty).
uint32_t AllowedGpus(const Topology& topo, const std::vector<uint8_t>& forbidden);

// Free GPUs of the nodes the mask allows.
uint32_t FreeAllowedGpus(const Topology& topo, const std::vector<uint8_t>& forbidden);

// Holds the free GPUs of the forbidden nodes for as long as it lives (nothing when the mask is
// empty), so that the Placer only sees the allowed ones.
class NodeFilter {
 public:
  NodeFilter(Topology& topo, const std::vector<uint8_t>& forbidden);
  // The forbidden nodes' GPUs (owned or not), for a caller that holds GPUs as they free up.
  static std::vector<GpuId> Gpus(const Topology& topo, const std::vector<uint8_t>& forbidden);

 private:
  WhatIf what_if_;
};

}  // namespace phalanx
