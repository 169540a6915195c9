// Human-readable views of a Topology: a summary of its shape and a tree with free capacity.
//
// "Largest free block" of a level = the most free GPUs inside one domain of that level (a job of
// that many GPUs fits in one domain of the level right now). Computed from Topology's counters
// in O(domains).
// Thread-safety: pure functions of the Topology they read.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/topology/level.h"
#include "core/topology/topology.h"

namespace phalanx {

// Per level (indexed by Level): the largest free block; 0 where the level has no domain.
std::array<uint32_t, kLevelCount> LargestFreeBlocks(const Topology& topo);

// "spine 20, leaf 12, node 8, group 8": the levels present, top down.
std::string FreeBlocksLine(const Topology& topo);

// Several lines: nodes, GPUs, switches per level, multi-node NVLink domains, node models,
// oversubscription per level, rail-optimized domains, free capacity.
std::string TopologySummary(const Topology& topo);

struct TreeOptions {
  int max_depth = 3;      // levels of the tree below the root to print (0: the root only)
  int collapse_runs = 4;  // runs of at least this many alike siblings print as one line
};

// The tree, one domain per line with free GPUs and whole free nodes, GPU-level domains left out
// (nodes list their free local GPUs instead). Runs of alike siblings (same level, kind, size and
// free counts) collapse into "su000..su127 (128 leaf, each ...)", so 4,096 nodes stay readable.
std::string TopologyTree(const Topology& topo, const TreeOptions& options = {});
std::string TopologyTree(const Topology& topo, int max_depth);

}  // namespace phalanx
