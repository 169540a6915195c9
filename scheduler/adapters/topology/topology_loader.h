// Loading a cluster topology from a file (or a generator name) in any supported format.
//
// Formats, sniffed from the content (`format` forces one):
//   yaml   the native Phalanx format (topology_reader_yaml.h)
//   slurm  Slurm topology.conf, `SwitchName=` lines (topology_reader_slurm.h)
//   nvsmi  `nvidia-smi topo -m` output, a `GPU0` header row (topology_reader_nvsmi.h)
//   hwloc  `lstopo --of xml` output, `<topology` (topology_reader_hwloc.h)
// A path of the form "gen:NAME" (e.g. "gen:superpod:4") runs a built-in generator instead
// (GenerateByName). nvsmi and hwloc describe one node: the result is a one-node cluster whose node
// is named `node_name` (default: the file stem) and whose model is named `node_model` when given.
//
// The result is what the reader produced; callers build it with Topology::Build, whose errors
// keep the reader's "file:line" positions.
// Thread-safety: reads the file system; otherwise pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "core/topology/spec.h"

namespace phalanx {

// The largest topology (or gres) file read: a Slurm topology.conf or YAML file of the node limit
// (core/topology/limits.h) with one line per node is under 8 MiB, an hwloc XML of a 1,024-GPU
// node under 16 MiB. Larger input (or /dev/zero) fails before it is parsed:
// "FILE: larger than 64 MiB limit".
inline constexpr size_t kMaxTopologyFileBytes = size_t{64} << 20;

enum class TopologyFormat { kAuto, kYaml, kSlurm, kNvsmi, kHwloc, kGenerator };
std::string_view TopologyFormatName(TopologyFormat format);
// Parses "auto", "yaml", "slurm", "nvsmi", "hwloc" or "gen" into *format; false for any other name.
bool ParseTopologyFormat(std::string_view name, TopologyFormat* format);

struct LoadOptions {
  TopologyFormat format = TopologyFormat::kAuto;
  int gpus_per_node = 0;   // slurm: GPUs of nodes without gres (see SlurmReadOptions)
  std::string node_model;  // slurm: built-in model of every node (default dgx-h100);
                           // nvsmi/hwloc: the name given to the model read
  std::string gres_path;   // slurm: gres.conf or slurm.conf with Gres= (optional)
  std::string node_name;   // nvsmi/hwloc: the one node's name (default: the file stem)
  std::vector<std::pair<std::string, double>> oversubscription_by_level;  // slurm
};

struct LoadedTopology {
  TopologySpec spec;
  TopologyFormat format = TopologyFormat::kAuto;  // the format that was read
};

// The format of `text` (read from `path`), or an error naming `path` when it is none of them.
Result<TopologyFormat> SniffTopologyFormat(std::string_view path, std::string_view text);

// Fails on: an unreadable file (naming the path and the OS error), a file over
// kMaxTopologyFileBytes, an unknown format, a bad
// generator name, and every error of the reader (with its file:line).
Result<LoadedTopology> LoadTopology(const std::string& path, const LoadOptions& options);
Result<TopologySpec> LoadTopologyFile(const std::string& path, const LoadOptions& options);

}  // namespace phalanx
