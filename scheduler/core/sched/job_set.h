// JobSet: a set of the Scheduler's jobs in id order, each with its record, kept so that a pass
// can walk tens of thousands of them without a lookup or a tree walk per job (both were cache
// misses that cost as much as scheduling the job). Two of them: the pending (and held) jobs, and
// the active (running or checkpointing) ones.
//
// A sorted vector: an id above every other is appended; any other insertion waits, unsorted, for
// the next walk (jobs start in queue order, not id order: inserting each in place moved half the
// set); erasures are marked and dropped at the next walk. The records belong to the Scheduler's
// jobs_ (a std::map that never erases, so they never move).
// Thread-safety: none; the Scheduler's thread only. An insertion during a walk invalidates it
// (walk a copy to start or requeue jobs on the way).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

#include "core/common/ids.h"

namespace phalanx {

struct JobRecord;

class JobSet {
 public:
  using Entry = std::pair<JobId, JobRecord*>;  // second == nullptr: erased, dropped by Walk

  // O(1); a job already in the set stays as it is (O(log n + inserted since the last walk) to
  // find out, unless the id is above every other).
  void Insert(JobId id, JobRecord* job) {
    if (added_.empty() && (entries_.empty() || entries_.back().first < id)) {
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
    if (std::any_of(added_.begin(), added_.end(), [id](const Entry& e) { return e.first == id; })) return;
    added_.emplace_back(id, job);
  }
  // O(log n + inserted since the last walk); nothing if the job is not in the set.
  void Erase(JobId id) {
    auto it = Position(id);
    if (it != entries_.end() && it->first == id) {
      if (it->second == nullptr) return;
      it->second = nullptr;
      ++erased_;
      return;
    }
    auto a = std::find_if(added_.begin(), added_.end(), [id](const Entry& e) { return e.first == id; });
    if (a == added_.end()) return;
    *a = added_.back();
    added_.pop_back();
  }
  // The job's record, or nullptr if it is not in the set. O(log n + inserted since the last walk).
  JobRecord* Find(JobId id) const {
    auto it =
        std::lower_bound(entries_.begin(), entries_.end(), id, [](const Entry& e, JobId x) { return e.first < x; });
    if (it != entries_.end() && it->first == id) return it->second;
    for (const Entry& e : added_) {
      if (e.first == id) return e.second;
    }
    return nullptr;
  }
  bool Contains(JobId id) const { return Find(id) != nullptr; }
  size_t size() const { return entries_.size() - erased_ + added_.size(); }
  bool empty() const { return size() == 0; }
  // Every job in the set, in id order (erasures dropped and insertions merged first: O(n) once
  // after changes). Logically const: only the representation changes.
  const std::vector<Entry>& Walk() const {
    if (erased_ > 0) {
      std::erase_if(entries_, [](const Entry& e) { return e.second == nullptr; });
      erased_ = 0;
    }
    if (!added_.empty()) {
      std::sort(added_.begin(), added_.end());
      const auto middle = static_cast<std::ptrdiff_t>(entries_.size());
      entries_.insert(entries_.end(), added_.begin(), added_.end());
      std::inplace_merge(entries_.begin(), entries_.begin() + middle, entries_.end());
      added_.clear();
    }
    return entries_;
  }

 private:
  std::vector<Entry>::iterator Position(JobId id) {
    return std::lower_bound(entries_.begin(), entries_.end(), id, [](const Entry& e, JobId x) { return e.first < x; });
  }

  mutable std::vector<Entry> entries_;  // sorted by id
  mutable size_t erased_ = 0;           // entries with a nullptr record
  mutable std::vector<Entry> added_;    // inserted out of order since the last walk, unsorted
};

}  // namespace phalanx
