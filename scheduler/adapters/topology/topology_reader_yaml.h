// The native Phalanx cluster format (YAML) -> TopologySpec.
//
// Written for admins; config/topologies/*.yaml are fully commented examples. In short:
//
//   version: 1                     # optional; only 1 exists
//   cluster: my-cluster            # name shown in summaries
//   models:                        # node models by name (optional for built-in ones)
//     h100: {builtin: dgx-h100}    # a built-in model (overrides: nics, nic_speed, nic_type, nvl_speed)
//     pcie-box:                    # or a full description of the inside of a node
//       gpus: 8
//       nics: 2
//       nic_speed: 200Gb/s
//       groups:                    # nested groups: kind, gpus, gpu_link, uplink, children, ...
//         - {kind: numa, uplink: 40GB/s, children: [...]}
//   fabric:                        # one switch (or a list of them) with nested children
//     name: spine
//     level: spine                 # leaf | spine | core | nvl (and the aliases of ParseLevel)
//     children:
//       - {name: leaf0, level: leaf, rail_optimized: true, oversubscription: 2,
//          nodes: "dgx[001-032]", model: h100}
//   # or, instead of models + fabric:
//   generate: superpod:4           # any name GenerateByName() accepts
//
// The returned spec has been checked with Topology::Build. Every error names "file:line" and
// the field path and value: "demo.yaml:12: fabric.children[0].level: unknown level 'lef' ...".
// Fails on: YAML syntax errors, unknown keys, duplicate keys, wrong types, bad numbers or
// bandwidth units, unknown levels/models/link types, bad hostlists, and everything
// Topology::Build rejects (duplicate names, levels that do not grow upwards, ...).
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "core/common/result.h"
#include "core/topology/spec.h"

namespace phalanx {

Result<TopologySpec> ReadTopologyYaml(std::string_view text, std::string_view filename);

}  // namespace phalanx
