#include "core/queue/priority.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace phalanx {
namespace {

constexpr Duration kDay = 24 * 3600;

PriorityInputs Job(double class_factor, Time submit, uint32_t gpus, double fairshare) {
  return {.class_factor = class_factor,
          .submit = submit,
          .gpus = gpus,
          .cluster_gpus = 64,
          .fairshare_factor = fairshare,
          .nice = 0};
}

TEST(JobPriority, WeightedSumOfFactors) {
  const PriorityWeights w;  // 10000 / 1000 / 5000 / 1000, max_age 7 days
  // class 1/3, age 3.5 of 7 days, fairshare 0.5, 16 of 64 GPUs.
  const PriorityInputs in = Job(1.0 / 3, 0, 16, 0.5);
  const PriorityBreakdown b = ExplainPriority(in, w, 7 * kDay / 2);
  EXPECT_DOUBLE_EQ(b.age, 0.5);
  EXPECT_DOUBLE_EQ(b.job_size, 0.25);
  EXPECT_DOUBLE_EQ(b.total, 10000.0 / 3 + 500 + 2500 + 250);
  EXPECT_DOUBLE_EQ(JobPriority(in, w, 7 * kDay / 2), b.total);
}

TEST(JobPriority, NiceIsSubtracted) {
  PriorityInputs in = Job(0, 0, 0, 0);
  in.nice = 250;
  EXPECT_DOUBLE_EQ(JobPriority(in, {}, 0), -250.0);
  in.nice = -100;
  EXPECT_DOUBLE_EQ(JobPriority(in, {}, 0), 100.0);
}

TEST(JobPriority, AgeSaturatesAtMaxAge) {
  const PriorityWeights w;
  const PriorityInputs in = Job(0, 1000, 0, 0);
  EXPECT_DOUBLE_EQ(ExplainPriority(in, w, 1000).age, 0.0);
  EXPECT_DOUBLE_EQ(ExplainPriority(in, w, 500).age, 0.0);  // clock before submit
  EXPECT_DOUBLE_EQ(ExplainPriority(in, w, 1000 + 7 * kDay).age, 1.0);
  EXPECT_DOUBLE_EQ(ExplainPriority(in, w, 1000 + 70 * kDay).age, 1.0);
  EXPECT_DOUBLE_EQ(JobPriority(in, w, 1000 + 70 * kDay), 1000.0);
  PriorityWeights no_ramp;
  no_ramp.max_age = 0;
  EXPECT_DOUBLE_EQ(ExplainPriority(in, no_ramp, 1001).age, 1.0);
}

TEST(JobPriority, PriorityIsMonotoneInAge) {
  const PriorityWeights w;
  const PriorityInputs in = Job(0.5, 0, 8, 0.3);
  double previous = JobPriority(in, w, -100);
  for (Time now = -100; now < 9 * kDay; now += 3917) {
    const double p = JobPriority(in, w, now);
    EXPECT_GE(p, previous) << "at " << now;
    previous = p;
  }
}

TEST(JobPriority, FavorSmallFlipsTheSizeFactor) {
  PriorityWeights w;
  const PriorityInputs small = Job(0, 0, 8, 0);
  const PriorityInputs large = Job(0, 0, 48, 0);
  EXPECT_DOUBLE_EQ(ExplainPriority(small, w, 0).job_size, 0.125);
  EXPECT_DOUBLE_EQ(ExplainPriority(large, w, 0).job_size, 0.75);
  EXPECT_GT(JobPriority(large, w, 0), JobPriority(small, w, 0));
  w.favor_small = true;
  EXPECT_DOUBLE_EQ(ExplainPriority(small, w, 0).job_size, 0.875);
  EXPECT_DOUBLE_EQ(ExplainPriority(large, w, 0).job_size, 0.25);
  EXPECT_GT(JobPriority(small, w, 0), JobPriority(large, w, 0));
}

TEST(JobPriority, FactorsAreClampedToTheUnitInterval) {
  PriorityInputs in = Job(3, 0, 100, -2);  // 100 of 64 GPUs
  const PriorityBreakdown b = ExplainPriority(in, {}, 0);
  EXPECT_EQ(b.class_factor, 1.0);
  EXPECT_EQ(b.fairshare, 0.0);
  EXPECT_EQ(b.job_size, 1.0);
  in.cluster_gpus = 0;
  EXPECT_EQ(ExplainPriority(in, {}, 0).job_size, 0.0);
}

TEST(JobPriority, WeightValidation) {
  EXPECT_TRUE(ValidatePriorityWeights({}));
  PriorityWeights w;
  w.fairshare = -1;
  auto bad = ValidatePriorityWeights(w);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "priority.weights.fairshare");
  w = {};
  w.max_age = -5;
  EXPECT_FALSE(ValidatePriorityWeights(w));
}

// ---- priority classes ---------------------------------------------------------------------

PriorityClassTable Defaults() {
  auto t = PriorityClassTable::Build(DefaultPriorityClasses());
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  return std::move(*t);
}

TEST(PriorityClasses, DefaultsRankAndFactor) {
  const PriorityClassTable t = Defaults();
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t.KnownNames(), "low, normal, high, urgent");
  EXPECT_EQ(t.name(t.default_class()), "normal");
  EXPECT_EQ(*t.Find(""), t.default_class());
  EXPECT_DOUBLE_EQ(*t.class_factor("low"), 0.0);
  EXPECT_DOUBLE_EQ(*t.class_factor("normal"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(*t.class_factor("high"), 2.0 / 3);
  EXPECT_DOUBLE_EQ(*t.class_factor("urgent"), 1.0);
  EXPECT_TRUE(t.preemptible_by_default(*t.Find("low")));
  EXPECT_FALSE(t.preemptible_by_default(*t.Find("urgent")));
  EXPECT_EQ(t.min_runtime_before_preemption(*t.Find("normal")), 600);
}

TEST(PriorityClasses, DefaultCanPreemptMatrixIsStrictlyLowerRanks) {
  const PriorityClassTable t = Defaults();
  const std::vector<std::string> names = {"low", "normal", "high", "urgent"};
  // expected[a][b]: a may preempt b.
  const bool expected[4][4] = {
      {false, false, false, false},
      {true, false, false, false},
      {true, true, false, false},
      {true, true, true, false},
  };
  for (size_t a = 0; a < 4; ++a) {
    for (size_t b = 0; b < 4; ++b) {
      auto can = t.CanPreempt(names[a], names[b]);
      ASSERT_TRUE(can.has_value());
      EXPECT_EQ(*can, expected[a][b]) << names[a] << " -> " << names[b];
    }
  }
}

TEST(PriorityClasses, ExplicitCanPreemptLists) {
  PriorityClassConfig c = DefaultPriorityClasses();
  c.classes[2].can_preempt = std::vector<std::string>{"low"};  // high: only low
  c.classes[1].can_preempt = std::vector<std::string>{};       // normal: nothing
  auto t = PriorityClassTable::Build(c);
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_FALSE(*t->CanPreempt("normal", "low"));
  EXPECT_TRUE(*t->CanPreempt("high", "low"));
  EXPECT_FALSE(*t->CanPreempt("high", "normal"));
  EXPECT_TRUE(*t->CanPreempt("urgent", "high"));  // unset: all lower
}

TEST(PriorityClasses, UnknownNamesListTheKnownOnes) {
  const PriorityClassTable t = Defaults();
  auto id = t.Find("critical");
  ASSERT_FALSE(id.has_value());
  EXPECT_NE(id.error().message.find("'critical'"), std::string::npos) << id.error().message;
  EXPECT_NE(id.error().message.find("low, normal, high, urgent"), std::string::npos) << id.error().message;
  EXPECT_FALSE(t.CanPreempt("urgent", "bogus").has_value());
  EXPECT_FALSE(t.class_factor("bogus").has_value());
  // Invalid ids are answered conservatively.
  EXPECT_FALSE(t.CanPreempt(PriorityClassId(), PriorityClassId(0)));
  EXPECT_EQ(t.class_factor(PriorityClassId(99)), 0.0);
}

TEST(PriorityClasses, SingleClassFactorIsZeroAndPreemptsNothing) {
  PriorityClassConfig c;
  c.classes = {{.name = "only",
                .preemptible_by_default = false,
                .min_runtime_before_preemption = 0,
                .can_preempt = std::nullopt}};
  c.default_class = "only";
  auto t = PriorityClassTable::Build(c);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t->class_factor("only"), 0.0);
  EXPECT_FALSE(*t->CanPreempt("only", "only"));
}

TEST(PriorityClasses, BuildErrors) {
  struct Case {
    const char* what;
    PriorityClassConfig config;
    const char* needle;  // in the error message
  };
  auto with = [](auto edit) {
    PriorityClassConfig c = DefaultPriorityClasses();
    edit(c);
    return c;
  };
  const Case cases[] = {
      {"no classes", with([](auto& c) { c.classes.clear(); }), "no classes"},
      {"empty name", with([](auto& c) { c.classes[0].name = ""; }), "empty class name"},
      {"duplicate", with([](auto& c) { c.classes[1].name = "low"; }), "defined twice"},
      {"negative runtime", with([](auto& c) { c.classes[0].min_runtime_before_preemption = -1; }), ">= 0"},
      {"unknown victim", with([](auto& c) { c.classes[3].can_preempt = std::vector<std::string>{"lowest"}; }),
       "unknown class 'lowest' (known: low, normal, high, urgent)"},
      {"self", with([](auto& c) { c.classes[2].can_preempt = std::vector<std::string>{"high"}; }),
       "only preempt lower"},
      {"upward", with([](auto& c) { c.classes[0].can_preempt = std::vector<std::string>{"urgent"}; }),
       "only preempt lower"},
      {"repeated victim", with([](auto& c) {
         c.classes[3].can_preempt = std::vector<std::string>{"low", "low"};
       }),
       "listed twice"},
      {"unknown default", with([](auto& c) { c.default_class = "medium"; }),
       "unknown class 'medium' (known: low, normal, high, urgent)"},
      {"empty default", with([](auto& c) { c.default_class = ""; }), "empty"},
  };
  for (const Case& c : cases) {
    auto t = PriorityClassTable::Build(c.config);
    ASSERT_FALSE(t.has_value()) << c.what;
    EXPECT_NE(t.error().ToString().find(c.needle), std::string::npos) << c.what << ": " << t.error().ToString();
  }
}

}  // namespace
}  // namespace phalanx
