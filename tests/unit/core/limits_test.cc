#include "core/queue/limits.h"

#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace phalanx {

void PrintTo(const LimitHit& hit, std::ostream* os) { *os << hit.ToString(); }

namespace {

LimitHit User(std::string reason) { return {LimitScope::kUser, std::move(reason)}; }
LimitHit Account(std::string reason) { return {LimitScope::kAccount, std::move(reason)}; }

LimitsConfig Config() {
  LimitsConfig c;
  c.default_user = {.max_running_gpus = 16, .max_pending_jobs = 3};
  c.users["vip"] = {.max_running_gpus = 0, .max_pending_jobs = 0};  // unlimited
  c.accounts["lab"] = {.max_running_gpus = 24, .max_pending_jobs = 4};
  return c;
}

TEST(Limits, NoLimitsByDefault) {
  LimitTracker t;
  for (int i = 0; i < 1000; ++i) t.AddPending("u", "a");
  t.AddRunning("u", "a", 100000);
  EXPECT_EQ(t.CheckSubmit("u", "a"), std::nullopt);
  EXPECT_EQ(t.CheckStart("u", "a", 100000), std::nullopt);
  EXPECT_EQ(t.CheckRequest("u", "a", 100000), std::nullopt);
}

TEST(Limits, UserPendingLimit) {
  LimitTracker t(Config());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(t.CheckSubmit("alice", "other"), std::nullopt) << i;
    t.AddPending("alice", "other");
  }
  EXPECT_EQ(t.CheckSubmit("alice", "other"), User("user alice has 3 pending jobs (max 3)"));
  ASSERT_TRUE(t.RemovePending("alice", "other"));
  EXPECT_EQ(t.CheckSubmit("alice", "other"), std::nullopt);
}

TEST(Limits, AccountPendingLimitAcrossUsers) {
  LimitTracker t(Config());
  t.AddPending("alice", "lab");
  t.AddPending("alice", "lab");
  t.AddPending("bob", "lab");
  t.AddPending("vip", "lab");
  EXPECT_EQ(t.CheckSubmit("carol", "lab"), Account("account lab has 4 pending jobs (max 4)"));
  // The user's own limit is reported first.
  t.AddPending("alice", "other");
  EXPECT_EQ(t.CheckSubmit("alice", "lab"), User("user alice has 3 pending jobs (max 3)"));
  EXPECT_EQ(t.CheckSubmit("carol", "other"), std::nullopt);
}

TEST(Limits, RunningGpuLimits) {
  LimitTracker t(Config());
  t.AddRunning("alice", "lab", 12);
  EXPECT_EQ(t.CheckStart("alice", "lab", 4), std::nullopt);  // exactly at 16
  EXPECT_EQ(t.CheckStart("alice", "lab", 5), User("user alice has 12 running GPUs, 5 more would exceed max 16"));
  t.AddRunning("vip", "lab", 8);
  EXPECT_EQ(t.CheckStart("vip", "lab", 8), Account("account lab has 20 running GPUs, 8 more would exceed max 24"));
  EXPECT_EQ(t.CheckStart("vip", "elsewhere", 1000), std::nullopt);
}

// Each place a running-GPU limit can be set is enforced on its own (CheckStart skips the
// lookups when none is set anywhere).
TEST(Limits, ARunningGpuLimitSetInOnePlaceAloneIsEnforced) {
  const auto only = [](auto set) {
    LimitsConfig c;
    set(c);
    LimitTracker t(c);
    t.AddRunning("alice", "lab", 8);
    return t.CheckStart("alice", "lab", 1);
  };
  EXPECT_EQ(only([](LimitsConfig& c) { c.default_user.max_running_gpus = 8; }),
            User("user alice has 8 running GPUs, 1 more would exceed max 8"));
  EXPECT_EQ(only([](LimitsConfig& c) { c.default_account.max_running_gpus = 8; }),
            Account("account lab has 8 running GPUs, 1 more would exceed max 8"));
  EXPECT_EQ(only([](LimitsConfig& c) { c.users["alice"].max_running_gpus = 8; }),
            User("user alice has 8 running GPUs, 1 more would exceed max 8"));
  EXPECT_EQ(only([](LimitsConfig& c) { c.accounts["lab"].max_running_gpus = 8; }),
            Account("account lab has 8 running GPUs, 1 more would exceed max 8"));
  EXPECT_EQ(only([](LimitsConfig& c) { c.users["bob"].max_running_gpus = 8; }), std::nullopt);
  EXPECT_EQ(only([](LimitsConfig& c) { c.users["alice"].max_pending_jobs = 1; }), std::nullopt);
}

TEST(Limits, RequestsAboveALimitCanNeverStart) {
  LimitTracker t(Config());
  EXPECT_EQ(t.CheckRequest("alice", "x", 16), std::nullopt);
  EXPECT_EQ(t.CheckRequest("alice", "x", 17), User("job requests 17 GPUs, user alice may run at most 16"));
  EXPECT_EQ(t.CheckRequest("vip", "lab", 32), Account("job requests 32 GPUs, account lab may run at most 24"));
}

TEST(Limits, AHitNamesItsLimitAsSlurmDoes) {
  EXPECT_EQ(User("user alice has 3 pending jobs (max 3)").ToString(),
            "UserLimit: user alice has 3 pending jobs (max 3)");
  EXPECT_EQ(Account("account lab has 4 pending jobs (max 4)").ToString(),
            "AccountLimit: account lab has 4 pending jobs (max 4)");
}

TEST(Limits, RemovingWhatWasNotAddedFailsAndChangesNothing) {
  LimitTracker t(Config());
  EXPECT_FALSE(t.RemovePending("alice", "lab"));
  EXPECT_FALSE(t.RemoveRunning("alice", "lab", 1));
  t.AddPending("alice", "lab");
  t.AddRunning("alice", "lab", 4);
  // bob has nothing in lab; alice has nothing in other: the account side must not move either.
  EXPECT_FALSE(t.RemovePending("bob", "lab"));
  EXPECT_FALSE(t.RemovePending("alice", "other"));
  EXPECT_FALSE(t.RemoveRunning("alice", "lab", 5));
  EXPECT_FALSE(t.RemoveRunning("bob", "lab", 1));
  auto err = t.RemoveRunning("alice", "other", 2);
  ASSERT_FALSE(err);
  EXPECT_NE(err.error().message.find("account 'other' runs 0 GPUs"), std::string::npos) << err.error().message;
  EXPECT_EQ(t.UserUsage("alice").pending_jobs, 1u);
  EXPECT_EQ(t.UserUsage("alice").running_gpus, 4u);
  EXPECT_EQ(t.AccountUsage("lab").pending_jobs, 1u);
  EXPECT_EQ(t.AccountUsage("lab").running_gpus, 4u);
  EXPECT_EQ(t.UserUsage("bob").pending_jobs, 0u);
  ASSERT_TRUE(t.RemovePending("alice", "lab"));
  ASSERT_TRUE(t.RemoveRunning("alice", "lab", 4));
  EXPECT_EQ(t.UserUsage("alice").running_gpus, 0u);
  EXPECT_FALSE(t.RemovePending("alice", "lab"));
}

TEST(Limits, RandomSequencesMatchALedger) {
  std::mt19937 rng(11);
  const std::vector<std::string> users = {"u0", "u1", "u2"};
  const std::vector<std::string> accounts = {"a0", "a1"};
  struct Job {
    size_t user, account;
    uint32_t gpus;
    bool running;
  };
  LimitTracker t(Config());
  std::vector<Job> jobs;
  for (int step = 0; step < 5000; ++step) {
    const int op = std::uniform_int_distribution<int>(0, 3)(rng);
    if (op == 0 || jobs.empty()) {
      Job j{rng() % users.size(), rng() % accounts.size(), static_cast<uint32_t>(rng() % 9), false};
      t.AddPending(users[j.user], accounts[j.account]);
      jobs.push_back(j);
    } else {
      const size_t k = rng() % jobs.size();
      Job& j = jobs[k];
      if (!j.running && op == 1) {
        ASSERT_TRUE(t.RemovePending(users[j.user], accounts[j.account]));
        t.AddRunning(users[j.user], accounts[j.account], j.gpus);
        j.running = true;
      } else if (j.running) {
        ASSERT_TRUE(t.RemoveRunning(users[j.user], accounts[j.account], j.gpus));
        jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        ASSERT_TRUE(t.RemovePending(users[j.user], accounts[j.account]));
        jobs.erase(jobs.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    // Recount.
    for (size_t u = 0; u < users.size(); ++u) {
      LimitUsage want;
      for (const Job& j : jobs) {
        if (j.user != u) continue;
        (j.running ? want.running_gpus : want.pending_jobs) += j.running ? j.gpus : 1;
      }
      ASSERT_EQ(t.UserUsage(users[u]).pending_jobs, want.pending_jobs) << step;
      ASSERT_EQ(t.UserUsage(users[u]).running_gpus, want.running_gpus) << step;
    }
    for (size_t a = 0; a < accounts.size(); ++a) {
      LimitUsage want;
      for (const Job& j : jobs) {
        if (j.account != a) continue;
        (j.running ? want.running_gpus : want.pending_jobs) += j.running ? j.gpus : 1;
      }
      ASSERT_EQ(t.AccountUsage(accounts[a]).pending_jobs, want.pending_jobs) << step;
      ASSERT_EQ(t.AccountUsage(accounts[a]).running_gpus, want.running_gpus) << step;
    }
  }
}

}  // namespace
}  // namespace phalanx
