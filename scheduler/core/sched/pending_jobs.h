// PendingJobs: the Scheduler's pending (and held) jobs in id order, each with its record, kept
// so that a pass can walk tens of thousands of them without a lookup or a tree walk per job
// (both were cache misses that cost as much as scheduling the job): a sorted vector whose
// erasures are marked and dropped at the next walk. The records belong to the Scheduler's jobs_
// (a std::map that never erases, so they never move).
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "core/common/ids.h"

namespace phalanx {

struct JobRecord;

class PendingJobs {
 public:
  using Entry = std::pair<JobId, JobRecord*>;  // second == nullptr: erased, dropped by Walk

  // O(1) for an id above every other (new submissions), else O(n) (requeues, restores out of
  // order). A job already in the set stays as it is.
  void Insert(JobId id, JobRecord* job) {
    if (entries_.empty() || entries_.back().first < id) {
      entries_.emplace_back(id, job);
      return;
    }
    auto it = Position(id);
    if (it != entries_.end() && it->first == id) {
      if (it->second == nullptr) {
        it->second = job;
        --erased_;
      }
      return;
    }
    entries_.insert(it, Entry{id, job});
  }
  // O(log n); nothing if the job is not in the set.
  void Erase(JobId id) {
    auto it = Position(id);
    if (it == entries_.end() || it->first != id || it->second == nullptr) return;
    it->second = nullptr;
    ++erased_;
  }
  // The job's record, or nullptr if it is not in the set. O(log n).
  JobRecord* Find(JobId id) const {
    auto it =
        std::lower_bound(entries_.begin(), entries_.end(), id, [](const Entry& e, JobId x) { return e.first < x; });
    return it != entries_.end() && it->first == id ? it->second : nullptr;
  }
  bool Contains(JobId id) const { return Find(id) != nullptr; }
  size_t size() const { return entries_.size() - erased_; }
  // Every job in the set, in id order (erased entries dropped first: O(n) once after erasures).
  const std::vector<Entry>& Walk() {
    if (erased_ > 0) {
      std::erase_if(entries_, [](const Entry& e) { return e.second == nullptr; });
      erased_ = 0;
    }
    return entries_;
  }

 private:
  std::vector<Entry>::iterator Position(JobId id) {
    return std::lower_bound(entries_.begin(), entries_.end(), id, [](const Entry& e, JobId x) { return e.first < x; });
  }

  std::vector<Entry> entries_;  // sorted by id
  size_t erased_ = 0;           // entries with a nullptr record
};

}  // namespace phalanx
