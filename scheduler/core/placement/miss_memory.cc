#include "core/placement/miss_memory.h"

#include <algorithm>
#include <bit>

#include "core/common/hash.h"
#include "core/placement/placer.h"

namespace phalanx {

MissMemory::Key MissMemory::Of(const PlacementRequest& r) {
  const uint64_t fields[] = {r.gpus,
                             r.nodes,
                             r.gpus_per_node,
                             static_cast<uint64_t>(r.level),
                             static_cast<uint64_t>(r.fit),
                             uint64_t{r.exclusive} << 1 | uint64_t{r.rail_aligned},
                             std::bit_cast<uint64_t>(r.min_busbw_gbs)};
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
  for (uint64_t f : fields) {
    a = SplitMix64(a ^ f);
    b = SplitMix64(b + f);
  }
  return {a, b};
}

MissMemory::Key MissMemory::At(Key request, DomainId d, Topology::Fingerprint fp) {
  return {SplitMix64(request.a ^ d.value ^ fp.a), SplitMix64((request.b + d.value) ^ fp.b)};
}

MissMemory::Key MissMemory::At(Key request, DomainId d) const { return At(request, d, topo_.fingerprint(d)); }

bool MissMemory::Known(Key request, DomainId d) const { return Known(request, d, topo_.fingerprint(d)); }

bool MissMemory::Known(Key request, DomainId d, Topology::Fingerprint fp) const {
  if (slots_.empty() || topo_.domain(d).level < Level::kNode) return false;
  const Key key = At(request, d, fp);
  return slots_[key.a & (slots_.size() - 1)] == key;
}

void MissMemory::Remember(Key request, DomainId d) {
  if (topo_.domain(d).level < Level::kNode) return;
  if (slots_.empty()) slots_.resize(std::bit_ceil(std::clamp<size_t>(topo_.gpu_count() * 512, 4096, 1 << 20)));
  const Key key = At(request, d);
  slots_[key.a & (slots_.size() - 1)] = key;
}

}  // namespace phalanx
