// JobSet (core/sched/job_set.h): the pending and the active jobs of the Scheduler, walked in id
// order whatever the order of insertions and erasures.
#include "core/sched/job_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "core/sched/job.h"

namespace phalanx {
namespace {

std::vector<JobId> Ids(const JobSet& set) {
  std::vector<JobId> ids;
  for (const auto& [id, job] : set.Walk()) ids.push_back(id);
  return ids;
}

TEST(JobSet, WalksInIdOrderWhateverTheOrderOfInsertion) {
  JobRecord a, b, c, d;
  JobSet set;
  set.Insert(5, &a);  // appended
  set.Insert(9, &b);  // appended
  set.Insert(2, &c);  // out of order: waits for the walk
  set.Insert(7, &d);
  EXPECT_EQ(set.size(), 4u);
  EXPECT_EQ(set.Find(2), &c);  // found before the walk merges it
  EXPECT_EQ(set.Find(7), &d);
  EXPECT_EQ(Ids(set), (std::vector<JobId>{2, 5, 7, 9}));
  EXPECT_EQ(set.Walk()[1].second, &a);
  EXPECT_EQ(set.Find(3), nullptr);
}

TEST(JobSet, ErasesFromEitherPartAndInsertsAgain) {
  JobRecord a, b, c;
  JobSet set;
  set.Insert(10, &a);
  set.Insert(4, &b);  // not merged yet
  set.Erase(4);       // erased before any walk
  set.Erase(10);      // marked
  set.Erase(99);      // not there: nothing
  EXPECT_EQ(set.size(), 0u);
  EXPECT_TRUE(set.empty());
  EXPECT_FALSE(set.Contains(10));
  set.Insert(10, &c);  // the marked entry comes back with its new record
  EXPECT_EQ(set.Find(10), &c);
  set.Insert(10, &a);  // already there: stays as it is
  EXPECT_EQ(set.Find(10), &c);
  set.Insert(3, &b);
  set.Insert(3, &a);  // already there (inserted out of order): stays
  EXPECT_EQ(set.Find(3), &b);
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(Ids(set), (std::vector<JobId>{3, 10}));
}

// Random insertions and erasures against a std::map, with walks in between.
TEST(JobSet, AgreesWithAMapUnderRandomChanges) {
  std::vector<JobRecord> records(200);
  std::mt19937 rng(7);
  JobSet set;
  std::map<JobId, JobRecord*> model;
  for (int step = 0; step < 20000; ++step) {
    const JobId id = 1 + rng() % 200;
    switch (rng() % 5) {
      case 0:
      case 1:
        set.Insert(id, &records[id - 1]);
        model.emplace(id, &records[id - 1]);
        break;
      case 2:
      case 3:
        set.Erase(id);
        model.erase(id);
        break;
      default: {
        std::vector<JobSet::Entry> want(model.begin(), model.end());
        ASSERT_EQ(set.Walk(), want) << "step " << step;
      }
    }
    ASSERT_EQ(set.size(), model.size()) << "step " << step;
    ASSERT_EQ(set.Find(id), model.contains(id) ? model[id] : nullptr) << "step " << step;
  }
}

}  // namespace
}  // namespace phalanx
