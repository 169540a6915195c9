// GroupCommitter: many submitting threads, one writer; every acknowledged job is in the file
// after reopening, failures stay with their batch, and nobody waits forever.
#include "adapters/store/group_committer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store_fault_vfs.h"
#include "store_test_util.h"

namespace phalanx::store {
namespace {

using testing::FaultVfs;
using testing::TempDir;

class GroupCommitterTest : public testing::StoreBackendTest {};
INSTANTIATE_BOTH_BACKENDS(GroupCommitterTest);

TEST_P(GroupCommitterTest, ManyThreadsEveryAcknowledgedJobIsInTheFile) {
  const std::string path = Target("g.db");
  constexpr int kThreads = 16, kPerThread = 300;
  std::vector<std::vector<JobId>> ids(kThreads);
  GroupCommitter::Stats stats;
  {
    auto store = Store::Open(path, Options());
    ASSERT_TRUE(store) << store.error().ToString();
    GroupCommitter committer(store->get());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          JobSpec s;
          s.name = "t" + std::to_string(t) + "-" + std::to_string(i);
          s.shape.gpus = 1 + static_cast<uint32_t>(i % 8);
          auto id = committer.SubmitJob(std::move(s), i);
          if (!id) {
            ADD_FAILURE() << id.error().ToString();
            return;
          }
          ids[t].push_back(*id);
        }
      });
    }
    for (auto& th : threads) th.join();
    stats = committer.stats();
  }
  EXPECT_EQ(stats.batches, uint64_t{kThreads * kPerThread});
  EXPECT_LE(stats.groups, stats.batches);
  std::printf("  %d submissions in %llu transactions (largest group %zu)\n", kThreads * kPerThread,
              static_cast<unsigned long long>(stats.groups), stats.largest_group);

  auto store = Store::Open(path, Options());
  ASSERT_TRUE(store);
  auto all = (*store)->LoadAll();
  ASSERT_TRUE(all) << all.error().ToString();
  std::map<JobId, std::string> names;
  for (const JobRecord& j : all->jobs) names[j.spec.id] = j.spec.name;
  EXPECT_EQ(names.size(), size_t{kThreads * kPerThread});
  std::set<JobId> seen;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(ids[t].size(), size_t{kPerThread});
    for (int i = 0; i < kPerThread; ++i) {
      const JobId id = ids[t][i];
      EXPECT_TRUE(seen.insert(id).second) << "id " << id << " given twice";
      EXPECT_EQ(names[id], "t" + std::to_string(t) + "-" + std::to_string(i));
      if (i > 0) {
        EXPECT_LT(ids[t][i - 1], id) << "one thread's submissions commit in order";
      }
    }
  }
  EXPECT_EQ(all->next_job_id, JobId{kThreads * kPerThread + 1});
  EXPECT_TRUE((*store)->CheckIntegrity());
}

TEST_P(GroupCommitterTest, FailuresStayWithTheirBatch) {
  auto store = Store::Open(Target("g.db"), Options());
  ASSERT_TRUE(store);
  GroupCommitter committer(store->get());
  constexpr int kThreads = 8, kPerThread = 200;
  std::atomic<int> ok{0}, dup{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        JobSpec s;
        // Every thread submits the same explicit ids: exactly one submission of each wins.
        s.id = 1'000'000 + static_cast<JobId>(i);
        s.name = std::to_string(t);
        auto r = committer.SubmitJob(std::move(s), 1);
        (r ? ok : dup)++;
        if (!r && r.error().message.find("already exists") == std::string::npos) ADD_FAILURE() << r.error().ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  committer.Close();
  EXPECT_EQ(ok.load(), kPerThread);
  EXPECT_EQ(dup.load(), (kThreads - 1) * kPerThread);
  auto all = (*store)->LoadAll();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->jobs.size(), size_t{kPerThread});
}

TEST_P(GroupCommitterTest, CloseDrainsTheQueueThenRefuses) {
  auto store = Store::Open(Target("g.db"), Options());
  ASSERT_TRUE(store);
  std::atomic<int> done{0};
  {
    GroupCommitter committer(store->get(), {.max_group = 7});
    for (int i = 0; i < 1000; ++i) {
      Batch b;
      b.SubmitJob(JobSpec{}, i);
      committer.Enqueue(std::move(b), [&done](Result<BatchResult> r) {
        EXPECT_TRUE(r);
        ++done;
      });
    }
    committer.Close();
    EXPECT_EQ(done.load(), 1000);
    EXPECT_LE(committer.stats().largest_group, 7u);
    bool called = false;
    committer.Enqueue(Batch{}, [&called](Result<BatchResult> r) {
      called = true;
      ASSERT_FALSE(r);
      EXPECT_NE(r.error().message.find("closed"), std::string::npos);
    });
    EXPECT_TRUE(called);
  }  // the destructor after Close() is fine
  auto all = (*store)->LoadAll();
  ASSERT_TRUE(all);
  EXPECT_EQ(all->jobs.size(), 1000u);
}

// I/O fails under concurrent load: every caller gets an answer, and what was acknowledged is
// in the file after reopening.
TEST(GroupCommitter, IoErrorsUnderLoadLoseNothingAcknowledged) {
  FaultVfs::Register();
  TempDir dir;
  const std::string path = dir.File("g.db");
  std::mutex mu;
  std::set<JobId> acked;
  std::atomic<int> failed{0};
  {
    StoreOptions options;
    options.vfs = FaultVfs::kName;
    auto store = Store::Open(path, options);
    ASSERT_TRUE(store);
    GroupCommitter committer(store->get());
    FaultVfs::FailWritesAfter(300);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 200; ++i) {
          auto id = committer.SubmitJob(JobSpec{}, i);
          if (id) {
            std::lock_guard lock(mu);
            acked.insert(*id);
          } else {
            ++failed;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    committer.Close();
    FaultVfs::Clear();
  }
  EXPECT_GT(failed.load(), 0);
  auto store = Store::Open(path);
  ASSERT_TRUE(store) << store.error().ToString();
  EXPECT_TRUE((*store)->CheckIntegrity());
  auto all = (*store)->LoadAll();
  ASSERT_TRUE(all);
  std::set<JobId> present;
  for (const JobRecord& j : all->jobs) present.insert(j.spec.id);
  for (JobId id : acked) EXPECT_TRUE(present.count(id)) << "acknowledged job " << id << " lost";
}

}  // namespace
}  // namespace phalanx::store
