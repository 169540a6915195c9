// FailureFrontier: the (GPUs, walltime) of the jobs of one shape that failed to start in a pass,
// kept as the failures no other one covers, so that asking whether a job is covered (a failure
// of no more GPUs and no longer walltime exists: the job fails too, since resources only shrink
// during a pass) is a binary search, not a scan of every failure (a long queue gathers
// hundreds, walltimes differing job by job).
//
// Kept in GPU order, GPUs strictly ascending and walltimes strictly descending: the failures
// of at most n GPUs are a prefix, and the shortest walltime among them is the prefix's last.
// Pure; no thread-safety.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/common/time.h"

namespace phalanx {

class FailureFrontier {
 public:
  // A failure of at most `gpus` GPUs and at most `walltime`.
  bool Covers(uint32_t gpus, Duration walltime) const {
    // Most jobs asked about are of the fewest GPUs that failed (one GPU, mostly): no search.
    if (front_.empty() || gpus < front_[0].first) return false;
    if (front_.size() == 1 || gpus < front_[1].first) return front_[0].second <= walltime;
    auto it = std::upper_bound(front_.begin(), front_.end(), gpus,
                               [](uint32_t g, const std::pair<uint32_t, Duration>& f) { return g < f.first; });
    return it != front_.begin() && std::prev(it)->second <= walltime;
  }
  void Add(uint32_t gpus, Duration walltime) {
    if (Covers(gpus, walltime)) return;
    // Those of at least `gpus` GPUs and at least `walltime` are covered by this one from now on:
    // a run from the first of at least `gpus` GPUs (walltimes descend along the run).
    auto first = std::lower_bound(front_.begin(), front_.end(), gpus,
                                  [](const std::pair<uint32_t, Duration>& f, uint32_t g) { return f.first < g; });
    auto last = first;
    while (last != front_.end() && last->second >= walltime) ++last;
    front_.insert(front_.erase(first, last), {gpus, walltime});
  }
  size_t size() const { return front_.size(); }

 private:
  std::vector<std::pair<uint32_t, Duration>> front_;
};

}  // namespace phalanx
