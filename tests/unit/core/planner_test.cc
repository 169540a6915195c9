#include "core/planner/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace phalanx {
namespace {

// Availability at a list of times, to check that a refused call changed nothing.
std::vector<int64_t> Snapshot(const Planner& p) {
  std::vector<int64_t> out;
  for (Time t = p.origin(); t < p.origin() + 60; ++t) out.push_back(p.AvailAt(t));
  out.push_back(p.AvailAt(kForever - 1));
  out.push_back(static_cast<int64_t>(p.span_count()));
  out.push_back(static_cast<int64_t>(p.point_count()));
  return out;
}

TEST(Planner, EmptyPlannerHasEverythingFreeForever) {
  Planner p(10, 0);
  EXPECT_EQ(p.total(), 10);
  EXPECT_EQ(p.AvailAt(0), 10);
  EXPECT_EQ(p.AvailAt(kForever - 1), 10);
  EXPECT_EQ(p.AvailDuring(0, kForever), 10);
  EXPECT_EQ(p.AvailTimeFirst(0, 5, 10), 0);
  EXPECT_EQ(p.AvailTimeFirst(7, kForever - 7, 10), 7);
  EXPECT_EQ(p.AvailTimeFirst(0, 5, 11), std::nullopt);  // never: larger than the resource
  EXPECT_EQ(p.AvailTimeNext(0, 5, 1), std::nullopt);    // no points at all
  EXPECT_EQ(p.point_count(), 0u);
}

TEST(Planner, OneSpanIsHalfOpen) {
  Planner p(10, 0);
  ASSERT_TRUE(p.AddSpan(10, 10, 4));
  EXPECT_EQ(p.AvailAt(9), 10);
  EXPECT_EQ(p.AvailAt(10), 6);
  EXPECT_EQ(p.AvailAt(19), 6);
  EXPECT_EQ(p.AvailAt(20), 10);
  EXPECT_EQ(p.AvailDuring(5, 5), 10);  // [5, 10)
  EXPECT_EQ(p.AvailDuring(5, 6), 6);   // [5, 11)
  EXPECT_EQ(p.AvailDuring(20, 100), 10);
  EXPECT_EQ(p.AvailTimeFirst(0, 10, 8), 0);  // [0, 10) ends as the span starts
  EXPECT_EQ(p.AvailTimeFirst(0, 11, 8), 20);
  EXPECT_EQ(p.AvailTimeFirst(5, 5, 8), 5);
  EXPECT_EQ(p.AvailTimeFirst(6, 5, 8), 20);
  EXPECT_EQ(p.AvailTimeFirst(12, 3, 6), 12);  // 6 are free during the span
}

TEST(Planner, OverlappingSpansAndSearch) {
  Planner p(10, 0);
  ASSERT_TRUE(p.AddSpan(10, 10, 4));  // used: [10,15) 4, [15,20) 10, [20,25) 6
  ASSERT_TRUE(p.AddSpan(15, 10, 6));
  EXPECT_EQ(p.AvailAt(15), 0);
  EXPECT_EQ(p.AvailAt(22), 4);
  EXPECT_EQ(p.AvailDuring(12, 20), 0);
  EXPECT_EQ(p.AvailTimeFirst(8, 5, 4), 8);
  EXPECT_EQ(p.AvailTimeFirst(8, 5, 6), 8);
  EXPECT_EQ(p.AvailTimeFirst(8, 10, 5), 25);  // blocked at 15; 20 has only 4
  EXPECT_EQ(p.AvailTimeFirst(8, 10, 4), 20);
  EXPECT_EQ(p.AvailTimeFirst(8, 10, 4, /*latest=*/19), std::nullopt);
  EXPECT_EQ(p.AvailTimeFirst(8, 10, 4, /*latest=*/20), 20);
  // Successive candidates: only points, increasing.
  EXPECT_EQ(p.AvailTimeNext(0, 1, 4), 10);
  EXPECT_EQ(p.AvailTimeNext(10, 1, 4), 20);  // 15 has nothing free
  EXPECT_EQ(p.AvailTimeNext(20, 10, 4), 25);
  EXPECT_EQ(p.AvailTimeNext(25, 10, 4), std::nullopt);
  EXPECT_EQ(p.point_count(), 4u);
}

TEST(Planner, SpansTouchEndToEnd) {
  Planner p(10, 0);
  ASSERT_TRUE(p.AddSpan(0, 10, 10));
  ASSERT_TRUE(p.AddSpan(10, 10, 10));
  EXPECT_EQ(p.AvailTimeFirst(0, 1, 1), 20);
  EXPECT_EQ(p.point_count(), 3u);           // 10 is the end of one and the start of the other
  EXPECT_EQ(p.AvailTimeNext(0, 1, 0), 10);  // a point where nothing nets out is still a candidate
}

TEST(Planner, RefusedSpansChangeNothing) {
  Planner p(10, 100);
  ASSERT_TRUE(p.AddSpan(110, 10, 4));
  ASSERT_TRUE(p.AddSpan(115, 10, 6));
  const auto before = Snapshot(p);
  EXPECT_FALSE(p.AddSpan(110, 0, 1));
  EXPECT_FALSE(p.AddSpan(110, -5, 1));
  EXPECT_FALSE(p.AddSpan(110, 5, -1));
  EXPECT_FALSE(p.AddSpan(130, 5, 11));
  EXPECT_FALSE(p.AddSpan(99, 5, 1));  // before the origin
  EXPECT_FALSE(p.AddSpan(kForever - 5, 6, 1));
  EXPECT_FALSE(p.AddSpan(kForever, 1, 1));
  auto r = p.AddSpan(112, 5, 1);  // 0 free at 115
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("0 free at 115"), std::string::npos) << r.error().ToString();
  EXPECT_FALSE(p.AddSpan(100, 100, 5));
  EXPECT_EQ(Snapshot(p), before);
  // The ids of refused spans are not consumed.
  auto ok = p.AddSpan(100, 10, 10);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->value, 3u);
}

TEST(Planner, RemoveRestoresAndUnknownIdsFail) {
  Planner p(8, 0);
  auto a = p.AddSpan(0, 10, 8);
  ASSERT_TRUE(a);
  EXPECT_EQ(p.AvailAt(5), 0);
  ASSERT_TRUE(p.RemoveSpan(*a));
  EXPECT_EQ(p.AvailAt(5), 8);
  EXPECT_EQ(p.span_count(), 0u);
  EXPECT_EQ(p.point_count(), 0u);
  EXPECT_FALSE(p.RemoveSpan(*a));
  EXPECT_FALSE(p.RemoveSpan(SpanId{}));
  EXPECT_FALSE(p.RemoveSpan(SpanId{42}));
}

TEST(Planner, CapacityLossLastsUntilRemoved) {
  Planner p(10, 0);
  auto loss = p.AddCapacityLoss(50, 4);
  ASSERT_TRUE(loss);
  EXPECT_EQ(p.AvailAt(49), 10);
  EXPECT_EQ(p.AvailAt(kForever - 1), 6);
  EXPECT_EQ(p.AvailTimeFirst(0, 50, 7), 0);
  EXPECT_EQ(p.AvailTimeFirst(0, 51, 7), std::nullopt);  // never again
  EXPECT_EQ(p.AvailTimeFirst(45, 10, 7), std::nullopt);
  EXPECT_EQ(p.AvailTimeFirst(45, 10, 6), 45);
  ASSERT_TRUE(p.RemoveSpan(*loss));
  EXPECT_EQ(p.AvailTimeFirst(45, 10, 7), 45);
}

TEST(Planner, CapacityLossMustFitAroundRunningWork) {
  Planner p(10, 0);
  ASSERT_TRUE(p.AddSpan(40, 20, 8));
  EXPECT_FALSE(p.AddCapacityLoss(50, 4));  // only 2 free until 60
  EXPECT_FALSE(p.AddCapacityLoss(kForever, 1));
  ASSERT_TRUE(p.AddCapacityLoss(50, 2));  // the free ones now...
  ASSERT_TRUE(p.AddCapacityLoss(60, 2));  // ...the busy ones when the job ends
  EXPECT_EQ(p.AvailAt(70), 6);
}

TEST(Planner, AdvanceToDropsEndedSpansAndFoldsThePast) {
  Planner p(10, 0);
  auto a = p.AddSpan(0, 10, 3);
  auto b = p.AddSpan(5, 15, 2);
  auto c = p.AddSpan(20, 10, 5);
  ASSERT_TRUE(a && b && c);
  p.AdvanceTo(10);
  EXPECT_EQ(p.origin(), 10);
  EXPECT_EQ(p.span_count(), 2u);
  EXPECT_EQ(p.point_count(), 3u);  // 10 (b, folded), 20 (b end, c start), 30
  EXPECT_EQ(p.AvailAt(10), 8);
  EXPECT_EQ(p.AvailAt(0), 8);  // the past answers as the origin
  EXPECT_EQ(p.AvailAt(25), 5);
  EXPECT_EQ(p.AvailDuring(0, 5), 8);
  EXPECT_FALSE(p.RemoveSpan(*a));  // ended
  EXPECT_FALSE(p.AddSpan(9, 5, 1));
  EXPECT_EQ(p.AvailTimeFirst(0, 5, 10), 30);
  ASSERT_TRUE(p.RemoveSpan(*b));
  EXPECT_EQ(p.AvailAt(10), 10);
  EXPECT_EQ(p.AvailTimeFirst(0, 5, 10), 10);
  p.AdvanceTo(5);  // backwards: nothing
  EXPECT_EQ(p.origin(), 10);
  p.AdvanceTo(30);
  EXPECT_EQ(p.span_count(), 0u);
  EXPECT_EQ(p.point_count(), 0u);
}

TEST(Planner, CopiesAreIndependent) {
  Planner p(4, 0);
  ASSERT_TRUE(p.AddSpan(0, 10, 4));
  Planner what_if = p;
  ASSERT_TRUE(what_if.AddSpan(10, 10, 4));
  EXPECT_EQ(p.AvailAt(15), 4);
  EXPECT_EQ(what_if.AvailAt(15), 0);
}

TEST(Planner, InvalidSearchArgumentsNeverFit) {
  Planner p(4, 0);
  EXPECT_EQ(p.AvailTimeFirst(0, 0, 1), std::nullopt);
  EXPECT_EQ(p.AvailTimeFirst(0, 5, -1), std::nullopt);
  EXPECT_EQ(p.AvailTimeFirst(0, kForever + 1, 1), std::nullopt);
  EXPECT_EQ(p.AvailTimeFirst(kForever - 4, 5, 1), std::nullopt);
  EXPECT_EQ(p.AvailTimeFirst(kForever - 5, 5, 1), kForever - 5);
  EXPECT_EQ(p.AvailTimeFirst(-100, 5, 1), 0);  // clamped to the origin
  // Extreme arguments neither overflow nor fit.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  ASSERT_TRUE(p.AddSpan(10, 10, 1));
  EXPECT_EQ(p.AvailDuring(kMax, 5), 4);
  EXPECT_EQ(p.AvailDuring(kMin, kMax), 4);  // [kMin, -1): all before the origin
  EXPECT_EQ(p.AvailDuring(-kForever, 3 * kForever), 3);
  EXPECT_EQ(p.AvailAt(kMin), 4);
  EXPECT_EQ(p.AvailTimeFirst(kMax, 5, 1), std::nullopt);
  EXPECT_EQ(p.AvailTimeFirst(kMin, kMax, 1), std::nullopt);
  EXPECT_EQ(p.AvailTimeNext(kMin, 5, 4), 20);
  EXPECT_EQ(p.AvailTimeNext(kMax, 5, 1), std::nullopt);
  EXPECT_FALSE(p.AddSpan(kMin, 5, 1));
  EXPECT_FALSE(p.AddSpan(0, kMax, 1));
  EXPECT_FALSE(p.AddSpan(kMax, 1, 1));
}

// ---- randomized comparison with a per-second model -----------------------------------------

// Brute force: used count per second below kHorizon; spans ending at kForever also count in
// `tail` for every second >= kHorizon. All finite span ends are < kHorizon.
class Model {
 public:
  static constexpr Time kHorizon = 400;
  explicit Model(int64_t total) : total_(total), used_(kHorizon, 0) {}

  int64_t Used(Time x) const { return x < kHorizon ? used_[std::max(x, origin_)] : tail_; }
  int64_t AvailAt(Time t) const { return total_ - Used(std::max(t, origin_)); }
  // Min free over [lo, hi), lo >= origin.
  int64_t MinFree(Time lo, Time hi) const {
    int64_t worst = 0;
    for (Time x = lo; x < std::min(hi, kHorizon); ++x) worst = std::max(worst, used_[x]);
    if (hi > kHorizon) worst = std::max(worst, tail_);
    return total_ - worst;
  }
  int64_t AvailDuring(Time start, Duration d) const {
    const Time lo = std::max(start, origin_);
    const Time hi = std::max(start + std::max<Duration>(d, 1), lo + 1);
    return MinFree(lo, hi);
  }
  bool Fits(Time t, Duration d, int64_t count) const { return MinFree(t, t + d) >= count; }
  bool ValidSearch(Duration d, int64_t count) const { return count >= 0 && count <= total_ && d >= 1 && d <= kForever; }
  std::optional<Time> First(Time at, Duration d, int64_t count, Time latest) const {
    if (!ValidSearch(d, count)) return std::nullopt;
    const Time last = std::min(latest, kForever - d);
    for (Time t = std::max(at, origin_); t <= std::min(last, kHorizon); ++t) {
      if (Fits(t, d, count)) return t;
    }
    return std::nullopt;
  }
  std::set<Time> Points() const {
    std::set<Time> out;
    for (const auto& [id, s] : spans_) {
      out.insert(std::max(s.start, origin_));
      out.insert(s.end);
    }
    return out;
  }
  std::optional<Time> Next(Time after, Duration d, int64_t count, Time latest) const {
    if (!ValidSearch(d, count)) return std::nullopt;
    const Time last = std::min(latest, kForever - d);
    for (Time t : Points()) {
      if (t <= after) continue;
      if (t > last) break;
      if (Fits(t, d, count)) return t;
    }
    return std::nullopt;
  }
  bool CanAdd(Time start, Duration d, int64_t count) const {
    return d > 0 && count >= 0 && count <= total_ && start >= origin_ && start < kForever && d <= kForever - start &&
           Fits(start, d, count);
  }
  void Add(uint64_t id, Time start, Time end, int64_t count) {
    spans_[id] = {start, end, count};
    Apply(start, end, count);
  }
  void Remove(uint64_t id) {
    const auto s = spans_.at(id);
    Apply(s.start, s.end, -s.count);
    spans_.erase(id);
  }
  void AdvanceTo(Time now) {
    if (now <= origin_) return;
    for (auto it = spans_.begin(); it != spans_.end();) {
      if (it->second.end <= now) {
        Apply(it->second.start, it->second.end, -it->second.count);
        it = spans_.erase(it);
      } else {
        ++it;
      }
    }
    origin_ = now;
  }
  size_t span_count() const { return spans_.size(); }
  Time origin() const { return origin_; }
  std::vector<uint64_t> Ids() const {
    std::vector<uint64_t> out;
    for (const auto& [id, s] : spans_) out.push_back(id);
    return out;
  }

 private:
  struct S {
    Time start, end;
    int64_t count;
  };
  void Apply(Time start, Time end, int64_t count) {
    for (Time x = start; x < std::min(end, kHorizon); ++x) used_[x] += count;
    if (end > kHorizon) tail_ += count;
  }
  int64_t total_;
  Time origin_ = 0;
  std::vector<int64_t> used_;
  int64_t tail_ = 0;
  std::map<uint64_t, S> spans_;
};

TEST(PlannerRandom, MatchesPerSecondModel) {
  int checks = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    const int64_t total = uni(1, 12);
    Planner p(total, 0);
    Model m(total);
    for (int op = 0; op < 2500; ++op) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " op " + std::to_string(op));
      const Time o = m.origin();
      const int kind = static_cast<int>(uni(0, 99));
      if (kind < 30) {  // add
        const Time start = uni(o - 2, o + 80);
        const Duration d = uni(-1, 40);
        const int64_t count = uni(0, 2) == 0 ? uni(-1, total + 1) : uni(0, std::max<int64_t>(1, total / 3));
        auto r = p.AddSpan(start, d, count);
        ASSERT_EQ(r.has_value(), m.CanAdd(start, d, count)) << start << " " << d << " " << count;
        if (r) m.Add(r->value, start, start + d, count);
      } else if (kind < 33) {  // capacity loss
        const Time from = uni(o, o + 100);
        const int64_t count = uni(0, std::max<int64_t>(1, total / 3));
        auto r = p.AddCapacityLoss(from, count);
        ASSERT_EQ(r.has_value(), m.CanAdd(from, kForever - from, count));
        if (r) m.Add(r->value, from, kForever, count);
      } else if (kind < 50) {  // remove
        auto ids = m.Ids();
        if (!ids.empty() && uni(0, 9) > 0) {
          const uint64_t id = ids[uni(0, static_cast<int64_t>(ids.size()) - 1)];
          ASSERT_TRUE(p.RemoveSpan(SpanId{id}));
          m.Remove(id);
        } else {
          EXPECT_FALSE(p.RemoveSpan(SpanId{static_cast<uint64_t>(uni(100000, 200000))}));
        }
      } else if (kind < 52) {  // advance (slowly: the model's horizon is bounded)
        const Time now = o + uni(-2, 6);
        if (now < 150) {
          p.AdvanceTo(now);
          m.AdvanceTo(now);
        }
      } else {  // queries
        const Time t = uni(o - 5, o + 150);
        const Duration d = uni(0, 10) == 0 ? uni(100, 1000) : uni(-1, 50);
        const int64_t count = uni(-1, total + 1);
        const Time latest = uni(0, 4) == 0 ? uni(o, o + 120) : kForever;
        ASSERT_EQ(p.AvailAt(t), m.AvailAt(t)) << t;
        ASSERT_EQ(p.AvailDuring(t, d), m.AvailDuring(t, d)) << t << " " << d;
        ASSERT_EQ(p.AvailTimeFirst(t, d, count, latest), m.First(t, d, count, latest))
            << t << " " << d << " " << count << " " << latest;
        ASSERT_EQ(p.AvailTimeNext(t, d, count, latest), m.Next(t, d, count, latest))
            << t << " " << d << " " << count << " " << latest;
        checks += 4;
      }
      ASSERT_EQ(p.span_count(), m.span_count());
      ASSERT_EQ(p.point_count(), m.Points().size());
      ASSERT_EQ(p.origin(), m.origin());
    }
  }
  EXPECT_GT(checks, 50000);
}

// Chained candidates: First, then Next repeatedly, equals every fitting point after First.
TEST(PlannerRandom, CandidateChainIsIncreasingAndComplete) {
  std::mt19937 rng(7);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int round = 0; round < 200; ++round) {
    Planner p(8, 0);
    Model m(8);
    for (int i = 0; i < 30; ++i) {
      const Time s = uni(0, 200);
      const Duration d = uni(1, 60);
      const int64_t c = uni(1, 4);
      if (auto r = p.AddSpan(s, d, c)) m.Add(r->value, s, s + d, c);
    }
    const Duration d = uni(1, 40);
    const int64_t c = uni(1, 8);
    std::vector<Time> got, want;
    for (auto t = p.AvailTimeFirst(0, d, c); t; t = p.AvailTimeNext(*t, d, c)) got.push_back(*t);
    if (auto f = m.First(0, d, c, kForever)) {
      want.push_back(*f);
      for (Time t : m.Points()) {
        if (t > *f && t <= kForever - d && m.Fits(t, d, c)) want.push_back(t);
      }
    }
    ASSERT_EQ(got, want) << "round " << round;
  }
}

}  // namespace
}  // namespace phalanx
