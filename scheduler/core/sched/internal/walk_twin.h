// WalkTwin: a second Topology in which Reserve's walks that bring the whole Topology to their
// time (reserve.cc, GoLive) do so, and which each leaves as it was at its end. Under a long queue
// one pass walks for hundreds of jobs, and almost every walk goes live with nearly the jobs and
// GPUs the one before it had released and held (ITP x4, counted: 879k of 900k walks went live
// on a Topology unchanged since the walk before; their releases differed by 4% of the jobs and
// their holds by 10% of the GPUs). Going live and undoing it in the Scheduler's Topology was a
// quarter of the replay; here a walk changes only the difference (WhatIf::Retarget), and the
// Scheduler's Topology stays as it is now for everything else a pass reads between walks.
//
// The twin is made the Scheduler's Topology again whenever that one has changed since
// (Topology::version: a job started or ended, a node changed state): its what-if undone, the
// same changes made (the Scheduler's Topology keeps a journal of them for it), or copied anew.
// Its Placer answers as the Scheduler's does on the same state (the same parameters; its
// memory of misses is its own).
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <cstdint>

#include "core/placement/placer.h"
#include "core/sched/internal/what_if.h"
#include "core/topology/topology.h"

namespace phalanx {

struct WalkTwin {
  // A copy of `now` (which has no what-if in force), and `now` keeps the journal of its changes
  // from here on.
  WalkTwin(Topology& now, const Placer& like, ModelParams params)
      : topo(now), placer(topo, params), what_if(topo, buffers), version(now.version()) {
    placer.set_best_fit(like.best_fit());
    placer.set_node_fit_tolerance(like.node_fit_tolerance());
    topo.StopJournal();
    now.StartJournal();
  }
  WalkTwin(const WalkTwin&) = delete;
  WalkTwin& operator=(const WalkTwin&) = delete;

  // Makes the twin `now` (which has no what-if in force), if `now` changed since it last was:
  // the what-if undone and `now`'s changes since made again (Topology::journal), or, when they
  // were too many, a copy of `now`.
  void Sync(Topology& now) {
    if (version == now.version()) return;
    if (!now.journal_full()) {
      what_if.Undo();
      bool same = true;
      for (const Topology::Change& c : now.journal()) same = same && topo.Replay(c);
      now.ClearJournal();
      if (same) {
        version = now.version();
        return;
      }
    }
    what_if.Forget();
    ++copies;
    topo = now;
    topo.StopJournal();
    now.StartJournal();
    version = now.version();
  }

  Topology topo;
  Placer placer;  // over `topo`
  WhatIf::Buffers buffers;
  WhatIf what_if;       // over `topo`: the last walk's releases and holds, in force
  uint64_t version;     // the Scheduler's Topology::version that `topo` (less `what_if`) is
  uint64_t copies = 0;  // Syncs that copied `now` (its journal full, or a change not replayed)
};

}  // namespace phalanx
