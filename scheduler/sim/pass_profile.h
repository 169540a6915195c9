// PassProfile: where a replay's time goes (SimOptions::pass_profile, `phalanx sim
// --pass-profile`). Every pass, the wall-clock seconds spent in Scheduler::Schedule, counted by
// the pending queue's length as the pass began, by what asked for the pass, and by the simulated
// time since the pass before. The counts are exact and repeatable; the seconds are the machine's
// (for finding the slow passes, never for comparing machines: docs/performance.md).
// Thread-safety: none; one replay.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/common/time.h"

namespace phalanx {

struct PassProfile {
  // What asked for a pass, from the events of its time: submissions only; job ends (with or
  // without other events, no submission); both; neither (checkpoints, wakes, node events, a
  // requeued job's release).
  enum Cause : uint8_t { kSubmissions, kEnds, kSubmissionsAndEnds, kOther, kCauses };
  static constexpr uint8_t kAskSubmit = 1, kAskEnd = 2;  // the bits a pass's events set (Add)
  // Pending jobs as the pass began: 0, 1-7, 8-31, 32-127, 128-511, 512-2047, 2048 and more.
  static constexpr size_t kQueueBands = 7;
  // Simulated seconds since the pass before: at most 1, 5, 30, 300, more (the first pass: more).
  static constexpr size_t kGapBands = 5;

  struct Cell {
    uint64_t passes = 0;
    double seconds = 0;
  };
  std::array<Cell, kQueueBands> by_queue{};
  std::array<Cell, kCauses> by_cause{};
  std::array<Cell, kGapBands> by_gap{};

  // One pass at `now` with `pending` jobs pending, asked for by events with the bits `asked`
  // (kAskSubmit, kAskEnd), that took `seconds`.
  void Add(Time now, size_t pending, uint8_t asked, double seconds);

 private:
  Time last_ = -1;  // the last pass's time (-1: none yet)
};

// The profile as a text table under `policy`'s name: passes, seconds and milliseconds a pass,
// per band and cause.
std::string FormatPassProfile(const std::string& policy, const PassProfile& p);

}  // namespace phalanx
