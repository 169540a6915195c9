// Slurm topology/tree `topology.conf` -> TopologySpec.
//
// Input: one switch per logical line, `Key=Value` pairs in any order, keys case-insensitive:
//   SwitchName=leaf1 Nodes=dgx[001-032] LinkSpeed=400
//   SwitchName=spine Switches=leaf[1-4]
// `#` starts a comment; a trailing `\` continues the line on the next one. Node and switch
// lists are Slurm hostlists (see hostlist.h). BlockName= (topology/block) is not supported.
//
// Levels (the rule): a switch with Nodes= is a leaf. A switch with Switches= sits one level
// above the highest of its children: directly above leaves it is a spine, above a spine it is a
// core. Phalanx has three switch levels, so a tree with four or more switch levels is rejected.
// A two-level file therefore yields leaf + spine, a three-level file leaf + spine + core. As in
// Slurm, a switch has either Nodes= or Switches=, never both. Several top switches are allowed
// (Topology::Build joins them under a synthetic root with no links between them).
//
// Bandwidth: topology.conf has no link counts, so LinkSpeed cannot give an uplink capacity.
// Every SwitchSpec.uplink.gbs is left 0 and Topology::Build derives it as the sum of the
// downlinks (the nodes' NICs, or the child switches' uplinks) divided by the level's
// oversubscription (options.oversubscription_by_level, default 1:1). LinkSpeed (the speed of one
// link of the switch; Slurm itself treats the value as opaque) is validated and recorded in
// SwitchSpec.uplink.lane_gbs with lanes = 0 (informational: not a lane limit). A bare number is
// in options.link_speed_unit (default Gb/s, so LinkSpeed=400 is NDR = 50 GB/s); a value with a
// unit ("400Gb/s", "NDR") is parsed by ParseBandwidth.
//
// GPUs per node, in order of precedence:
//   1. options.gres_text: gres.conf lines (`NodeName=dgx[001-004] Name=gpu File=/dev/nvidia[0-7]`,
//      `... Name=gpu Count=8`; several lines for one node add up; lines without NodeName= apply
//      to every node) or slurm.conf node lines (`NodeName=dgx[001-004] Gres=gpu:8`,
//      `gpu:h100:8`, `NodeName=DEFAULT Gres=...`). Non-GPU gres and other lines are ignored.
//      A node given both ways must get the same count from both.
//   2. options.gpus_per_node when > 0;
//   3. the GPU count of options.node_model (a built-in model, node_models.h).
// Without gpus_per_node, a gres count that differs from the model's is an error (GPU count
// mismatch). Setting gpus_per_node allows nodes with fewer GPUs than the model (Slurm exposing
// part of a server): such a node gets the variant model "<model>-<N>gpu", the built-in model
// restricted to local GPUs 0..N-1 (groups pruned, NICs scaled to ceil(nics*N/gpus), one rail NIC
// per remaining GPU on a rail-optimized server). A count above the model's is always an error.
//
// Failures name "file:line" (the physical line of the offending token) and the problem: a token
// that is not Key=Value, an unknown or repeated key, an empty value, a missing SwitchName, both
// Nodes= and Switches=, neither, a duplicate switch, a node under two switches, an unknown
// switch in Switches=, a switch under two parents, a parent cycle, too many levels, a bad
// hostlist, more than 1,000,000 nodes, a bad LinkSpeed, a GPU count mismatch, a truncated file (a
// continuation at end of file, or a hostlist cut inside brackets), an empty file. Errors in gres_text name
// "<gres_filename>:line". Bad options name "options.<field>".
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "core/topology/spec.h"

namespace phalanx {

struct SlurmReadOptions {
  int gpus_per_node = 0;                    // > 0: GPUs of nodes without gres; allows partial nodes
  std::string node_model = "dgx-h100";      // built-in model of every node
  std::string gres_text;                    // gres.conf and/or slurm.conf NodeName lines (optional)
  std::string gres_filename = "gres.conf";  // how errors in gres_text name their file
  // Downlink:uplink per switch level, e.g. {{"leaf", 2.0}} for 2:1 leaves. Names as ParseLevel.
  std::vector<std::pair<std::string, double>> oversubscription_by_level;
  std::string link_speed_unit = "Gb/s";  // unit of a bare LinkSpeed number
};

Result<TopologySpec> ReadSlurmTopology(std::string_view text, std::string_view filename,
                                       const SlurmReadOptions& options);

}  // namespace phalanx
