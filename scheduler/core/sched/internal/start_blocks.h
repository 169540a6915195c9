// StartBlocks: the reservations a job must not touch if it starts now, held in the Topology
// (Topology::Hold) while the pass asks the Placer. A job that starts now and would end at `end`
// must stay off the GPUs of every reservation that begins before `end`; in start order, those
// reservations are a prefix of the pass's reservations, kept applied from one job to the next so
// that each job only adds or takes away the difference, and a reservation made meanwhile is
// added to the prefix in place (under a long queue every held-back job makes one, between two
// jobs that want nearly the same prefix).
//
// The GPUs held are those of the applied reservations that are free (no job owns them): a count
// per GPU of the applied reservations listing it, held while above zero. A GPU that comes free
// for good while held ones are kept (Topology::frees) has every block made anew.
// One per pass (PassState). Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/sched/scheduler.h"
#include "core/topology/topology.h"

namespace phalanx {

class StartBlocks {
 public:
  explicit StartBlocks(Topology& t) : t_(t) {}
  StartBlocks(const StartBlocks&) = delete;
  StartBlocks& operator=(const StartBlocks&) = delete;
  ~StartBlocks() { Clear(); }

  // Blocks the GPUs of every reservation in `reservations` that begins before `end`, except
  // those of job `except` (a preemptor is not blocked by its own claim).
  void Set(const std::vector<Reservation>& reservations, Time end, JobId except);
  // Gives every blocked GPU back.
  void Clear();
  // Clear, and forget the start order: the reservations changed other than by one appended.
  void Invalidate() {
    Clear();
    order_dirty_ = true;
  }
  // The reservations appended to `reservations` since the order was made (AddReservation):
  // placed in the start order, and blocked at once when they begin before the last Set's end.
  void Appended(const std::vector<Reservation>& reservations);
  // GPUs currently blocked (all of them free otherwise).
  size_t blocked_gpus() const { return held_; }
  // Whether GPU g is blocked here (owned by Topology::kHeld for a reservation).
  bool blocks(GpuId g) const { return g.value < mine_.size() && mine_[g.value] != 0; }

 private:
  // Applies the prefix of the order that begins before `end`, from the one applied.
  void ApplyTo(const std::vector<Reservation>& reservations, Time end);
  void Want(const std::vector<GpuId>& gpus);
  void Unwant(const std::vector<GpuId>& gpus);

  Topology& t_;
  std::vector<size_t> order_;  // indices into the reservations, by start time (ties: by index)
  size_t applied_ = 0;         // applied: order_[0..applied_), those beginning before applied_end_
  Time applied_end_ = -kForever;
  bool order_dirty_ = true;
  std::vector<uint32_t> wants_;  // per GPU: applied reservations listing it
  std::vector<uint8_t> mine_;    // per GPU: held here
  std::vector<uint8_t> listed_;  // per GPU: in wanted_
  std::vector<GpuId> wanted_;    // every GPU wanted since the last Clear, once
  std::vector<GpuId> changed_;   // the GPUs to hold or give back
  size_t held_ = 0;
  uint64_t frees_ = 0;  // Topology::frees() when the blocks were last all made anew
};

}  // namespace phalanx
