// Store history (schema v3): samples written in batches survive a reopen of the real file, read
// back by exact name and by prefix, since and step (bucket means), pruned by time, bad names
// and values refused naming the series, and the answer bounded by max_points.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "adapters/store/store.h"
#include "store_test_util.h"

namespace phalanx::store {
namespace {

using testing::OpenOrDie;
using testing::TempDir;

std::vector<std::pair<Time, double>> Points(const HistoryAnswer& a, const std::string& name) {
  std::vector<std::pair<Time, double>> out;
  auto it = a.find(name);
  if (it == a.end()) return out;
  for (const HistoryPoint& p : it->second) out.emplace_back(p.time, p.value);
  return out;
}

class StoreHistoryTest : public testing::StoreBackendTest {};
INSTANTIATE_BOTH_BACKENDS(StoreHistoryTest);

TEST_P(StoreHistoryTest, SamplesSurviveReopenAndReadByNameAndPrefix) {
  const std::string path = Target("h.db");
  {
    auto store = OpenOrDie(path, Options());
    for (Time t = 100; t <= 400; t += 100) {
      Batch b;
      b.RecordSamples(t, {{"gpus_allocated", static_cast<double>(t / 10)},
                          {"user_gpus.alice", 8},
                          {"user_gpus.bob", static_cast<double>(t / 100)},
                          {"user_gpusx", 1}});
      ASSERT_TRUE(store->Apply(b)) << t;
    }
  }
  auto store = OpenOrDie(path, Options());
  HistoryQuery q;
  q.names = {"gpus_allocated", "user_gpus.*", "nothing_here"};
  q.since = 200;
  auto a = store->ReadHistory(q);
  ASSERT_TRUE(a) << a.error().ToString();
  using P = std::vector<std::pair<Time, double>>;
  EXPECT_EQ(Points(*a, "gpus_allocated"), (P{{200, 20}, {300, 30}, {400, 40}}));
  EXPECT_EQ(Points(*a, "user_gpus.alice"), (P{{200, 8}, {300, 8}, {400, 8}}));
  EXPECT_EQ(Points(*a, "user_gpus.bob"), (P{{200, 2}, {300, 3}, {400, 4}}));
  EXPECT_EQ(a->count("user_gpusx"), 0u);    // the prefix is "user_gpus.", not "user_gpus"
  ASSERT_EQ(a->count("nothing_here"), 1u);  // asked for by name: present, empty
  EXPECT_TRUE(a->at("nothing_here").empty());
  EXPECT_EQ(a->size(), 4u);
}

TEST_P(StoreHistoryTest, StepAveragesBucketsAndSameTimeReplaces) {
  auto store = OpenOrDie(Target("h.db"), Options());
  Batch b;
  for (Time t = 0; t < 120; t += 10) b.RecordSamples(t, {{"fgd", static_cast<double>(t)}});
  b.RecordSamples(110, {{"fgd", 1000}});  // replaces 110
  ASSERT_TRUE(store->Apply(b));
  HistoryQuery q;
  q.names = {"fgd"};
  q.step = 60;
  auto a = store->ReadHistory(q);
  ASSERT_TRUE(a);
  using P = std::vector<std::pair<Time, double>>;
  // 0..50: mean 25; 60..110 with 110 -> 1000: (60+70+80+90+100+1000)/6 = 233.33...
  const P got = Points(*a, "fgd");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (std::pair<Time, double>{0, 25}));
  EXPECT_EQ(got[1].first, 60);
  EXPECT_NEAR(got[1].second, 1400.0 / 6, 1e-9);
}

TEST_P(StoreHistoryTest, PruneDeletesOlderRowsOnly) {
  auto store = OpenOrDie(Target("h.db"), Options());
  Batch b;
  for (Time t = 1; t <= 10; ++t) b.RecordSamples(t, {{"a", 1}, {"b", 2}});
  ASSERT_TRUE(store->Apply(b));
  Batch p;
  p.PruneHistory(8);
  ASSERT_TRUE(store->Apply(p));
  HistoryQuery q;
  q.names = {"a", "b"};
  auto a = store->ReadHistory(q);
  ASSERT_TRUE(a);
  using P = std::vector<std::pair<Time, double>>;
  EXPECT_EQ(Points(*a, "a"), (P{{8, 1}, {9, 1}, {10, 1}}));
  EXPECT_EQ(Points(*a, "b"), (P{{8, 2}, {9, 2}, {10, 2}}));
}

TEST_P(StoreHistoryTest, BadNamesAndValuesAreRefusedNamingThem) {
  auto store = OpenOrDie(Target("h.db"), Options());
  const std::pair<std::string, std::string> bad[] = {
      {"", "bad series name ''"},
      {"a,b", "bad series name 'a,b'"},
      {"a*", "bad series name 'a*'"},
      {std::string(201, 'x'), "bad series name"},
  };
  for (const auto& [name, message] : bad) {
    Batch b;
    b.RecordSamples(1, {{"fine", 1}, {name, 1}});
    auto r = store->Apply(b);
    ASSERT_FALSE(r) << name;
    EXPECT_NE(r.error().message.find(message), std::string::npos) << r.error().ToString();
  }
  Batch nan;
  nan.RecordSamples(1, {{"fgd", std::numeric_limits<double>::quiet_NaN()}});
  auto r = store->Apply(nan);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("series fgd: value is not finite"), std::string::npos) << r.error().ToString();
  // All-or-nothing: "fine" of the failed batches was not kept.
  HistoryQuery q;
  q.names = {"fine"};
  auto a = store->ReadHistory(q);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->at("fine").empty());
}

TEST_P(StoreHistoryTest, MaxPointsBoundsTheAnswer) {
  auto store = OpenOrDie(Target("h.db"), Options());
  Batch b;
  for (Time t = 0; t < 50; ++t) b.RecordSamples(t, {{"a", 1}});
  ASSERT_TRUE(store->Apply(b));
  HistoryQuery q;
  q.names = {"a"};
  q.max_points = 50;
  EXPECT_TRUE(store->ReadHistory(q));
  q.max_points = 49;
  auto r = store->ReadHistory(q);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("more than 49 points"), std::string::npos) << r.error().ToString();
}

}  // namespace
}  // namespace phalanx::store
