#include "core/topology/level.h"

#include <array>
#include <utility>

namespace phalanx {

std::string_view LevelName(Level level) {
  static constexpr std::array<std::string_view, kLevelCount> kNames = {"gpu",  "group", "node", "nvl",
                                                                       "leaf", "spine", "core"};
  return kNames[static_cast<size_t>(level)];
}

std::optional<Level> ParseLevel(std::string_view name) {
  static constexpr std::pair<std::string_view, Level> kTable[] = {
      {"gpu", Level::kGpu},   {"group", Level::kGroup},   {"nvlink", Level::kGroup},        {"nvswitch", Level::kGroup},
      {"node", Level::kNode}, {"nvl", Level::kNvlDomain}, {"nvldomain", Level::kNvlDomain}, {"rack", Level::kNvlDomain},
      {"leaf", Level::kLeaf}, {"su", Level::kLeaf},       {"spine", Level::kSpine},         {"core", Level::kCore},
      {"any", Level::kCore},
  };
  for (const auto& [text, level] : kTable) {
    if (text == name) return level;
  }
  return std::nullopt;
}

std::string_view LinkTypeName(LinkType type) {
  switch (type) {
    case LinkType::kNone: return "none";
    case LinkType::kNvlink: return "nvlink";
    case LinkType::kPcie: return "pcie";
    case LinkType::kSmp: return "smp";
    case LinkType::kInfiniband: return "ib";
    case LinkType::kEthernet: return "ethernet";
  }
  return "none";
}

std::optional<LinkType> ParseLinkType(std::string_view name) {
  for (LinkType t : {LinkType::kNone, LinkType::kNvlink, LinkType::kPcie, LinkType::kSmp, LinkType::kInfiniband,
                     LinkType::kEthernet}) {
    if (LinkTypeName(t) == name) return t;
  }
  if (name == "infiniband") return LinkType::kInfiniband;
  if (name == "roce" || name == "eth") return LinkType::kEthernet;
  return std::nullopt;
}

}  // namespace phalanx
