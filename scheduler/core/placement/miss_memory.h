// MissMemory: the domains where a placement search found nothing, remembered by the request and
// the domain's state (Topology::fingerprint: its free GPUs and crossing loads, which is all a
// search confined to it reads), so that a domain seen again in the same state need not be
// searched again (Placer::Place, docs/placement.md "Remembered misses").
//
// A direct-mapped table of 128-bit keys, made at the first Remember: 512 slots per GPU, a power
// of two from 4 Ki to 1 Mi slots (16 B each). A key that another overwrote is forgotten, which
// costs only a search. Domains inside a node have no fingerprint of their own: never remembered.
// Thread-safety: none (one per Placer, used serially).
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/ids.h"
#include "core/topology/topology.h"

namespace phalanx {

struct PlacementRequest;

class MissMemory {
 public:
  struct Key {
    uint64_t a = 0, b = 0;  // {0, 0}: an empty slot
    bool operator==(const Key&) const = default;
  };

  explicit MissMemory(const Topology& topology) : topo_(topology) {}

  // The request's part of every key: all of its fields, in two independent hash chains.
  static Key Of(const PlacementRequest& request);
  // Whether a search for `request` (its Of) found nothing in `d` in the state `d` is in now.
  bool Known(Key request, DomainId d) const;
  // Whether it found nothing in `d` in a state of fingerprint `fp` (Topology::fingerprint of
  // that state, which the Topology need not be in).
  bool Known(Key request, DomainId d, Topology::Fingerprint fp) const;
  void Remember(Key request, DomainId d);

 private:
  // The slot's key: request, domain and fingerprint (d's now, or `fp`).
  Key At(Key request, DomainId d) const;
  static Key At(Key request, DomainId d, Topology::Fingerprint fp);

  const Topology& topo_;
  std::vector<Key> slots_;
};

}  // namespace phalanx
