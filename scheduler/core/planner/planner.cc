#include "core/planner/planner.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

#include "core/common/hash.h"

namespace phalanx {
namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

// Treap priority: a fixed mix of the key (splitmix64), so the shape depends only on the keys.
uint64_t PriorityOf(Time time) { return SplitMix64(static_cast<uint64_t>(time)); }

// a + b, saturated to int64 (times and durations come from callers unchecked).
int64_t AddSat(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return r;
}

std::string Window(Time start, Time end) {
  // Appends rather than "[" + to_string(...): g++ 12 -O3 warns falsely (-Wrestrict) on that.
  std::string out = "[";
  out += std::to_string(start);
  out += ", ";
  out += std::to_string(end);
  out += ")";
  return out;
}

}  // namespace

Planner::Planner(int64_t total, Time origin)
    : total_(std::max<int64_t>(total, 0)), origin_(std::clamp<Time>(origin, -kForever, kForever)) {}

// ---- treap ---------------------------------------------------------------------------------

int32_t Planner::NewNode(Time time) {
  int32_t n;
  if (!free_.empty()) {
    n = free_.back();
    free_.pop_back();
  } else {
    n = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[n] = Node{.time = time, .priority = PriorityOf(time)};
  ++node_count_;
  return n;
}

void Planner::FreeSubtree(int32_t n, int64_t& delta, int64_t& refs) {
  if (n < 0) return;
  FreeSubtree(nodes_[n].left, delta, refs);
  FreeSubtree(nodes_[n].right, delta, refs);
  delta += nodes_[n].delta;
  refs += nodes_[n].refs;
  free_.push_back(n);
  --node_count_;
}

void Planner::Pull(int32_t n) {
  Node& x = nodes_[n];
  int64_t sum = 0, hi = kNone, lo = 0;
  bool have = false;
  if (x.left >= 0) {
    const Node& l = nodes_[x.left];
    sum = l.sum;
    hi = l.max_prefix;
    lo = l.min_prefix;
    have = true;
  }
  sum += x.delta;
  hi = have ? std::max(hi, sum) : sum;
  lo = have ? std::min(lo, sum) : sum;
  if (x.right >= 0) {
    const Node& r = nodes_[x.right];
    hi = std::max(hi, sum + r.max_prefix);
    lo = std::min(lo, sum + r.min_prefix);
    sum += r.sum;
  }
  x.sum = sum;
  x.max_prefix = hi;
  x.min_prefix = lo;
}

std::pair<int32_t, int32_t> Planner::Split(int32_t n, Time key) {
  if (n < 0) return {-1, -1};
  if (nodes_[n].time < key) {
    auto [a, b] = Split(nodes_[n].right, key);
    nodes_[n].right = a;
    Pull(n);
    return {n, b};
  }
  auto [a, b] = Split(nodes_[n].left, key);
  nodes_[n].left = b;
  Pull(n);
  return {a, n};
}

int32_t Planner::Merge(int32_t a, int32_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  if (nodes_[a].priority >= nodes_[b].priority) {
    nodes_[a].right = Merge(nodes_[a].right, b);
    Pull(a);
    return a;
  }
  nodes_[b].left = Merge(a, nodes_[b].left);
  Pull(b);
  return b;
}

void Planner::AddPoint(Time time, int64_t delta, int64_t refs) {
  auto [lo, rest] = Split(root_, time);
  auto [mid, hi] = Split(rest, time + 1);
  if (mid < 0) mid = NewNode(time);
  nodes_[mid].delta += delta;
  nodes_[mid].refs += refs;
  assert(nodes_[mid].refs >= 0);
  if (nodes_[mid].refs == 0) {
    assert(nodes_[mid].delta == 0);
    free_.push_back(mid);
    --node_count_;
    mid = -1;
  } else {
    Pull(mid);
  }
  root_ = Merge(Merge(lo, mid), hi);
}

// ---- descents ------------------------------------------------------------------------------

int64_t Planner::Used(Time t) const {
  int64_t acc = 0;
  for (int32_t n = root_; n >= 0;) {
    const Node& x = nodes_[n];
    if (x.time <= t) {
      acc += (x.left >= 0 ? nodes_[x.left].sum : 0) + x.delta;
      n = x.right;
    } else {
      n = x.left;
    }
  }
  return acc;
}

int64_t Planner::MaxUsed(Time lo, Time hi) const {
  int64_t best = Used(lo);
  // Find the top node inside [lo, hi), then walk its two flanks.
  int64_t acc = 0;
  int32_t n = root_;
  while (n >= 0) {
    const Node& x = nodes_[n];
    if (x.time < lo) {
      acc += (x.left >= 0 ? nodes_[x.left].sum : 0) + x.delta;
      n = x.right;
    } else if (x.time >= hi) {
      n = x.left;
    } else {
      break;
    }
  }
  if (n < 0) return best;
  const Node& top = nodes_[n];
  const int64_t at_top = acc + (top.left >= 0 ? nodes_[top.left].sum : 0) + top.delta;
  best = std::max(best, at_top);
  // Left flank: points >= lo in top.left.
  for (int32_t m = top.left; m >= 0;) {
    const Node& x = nodes_[m];
    if (x.time >= lo) {
      const int64_t p = acc + (x.left >= 0 ? nodes_[x.left].sum : 0) + x.delta;
      best = std::max(best, p);
      if (x.right >= 0) best = std::max(best, p + nodes_[x.right].max_prefix);
      m = x.left;
    } else {
      acc += (x.left >= 0 ? nodes_[x.left].sum : 0) + x.delta;
      m = x.right;
    }
  }
  // Right flank: points < hi in top.right.
  acc = at_top;
  for (int32_t m = top.right; m >= 0;) {
    const Node& x = nodes_[m];
    if (x.time < hi) {
      if (x.left >= 0) best = std::max(best, acc + nodes_[x.left].max_prefix);
      acc += (x.left >= 0 ? nodes_[x.left].sum : 0) + x.delta;
      best = std::max(best, acc);
      m = x.right;
    } else {
      m = x.left;
    }
  }
  return best;
}

std::optional<Time> Planner::FirstPointAfter(Time after) const {
  std::optional<Time> out;
  for (int32_t n = root_; n >= 0;) {
    if (nodes_[n].time > after) {
      out = nodes_[n].time;
      n = nodes_[n].left;
    } else {
      n = nodes_[n].right;
    }
  }
  return out;
}

template <bool kAbove>
Time Planner::FirstPrefixAll(int32_t n, int64_t limit, int64_t acc) const {
  // Precondition: the subtree holds a hit.
  for (;;) {
    const Node& x = nodes_[n];
    if (x.left >= 0) {
      const Node& l = nodes_[x.left];
      if (kAbove ? acc + l.max_prefix > limit : acc + l.min_prefix <= limit) {
        n = x.left;
        continue;
      }
      acc += l.sum;
    }
    acc += x.delta;
    if (kAbove ? acc > limit : acc <= limit) return x.time;
    n = x.right;
    assert(n >= 0);
  }
}

template <bool kAbove>
std::optional<Time> Planner::FirstPrefixIn(int32_t n, Time after, int64_t limit, int64_t acc) const {
  while (n >= 0) {
    const Node& x = nodes_[n];
    const int64_t left_sum = x.left >= 0 ? nodes_[x.left].sum : 0;
    if (x.time <= after) {
      acc += left_sum + x.delta;
      n = x.right;
      continue;
    }
    // x is after `after`: the answer is in x.left (restricted), x, or anywhere in x.right.
    if (auto hit = FirstPrefixIn<kAbove>(x.left, after, limit, acc)) return hit;
    const int64_t p = acc + left_sum + x.delta;
    if (kAbove ? p > limit : p <= limit) return x.time;
    if (x.right < 0) return std::nullopt;
    const Node& r = nodes_[x.right];
    if (kAbove ? p + r.max_prefix > limit : p + r.min_prefix <= limit) {
      return FirstPrefixAll<kAbove>(x.right, limit, p);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

template <bool kAbove>
std::optional<Time> Planner::FirstPrefix(Time after, int64_t limit) const {
  return FirstPrefixIn<kAbove>(root_, after, limit, 0);
}

// ---- spans ---------------------------------------------------------------------------------

Result<SpanId> Planner::AddSpan(Time start, Duration duration, int64_t count) {
  if (duration <= 0) return Fail("planner", "span duration must be > 0, got " + std::to_string(duration));
  if (count < 0 || count > total_) {
    return Fail("planner", "span count " + std::to_string(count) + " is outside [0, " + std::to_string(total_) + "]");
  }
  if (start < origin_) {
    return Fail("planner",
                "span starts at " + std::to_string(start) + ", before the origin " + std::to_string(origin_));
  }
  if (start >= kForever || duration > kForever - start) {
    return Fail("planner", "span starting at " + std::to_string(start) + " lasting " + std::to_string(duration) +
                               " ends after kForever");
  }
  const Time end = start + duration;
  const int64_t limit = total_ - count;
  std::optional<Time> short_at;
  if (Used(start) > limit) {
    short_at = start;
  } else if (auto s = FirstPrefix<true>(start, limit); s && *s < end) {
    short_at = s;
  }
  if (short_at) {
    return Fail("planner", "span of " + std::to_string(count) + " over " + Window(start, end) + " does not fit: " +
                               std::to_string(AvailAt(*short_at)) + " free at " + std::to_string(*short_at));
  }
  const uint64_t id = next_span_++;
  spans_.emplace(id, Span{start, end, count});
  by_end_.emplace(end, id);
  AddPoint(start, count, 1);
  AddPoint(end, -count, 1);
  return SpanId{id};
}

Result<SpanId> Planner::AddCapacityLoss(Time from, int64_t count) {
  if (from >= kForever) return Fail("planner", "capacity loss from " + std::to_string(from) + " is past kForever");
  return AddSpan(from, kForever - from, count);
}

Status Planner::RemoveSpan(SpanId span) {
  auto it = spans_.find(span.value);
  if (it == spans_.end()) return Fail("planner", "unknown span " + std::to_string(span.value));
  const Span s = it->second;
  AddPoint(std::max(s.start, origin_), -s.count, -1);
  AddPoint(s.end, s.count, -1);
  by_end_.erase({s.end, span.value});
  spans_.erase(it);
  return {};
}

void Planner::AdvanceTo(Time now) {
  now = std::min(now, kForever);
  if (now <= origin_) return;
  while (!by_end_.empty() && by_end_.begin()->first <= now) {
    const uint64_t id = by_end_.begin()->second;
    const Span& s = spans_.at(id);
    AddPoint(std::max(s.start, origin_), -s.count, -1);
    AddPoint(s.end, s.count, -1);
    spans_.erase(id);
    by_end_.erase(by_end_.begin());
  }
  // What is left before `now` are the starts of spans running across it: fold them into `now`.
  auto [before, rest] = Split(root_, now);
  root_ = rest;
  int64_t delta = 0, refs = 0;
  FreeSubtree(before, delta, refs);
  if (refs > 0) AddPoint(now, delta, refs);
  origin_ = now;
}

// ---- queries -------------------------------------------------------------------------------

int64_t Planner::AvailAt(Time t) const { return total_ - Used(std::max(t, origin_)); }

int64_t Planner::AvailDuring(Time start, Duration duration) const {
  // Nothing changes after kForever, so clamping there keeps lo + 1 from overflowing.
  const Time lo = std::clamp(start, origin_, kForever);
  const Time hi = std::max(AddSat(start, std::max<Duration>(duration, 1)), lo + 1);
  return total_ - MaxUsed(lo, hi);
}

std::optional<Time> Planner::Search(Time t, Duration duration, int64_t limit, Time last_start) const {
  for (;;) {
    if (t > last_start) return std::nullopt;
    Time blocked;  // the first second of [t, t + duration) with used > limit
    if (Used(t) > limit) {
      blocked = t;
    } else {
      auto s = FirstPrefix<true>(t, limit);
      if (!s || *s >= t + duration) return t;
      blocked = *s;
    }
    // Every start in (t, blocked] still covers `blocked`: resume at the first point after it
    // where enough is free again.
    auto next = FirstPrefix<false>(blocked, limit);
    if (!next) return std::nullopt;
    t = *next;
  }
}

std::optional<Time> Planner::AvailTimeFirst(Time at, Duration duration, int64_t count, Time latest) const {
  if (count < 0 || count > total_ || duration < 1 || duration > kForever) return std::nullopt;
  const Time last_start = std::min(latest, kForever - duration);
  return Search(std::max(at, origin_), duration, total_ - count, last_start);
}

std::optional<Time> Planner::AvailTimeNext(Time after, Duration duration, int64_t count, Time latest) const {
  if (count < 0 || count > total_ || duration < 1 || duration > kForever) return std::nullopt;
  auto t = FirstPointAfter(after);
  if (!t) return std::nullopt;
  const Time last_start = std::min(latest, kForever - duration);
  return Search(*t, duration, total_ - count, last_start);
}

}  // namespace phalanx
