// Levels of the topology tree, bottom-up, and the kinds of links between them.
//
// A cluster is a tree: GPU -> intra-node group(s) -> node -> [multi-node NVLink domain] ->
// leaf / scalable unit -> spine(s) -> core. Not every cluster has every level; groups may nest
// (a PCIe switch inside a NUMA socket). Level order is what "fit within level L" compares.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace phalanx {

enum class Level : uint8_t {
  kGpu = 0,
  kGroup = 1,  // NVLink pair/quad, PCIe switch, NUMA socket, or a full NVSwitch
  kNode = 2,
  kNvlDomain = 3,  // multi-node NVLink domain, e.g. a GB200 NVL72 rack
  kLeaf = 4,       // IB leaf switch, or a rail-optimized scalable unit
  kSpine = 5,
  kCore = 6,
};
inline constexpr int kLevelCount = 7;

// "gpu", "group", "node", "nvl", "leaf", "spine", "core".
std::string_view LevelName(Level level);
// Accepts the names above plus aliases: "nvlink" and "nvswitch" (group), "nvldomain", "rack"
// (nvl), "su" (leaf), "any" (core). nullopt for anything else.
std::optional<Level> ParseLevel(std::string_view name);

// The physical kind of a domain's uplink. It selects the efficiency factor of the bandwidth
// model (see docs/bandwidth-model.md).
enum class LinkType : uint8_t { kNone, kNvlink, kPcie, kSmp, kInfiniband, kEthernet };
std::string_view LinkTypeName(LinkType type);
std::optional<LinkType> ParseLinkType(std::string_view name);

}  // namespace phalanx
