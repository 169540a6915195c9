// Leadership in the store (store.h, docs/store.md "Leadership"), on both backends: two Stores
// on one database; the second takes over only once the first's lease lapses, with a higher
// epoch; the first's next write is refused in its own transaction (fencing) and it learns it
// was deposed; renewal keeps a lease; resigning hands it over at once; and under a stream of
// group-committed writes, a takeover leaves exactly the acknowledged writes in the store.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapters/store/group_committer.h"
#include "adapters/store/store.h"
#include "store_test_util.h"

namespace phalanx::store {
namespace {

class StoreLeaderTest : public testing::StoreBackendTest {
 protected:
  // Waits (on the database's clock) until the stored lease has lapsed.
  void WaitForLapse(Store& s) {
    for (int i = 0; i < 500; ++i) {
      auto l = s.ReadLeader();
      ASSERT_TRUE(l) << l.error().ToString();
      ASSERT_TRUE(l->has_value());
      if ((*l)->expires_ms <= (*l)->now_ms) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "the lease never lapsed";
  }
};
INSTANTIATE_BOTH_BACKENDS(StoreLeaderTest);

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_P(StoreLeaderTest, SecondTakesOverAfterTheLeaseLapsesAndTheFirstIsFenced) {
  auto a = Open("l.db");
  auto b = Open("l.db");
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(b->ReadLeader().value().has_value()) << "nobody led yet";
  // Leases are generous: the checks that the lease still runs must hold on a loaded machine.
  auto la = a->AcquireLeadership("host-a:1", 1000);
  ASSERT_TRUE(la) << la.error().ToString();
  EXPECT_EQ(la->epoch, 1u);
  EXPECT_EQ(a->epoch(), 1u);
  EXPECT_GE(la->expires_ms - la->now_ms, 1000);

  auto refused = b->AcquireLeadership("host-b:2", 300);
  ASSERT_FALSE(refused);
  EXPECT_TRUE(Has(refused.error().message, "held by host-a:1 (epoch 1) for another")) << refused.error().message;
  EXPECT_EQ(b->epoch(), 0u);

  ASSERT_EQ(a->SubmitJob(JobSpec{}, 1).value_or(0), 1u);
  WaitForLapse(*b);
  auto lb = b->AcquireLeadership("host-b:2", 60000);
  ASSERT_TRUE(lb) << lb.error().ToString();
  EXPECT_EQ(lb->epoch, 2u);
  EXPECT_EQ(b->next_job_id(), 2u) << "the new leader re-reads the id counter";

  // The deposed leader's next write: refused, naming both epochs; nothing of it is stored.
  Batch w;
  w.SubmitJob(JobSpec{}, 2);
  w.RecordEvent(2, "note", 0, "from a");
  auto r = a->Apply(w);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, a->path());
  EXPECT_TRUE(Has(r.error().message, "deposed: this store led epoch 1 but the store now records epoch 2 (host-b:2)"))
      << r.error().message;
  EXPECT_TRUE(a->deposed());
  EXPECT_TRUE(Has(a->SetNodeState("n1", NodeState::kDown, 3).error().message, "deposed")) << "and every later one";
  auto renew = a->RenewLeadership(300);
  ASSERT_FALSE(renew);
  EXPECT_TRUE(Has(renew.error().message, "now records epoch 2 (host-b:2); this store no longer writes"))
      << renew.error().message;
  auto again = a->AcquireLeadership("host-a:1", 300);
  ASSERT_FALSE(again);
  EXPECT_TRUE(Has(again.error().message, "held by host-b:2 (epoch 2)")) << again.error().message;

  ASSERT_EQ(b->SubmitJob(JobSpec{}, 4).value_or(0), 2u);
  auto all = b->LoadAll();
  ASSERT_TRUE(all) << all.error().ToString();
  ASSERT_EQ(all->jobs.size(), 2u);
  auto events = b->ReadEvents(0, 100);
  ASSERT_TRUE(events);
  for (const StoredEvent& e : *events) EXPECT_NE(e.payload, "from a");
  auto leader = a->ReadLeader();
  ASSERT_TRUE(leader && leader->has_value());
  EXPECT_EQ((*leader)->holder, "host-b:2");
  EXPECT_EQ((*leader)->epoch, 2u);
}

TEST_P(StoreLeaderTest, RenewalKeepsTheLeaseAndResigningHandsItOver) {
  auto a = Open("l.db");
  auto b = Open("l.db");
  ASSERT_TRUE(a && b);
  // 1 s leases renewed every 200 ms for 1.2 s: without the renewals the lease would lapse;
  // each renewal moves the expiry forward.
  auto first = a->AcquireLeadership("a", 1000);
  ASSERT_TRUE(first);
  int64_t expires = first->expires_ms;
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto renewed = a->RenewLeadership(1000);
    ASSERT_TRUE(renewed) << renewed.error().ToString();
    EXPECT_EQ(renewed->epoch, 1u);
    EXPECT_GT(renewed->expires_ms, expires);
    expires = renewed->expires_ms;
    EXPECT_FALSE(b->AcquireLeadership("b", 400)) << "renewed at " << i;
  }
  // The same through a batch (how phalanxd renews, behind its other writes in the committer).
  {
    GroupCommitter committer(a.get());
    for (int i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      Batch renew;
      renew.RenewLeadership(1000);
      renew.RecordEvent(i, "renewed", 0, "");
      auto r = committer.Write(std::move(renew));
      ASSERT_TRUE(r) << r.error().ToString();
      auto lease = b->ReadLeader();
      ASSERT_TRUE(lease && lease->has_value());
      EXPECT_GT((*lease)->expires_ms, expires);
      expires = (*lease)->expires_ms;
      EXPECT_FALSE(b->AcquireLeadership("b", 400)) << "renewed by batch at " << i;
    }
  }
  auto same = a->AcquireLeadership("a", 1000);  // the leader acquiring again renews
  ASSERT_TRUE(same);
  EXPECT_EQ(same->epoch, 1u);
  ASSERT_TRUE(a->SubmitJob(JobSpec{}, 1));
  ASSERT_TRUE(a->ResignLeadership());
  auto lb = b->AcquireLeadership("b", 400);
  ASSERT_TRUE(lb) << lb.error().ToString();
  EXPECT_EQ(lb->epoch, 2u);
  EXPECT_FALSE(a->SubmitJob(JobSpec{}, 2));
  EXPECT_TRUE(b->SubmitJob(JobSpec{}, 2));
}

TEST_P(StoreLeaderTest, BadArgumentsAndTheReservedKey) {
  auto a = Open("l.db");
  ASSERT_TRUE(a);
  EXPECT_TRUE(Has(a->AcquireLeadership("", 100).error().message, "holder '' must be 1..200 printable bytes"));
  EXPECT_TRUE(Has(a->AcquireLeadership("a\nb", 100).error().message, "printable"));
  EXPECT_TRUE(Has(a->AcquireLeadership("a", 0).error().message, "lease 0 ms must be > 0"));
  EXPECT_TRUE(Has(a->RenewLeadership(100).error().message, "does not lead"));
  Batch renew;
  renew.RenewLeadership(100);
  auto nr = a->Apply(renew);
  ASSERT_FALSE(nr);
  EXPECT_TRUE(Has(nr.error().message, "does not lead")) << nr.error().message;
  Batch b;
  b.SetMeta("leader", "1 99999999999999 me");
  auto r = a->Apply(b);
  ASSERT_FALSE(r);
  EXPECT_TRUE(Has(r.error().message, "meta key 'leader' belongs to the store")) << r.error().message;
  // A store that never led writes without fencing (one daemon, no failover).
  EXPECT_TRUE(a->SubmitJob(JobSpec{}, 1));
}

// A takeover in the middle of a stream of group-committed writes: the old leader's writes stop
// at the takeover, and what is in the store is exactly what was acknowledged.
TEST_P(StoreLeaderTest, TakeoverUnderLoadKeepsExactlyTheAcknowledgedWrites) {
  auto a = Open("l.db");
  auto b = Open("l.db");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->AcquireLeadership("a", 1000));
  std::atomic<bool> refused{false};
  std::vector<std::vector<JobId>> acked(4);
  {
    GroupCommitter committer(a.get());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 100000; ++i) {
          JobSpec s;
          s.name = "a" + std::to_string(t) + "-" + std::to_string(i);
          auto id = committer.SubmitJob(std::move(s), i);
          if (!id) {
            EXPECT_TRUE(Has(id.error().message, "deposed")) << id.error().message;
            refused = true;
            return;
          }
          acked[t].push_back(*id);
        }
      });
    }
    WaitForLapse(*b);
    auto lb = b->AcquireLeadership("b", 60000);
    ASSERT_TRUE(lb) << lb.error().ToString();
    for (auto& th : threads) th.join();
  }
  EXPECT_TRUE(refused);
  std::set<JobId> want;
  for (const auto& ids : acked) want.insert(ids.begin(), ids.end());
  EXPECT_GT(want.size(), 10u);
  auto all = b->LoadAll();
  ASSERT_TRUE(all) << all.error().ToString();
  std::set<JobId> present;
  for (const JobRecord& j : all->jobs) present.insert(j.spec.id);
  EXPECT_EQ(present, want) << "the store holds exactly the acknowledged submissions";
  auto next = b->SubmitJob(JobSpec{}, 1);
  ASSERT_TRUE(next) << next.error().ToString();
  EXPECT_EQ(*next, *want.rbegin() + 1);
}

}  // namespace
}  // namespace phalanx::store
