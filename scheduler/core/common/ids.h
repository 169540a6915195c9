// Strong scalar ids used across the core. A DomainId, GpuId or NodeId is an index into the
// arrays of one Topology and means nothing outside it.
#pragma once

#include <cstdint>
#include <functional>

namespace phalanx {

template <typename Tag>
struct StrongId {
  uint32_t value = kInvalid;
  static constexpr uint32_t kInvalid = 0xffffffffu;

  constexpr StrongId() = default;
  constexpr explicit StrongId(uint32_t v) : value(v) {}
  constexpr bool valid() const { return value != kInvalid; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

using DomainId = StrongId<struct DomainTag>;  // any vertex of the topology tree
using GpuId = StrongId<struct GpuTag>;        // global GPU index, in depth-first order
using NodeId = StrongId<struct NodeTag>;      // global node index, in depth-first order

// Job ids come from the service; 0 is never a job.
using JobId = uint64_t;
inline constexpr JobId kNoJob = 0;

}  // namespace phalanx

template <typename Tag>
struct std::hash<phalanx::StrongId<Tag>> {
  size_t operator()(phalanx::StrongId<Tag> id) const noexcept { return std::hash<uint32_t>{}(id.value); }
};
