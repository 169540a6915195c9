#include "sim/pass_profile.h"

#include <cstdio>
#include <iterator>

namespace phalanx {

namespace {

size_t QueueBand(size_t pending) {
  if (pending == 0) return 0;
  size_t band = 1;
  for (size_t top = 8; band + 1 < PassProfile::kQueueBands && pending >= top; top *= 4) ++band;
  return band;
}

size_t GapBand(Time gap) {
  constexpr Time kTops[] = {1, 5, 30, 300};
  size_t band = 0;
  while (band < std::size(kTops) && gap > kTops[band]) ++band;
  return band;
}

void Line(std::string& out, const char* label, const PassProfile::Cell& c) {
  if (c.passes == 0) return;
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %-28s %10llu %10.1f %10.3f\n", label, static_cast<unsigned long long>(c.passes),
                c.seconds, 1000.0 * c.seconds / static_cast<double>(c.passes));
  out += buf;
}

}  // namespace

void PassProfile::Add(Time now, size_t pending, uint8_t asked, double seconds) {
  const bool submit = (asked & kAskSubmit) != 0, end = (asked & kAskEnd) != 0;
  const Cause cause = submit && end ? kSubmissionsAndEnds : submit ? kSubmissions : end ? kEnds : kOther;
  const size_t gap = last_ < 0 ? kGapBands - 1 : GapBand(now - last_);
  last_ = now;
  for (Cell* c : {&by_queue[QueueBand(pending)], &by_cause[cause], &by_gap[gap]}) {
    ++c->passes;
    c->seconds += seconds;
  }
}

std::string FormatPassProfile(const std::string& policy, const PassProfile& p) {
  std::string out = "pass profile, " + policy + " (wall-clock seconds in Scheduler::Schedule)\n";
  char head[128];
  std::snprintf(head, sizeof head, "  %-28s %10s %10s %10s\n", "", "passes", "seconds", "ms/pass");
  out += head;
  static constexpr const char* kQueue[] = {"pending 0",       "pending 1-7",      "pending 8-31", "pending 32-127",
                                           "pending 128-511", "pending 512-2047", "pending 2048+"};
  static constexpr const char* kCause[] = {"asked by submissions", "asked by job ends", "by submissions and ends",
                                           "by other events"};
  static constexpr const char* kGap[] = {"<= 1 s after the last", "<= 5 s after", "<= 30 s after", "<= 300 s after",
                                         "later (or the first)"};
  for (size_t i = 0; i < PassProfile::kQueueBands; ++i) Line(out, kQueue[i], p.by_queue[i]);
  for (size_t i = 0; i < PassProfile::kCauses; ++i) Line(out, kCause[i], p.by_cause[i]);
  for (size_t i = 0; i < PassProfile::kGapBands; ++i) Line(out, kGap[i], p.by_gap[i]);
  return out;
}

}  // namespace phalanx
