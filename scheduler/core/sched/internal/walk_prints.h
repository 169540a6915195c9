// WalkPrints: the fingerprint (Topology::fingerprint) each domain a Reserve walk searches would
// have at the walk's time t, kept apart from the Topology, which holds now's state in every
// domain the walk has not brought to t: the fingerprint as the walk began, and the change since
// (the GPUs whose state at t, free and not held, differs from now's, and the crossing loads of
// the jobs released by t). A walk looks a domain's miss up in the Placer's memory by it without
// bringing the domain to t (reserve.cc, `prints`).
// The storage is kept from walk to walk of a pass; the load changes are all zero between walks.
// The load part alone (the jobs released so far) can be kept and given to a later walk over the
// same domains that starts from the same releases (reserve.cc, JumpToFloor).
// Pure; no thread-safety.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/topology/topology.h"

namespace phalanx {

class WalkPrints {
 public:
  // No domain above the ones kept (Unload's `top_of`).
  static constexpr uint32_t kNone = ~uint32_t{0};

  // A walk's start: the fingerprints of `tops` as the Topology has them now, no change yet.
  void Begin(const Topology& topo, std::span<const DomainId> tops) {
    print_.resize(tops.size());
    change_.assign(tops.size(), {});
    unloaded_.assign(tops.size(), {});
    for (size_t i = 0; i < tops.size(); ++i) print_[i] = topo.fingerprint(tops[i]);
    if (change_mbs_.size() != topo.domain_count()) {
      base_mbs_.assign(topo.domain_count(), 0);
      change_mbs_.assign(topo.domain_count(), 0);
      base_jobs_.assign(topo.domain_count(), 0);
      change_jobs_.assign(topo.domain_count(), 0);
    }
  }

  // The fingerprint of the walk's domain `top` at t.
  Topology::Fingerprint At(uint32_t top) const {
    return {print_[top].a ^ change_[top].a ^ unloaded_[top].a, print_[top].b ^ change_[top].b ^ unloaded_[top].b};
  }

  // GPU g, in domain `top`, became free and not held at t, or stopped being so.
  void FlipGpu(const Topology& topo, uint32_t top, GpuId g) { Change(top, topo.gpu_key(g)); }

  // A job released by t: its ring no longer loads the uplinks it crosses. `top_of(d)` is the
  // walk's domain whose fingerprint a crossing load at Topology domain d is part of, or kNone.
  template <class TopOf>
  void Unload(const Topology& topo, const Topology::RingLoad& ring, TopOf&& top_of) {
    for (DomainId d : ring.crossed) {
      const uint32_t i = d.value;
      if (change_jobs_[i] == 0) {  // first changed by this walk (a change takes a job away)
        touched_.push_back(i);
        base_mbs_[i] = topo.crossing_mbs(d);
        base_jobs_[i] = topo.crossing_jobs(d);
      }
      const Topology::Fingerprint before =
          topo.load_key(d, base_mbs_[i] + change_mbs_[i], base_jobs_[i] + change_jobs_[i]);
      change_mbs_[i] -= ring.mbs;
      change_jobs_[i] -= 1;
      const Topology::Fingerprint after =
          topo.load_key(d, base_mbs_[i] + change_mbs_[i], base_jobs_[i] + change_jobs_[i]);
      if (const uint32_t top = top_of(d); top != kNone) {
        unloaded_[top].a ^= before.a ^ after.a;
        unloaded_[top].b ^= before.b ^ after.b;
      }
    }
  }

  // The load changes of the jobs released so far: kept with a walk's releases, and taken by a
  // walk over the same domains, in a Topology of the same crossing loads, before its first Unload.
  struct Loads {
    std::vector<Topology::Fingerprint> unloaded;  // by domain of the walk
    std::vector<uint32_t> touched;                // Topology domains, and their loads: by entry
    std::vector<int64_t> base_mbs, change_mbs;
    std::vector<uint32_t> base_jobs, change_jobs;
  };
  void KeepLoads(Loads& out) const {
    out.unloaded = unloaded_;
    out.touched = touched_;
    out.base_mbs.clear();
    out.change_mbs.clear();
    out.base_jobs.clear();
    out.change_jobs.clear();
    for (uint32_t d : touched_) {
      out.base_mbs.push_back(base_mbs_[d]);
      out.change_mbs.push_back(change_mbs_[d]);
      out.base_jobs.push_back(base_jobs_[d]);
      out.change_jobs.push_back(change_jobs_[d]);
    }
  }
  void TakeLoads(const Loads& in) {
    unloaded_ = in.unloaded;
    touched_ = in.touched;
    for (size_t i = 0; i < touched_.size(); ++i) {
      const uint32_t d = touched_[i];
      base_mbs_[d] = in.base_mbs[i];
      change_mbs_[d] = in.change_mbs[i];
      base_jobs_[d] = in.base_jobs[i];
      change_jobs_[d] = in.change_jobs[i];
    }
  }

  // The walk returns: the load changes back to zero.
  void End() {
    for (uint32_t d : touched_) {
      change_mbs_[d] = 0;
      change_jobs_[d] = 0;
    }
    touched_.clear();
  }

 private:
  void Change(uint32_t top, Topology::Fingerprint f) {
    change_[top].a ^= f.a;
    change_[top].b ^= f.b;
  }

  // By domain of the walk: its fingerprint as the walk began, and the change since: of its GPUs
  // (FlipGpu), and of its crossing loads (Unload).
  std::vector<Topology::Fingerprint> print_, change_, unloaded_;
  // By Topology domain: the crossing load when the walk first changed it, and the change since;
  // `touched_` lists those changed.
  std::vector<int64_t> base_mbs_, change_mbs_;
  std::vector<uint32_t> base_jobs_, change_jobs_;
  std::vector<uint32_t> touched_;
};

}  // namespace phalanx
