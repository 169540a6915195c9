// Planner: how many units of one resource (the GPUs of one domain) are free at every second
// from an origin on, given spans reserved over time. The leaf library of backfill reservations,
// after Fluxion's resource/planner: exact integer semantics, no graph, no placement.
//
// Model. Time is integer seconds (core/common/time.h). A span reserves `count` units over the
// half-open interval [start, start + duration). used(t) = the sum of the counts of the spans
// covering t, avail(t) = total() - used(t), always in [0, total()]: a span that would drive it
// below 0 anywhere is refused. The horizon is [origin(), kForever): spans lie inside it, and a
// search never answers a window that ends after kForever. The planner knows nothing before
// origin(); every query at a time t < origin() answers as at origin().
// A span boundary (a "point") is the effective start max(start, origin()) or the end of a live
// span; points are where availability may change, and where AvailTimeNext looks.
//
// Capacity. total() is fixed. A capacity change (a node going down or draining) is a span that
// holds the lost units until kForever (AddCapacityLoss); the capacity comes back when that span
// is removed. Like any span it must fit: first remove the spans of jobs killed on the lost
// units, or, for a drain, start each unit's loss when its job ends.
//
// Data structure. A treap keyed by point time holding the net change of used() at that point;
// every subtree keeps the sum of its changes and the max/min prefix sum, so a prefix (used at t),
// a window maximum and "first point after x whose used is above / at most a limit" are single
// O(log P) descents. Priorities are a hash of the time (no randomness): the tree's shape depends
// only on the set of points, so every run with the same calls is identical.
//
// Complexity, P = points (<= 2 x spans + 1), S = live spans, B = busy stretches a search has to
// skip (B <= P / 2, usually 0-2):
//   AddSpan, RemoveSpan, AddCapacityLoss               O(log P + log S) expected
//   AvailAt, AvailDuring                               O(log P) expected
//   AvailTimeFirst, AvailTimeNext                      O((1 + B) log P) expected
//   AdvanceTo(now), dropping k spans, folding f points  O((k + f) log P + k log S)
//
// Contract: a call that fails returns an Error and changes nothing. Copyable (a copy is an
// independent what-if plan). Thread-safety: none; const methods may run concurrently with each
// other, never with a mutating call.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "core/common/time.h"

namespace phalanx {

// Names one span of one Planner; ids are never reused. 0 is never a span.
struct SpanId {
  uint64_t value = 0;
  friend constexpr auto operator<=>(SpanId, SpanId) = default;
};

class Planner {
 public:
  // `total` units (< 0 is taken as 0), nothing reserved, horizon [origin, kForever).
  // `origin` is clamped to [-kForever, kForever].
  Planner(int64_t total, Time origin);

  int64_t total() const { return total_; }
  Time origin() const { return origin_; }
  size_t span_count() const { return spans_.size(); }
  size_t point_count() const { return node_count_; }

  // Reserves `count` units over [start, start + duration). Fails, changing nothing, when
  // duration <= 0, count < 0 or count > total(), start < origin(), start + duration > kForever,
  // or fewer than `count` units are free somewhere in the window (the error names the first
  // such second and what is free there).
  Result<SpanId> AddSpan(Time start, Duration duration, int64_t count);

  // `count` units leave the pool from `from` on: AddSpan(from, kForever - from, count).
  Result<SpanId> AddCapacityLoss(Time from, int64_t count);

  // Frees a span. Fails only on an unknown id (never added, removed, or dropped by AdvanceTo).
  Status RemoveSpan(SpanId span);

  // Free units at second t.
  int64_t AvailAt(Time t) const;
  // The fewest free units at any second of [start, start + duration); duration < 1 counts as 1.
  int64_t AvailDuring(Time start, Duration duration) const;

  // The earliest t >= at (t >= origin()) with `count` units free during all of
  // [t, t + duration), t + duration <= kForever and t <= latest. It is `at` or a point.
  // nullopt when there is none: also when count < 0, count > total() or duration < 1.
  std::optional<Time> AvailTimeFirst(Time at, Duration duration, int64_t count, Time latest = kForever) const;

  // The earliest point t > after with the same property: the candidates after a rejected one.
  // AvailTimeFirst(at, ...), then AvailTimeNext(previous, ...) repeatedly, lists every start time
  // worth trying in increasing order: availability (and which spans hold the units) changes
  // only at points. nullopt when none is left (same argument rules as AvailTimeFirst).
  std::optional<Time> AvailTimeNext(Time after, Duration duration, int64_t count, Time latest = kForever) const;

  // Moves the origin to `now` (a no-op when now <= origin()): spans that end at or before `now`
  // are dropped (their ids become unknown), spans running across `now` keep their ids and
  // start at `now` from then on, and the points before `now` are folded into one. Every query
  // at t >= now answers exactly as before.
  void AdvanceTo(Time now);

 private:
  struct Span {
    Time start = 0;  // as added; effective start is max(start, origin_)
    Time end = 0;
    int64_t count = 0;
  };
  // A point of the treap. delta: net change of used() at `time`; refs: span boundaries at
  // `time` (the node exists while refs > 0). sum / max_prefix / min_prefix: over the subtree,
  // in time order (prefix sums of non-empty prefixes).
  struct Node {
    Time time = 0;
    int64_t delta = 0;
    int64_t refs = 0;
    uint64_t priority = 0;
    int32_t left = -1, right = -1;
    int64_t sum = 0, max_prefix = 0, min_prefix = 0;
  };

  // Search from candidate `t` on; `t` must be >= origin_. limit = total_ - count.
  std::optional<Time> Search(Time t, Duration duration, int64_t limit, Time last_start) const;

  // Treap primitives.
  int32_t NewNode(Time time);
  void FreeSubtree(int32_t n, int64_t& delta, int64_t& refs);
  void Pull(int32_t n);
  std::pair<int32_t, int32_t> Split(int32_t n, Time key);  // (< key, >= key)
  int32_t Merge(int32_t a, int32_t b);
  void AddPoint(Time time, int64_t delta, int64_t refs);

  int64_t Used(Time t) const;               // sum of deltas at points <= t
  int64_t MaxUsed(Time lo, Time hi) const;  // max used over [lo, hi), hi > lo
  std::optional<Time> FirstPointAfter(Time after) const;
  template <bool kAbove>  // first point > after with used > limit (kAbove) or <= limit
  std::optional<Time> FirstPrefix(Time after, int64_t limit) const;
  template <bool kAbove>
  std::optional<Time> FirstPrefixIn(int32_t n, Time after, int64_t limit, int64_t acc) const;
  template <bool kAbove>
  Time FirstPrefixAll(int32_t n, int64_t limit, int64_t acc) const;

  int64_t total_;
  Time origin_;
  uint64_t next_span_ = 1;
  std::map<uint64_t, Span> spans_;
  std::set<std::pair<Time, uint64_t>> by_end_;  // (end, id) of live spans, for AdvanceTo
  std::vector<Node> nodes_;                     // treap pool; free slots in free_
  std::vector<int32_t> free_;
  int32_t root_ = -1;
  size_t node_count_ = 0;
};

}  // namespace phalanx
