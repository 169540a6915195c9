#include "core/queue/fairshare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace phalanx {
namespace {

constexpr Duration kHour = 3600;

FairshareTracker Make(FairshareConfig config = {}) {
  auto t = FairshareTracker::Create(config);
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  return std::move(*t);
}

FairshareConfig HalfLife(Duration h) {
  FairshareConfig c;
  c.half_life = h;
  return c;
}

TEST(Fairshare, FreshTrackerGivesEveryoneOne) {
  FairshareTracker t = Make();
  EXPECT_EQ(t.UserFactor("alice", "physics", 0), 1.0);
  EXPECT_EQ(t.Usage("alice", "physics", 0), 0.0);
  EXPECT_EQ(t.TotalUsage(100), 0.0);
}

TEST(Fairshare, OneHalfLifeHalvesUsageExactly) {
  FairshareTracker t = Make(HalfLife(kHour));
  ASSERT_TRUE(t.Charge("alice", "physics", 1000, 50));
  EXPECT_EQ(t.Usage("alice", "physics", 50), 1000.0);
  EXPECT_EQ(t.Usage("alice", "physics", 50 + kHour), 500.0);
  EXPECT_EQ(t.Usage("alice", "physics", 50 + 3 * kHour), 125.0);
  EXPECT_EQ(t.AccountUsage("physics", 50 + kHour), 500.0);
  EXPECT_EQ(t.TotalUsage(50 + kHour), 500.0);
}

TEST(Fairshare, LazyDecayEqualsTheClosedForm) {
  // Charges at many times, queried at the end, equal sum(g_i * 2^(-(now - t_i)/h)).
  FairshareTracker t = Make(HalfLife(1000));
  double expected_at_end = 0;
  const Time end = 50000;
  for (int i = 0; i < 200; ++i) {
    const Time at = i * 237;
    const double g = 1 + i % 7;
    ASSERT_TRUE(t.Charge("u", "a", g, at));
    expected_at_end += g * std::exp2(-static_cast<double>(end - at) / 1000);
  }
  EXPECT_NEAR(t.Usage("u", "a", end), expected_at_end, 1e-12 * expected_at_end);
}

TEST(Fairshare, OutOfOrderChargesGiveTheSameUsage) {
  FairshareTracker in_order = Make(HalfLife(kHour));
  FairshareTracker reversed = Make(HalfLife(kHour));
  ASSERT_TRUE(in_order.Charge("u", "a", 100, 0));
  ASSERT_TRUE(in_order.Charge("u", "a", 300, kHour));
  ASSERT_TRUE(reversed.Charge("u", "a", 300, kHour));
  ASSERT_TRUE(reversed.Charge("u", "a", 100, 0));
  EXPECT_EQ(in_order.Usage("u", "a", 2 * kHour), 175.0);  // 100/4 + 300/2
  EXPECT_EQ(reversed.Usage("u", "a", 2 * kHour), 175.0);
}

TEST(Fairshare, QueriesBeforeTheLatestChargeAreAnsweredAtIt) {
  FairshareTracker t = Make(HalfLife(kHour));
  ASSERT_TRUE(t.Charge("u", "a", 100, 10 * kHour));
  EXPECT_EQ(t.Usage("u", "a", 0), 100.0);  // never grows by running decay backwards
  EXPECT_EQ(t.Usage("u", "a", 11 * kHour), 50.0);
}

TEST(Fairshare, ZeroHalfLifeMeansNoDecay) {
  FairshareTracker t = Make(HalfLife(0));
  ASSERT_TRUE(t.Charge("u", "a", 100, 0));
  EXPECT_EQ(t.Usage("u", "a", 1'000'000'000), 100.0);
}

TEST(Fairshare, TwoEqualUsersAtThreeToOne) {
  // One account holds all usage: U_account/U_total = 1 with S_account = 1 (the only account),
  // so F_account = 2^-1. Within it, shares 1:1 (S = 0.5 each), usage 3:1 (U = 0.75, 0.25):
  // F_user = 2^-(0.75/0.5) = 2^-1.5 and 2^-(0.25/0.5) = 2^-0.5.
  FairshareTracker t = Make(HalfLife(kHour));
  ASSERT_TRUE(t.Charge("heavy", "lab", 300, 0));
  ASSERT_TRUE(t.Charge("light", "lab", 100, 0));
  const FairshareDetail h = t.Explain("heavy", "lab", 0);
  EXPECT_DOUBLE_EQ(h.account_factor, 0.5);
  EXPECT_DOUBLE_EQ(h.user_norm_usage, 0.75);
  EXPECT_DOUBLE_EQ(h.user_norm_shares, 0.5);
  EXPECT_DOUBLE_EQ(h.user_factor, std::exp2(-1.5));
  EXPECT_DOUBLE_EQ(t.UserFactor("heavy", "lab", 0), std::exp2(-2.5));
  EXPECT_DOUBLE_EQ(t.UserFactor("light", "lab", 0), std::exp2(-1.5));
  // Decay scales every usage alike: the factors do not change with time.
  EXPECT_DOUBLE_EQ(t.UserFactor("heavy", "lab", 5 * kHour), std::exp2(-2.5));
}

TEST(Fairshare, AccountsAtTheirSharesGetOneHalf) {
  FairshareConfig c = HalfLife(kHour);
  c.accounts = {{.account = "big", .shares = 3, .users = {}}, {.account = "small", .shares = 1, .users = {}}};
  FairshareTracker t = Make(c);
  ASSERT_TRUE(t.Charge("b", "big", 750, 0));
  ASSERT_TRUE(t.Charge("s", "small", 250, 0));
  EXPECT_DOUBLE_EQ(t.Explain("b", "big", 0).account_factor, 0.5);
  EXPECT_DOUBLE_EQ(t.Explain("s", "small", 0).account_factor, 0.5);
  // An unused account keeps factor 1, and so do its users.
  EXPECT_EQ(t.UserFactor("nobody", "idle", 0), 1.0);
}

TEST(Fairshare, ANewUserInABusyAccountInheritsTheAccountFactor) {
  FairshareConfig c = HalfLife(kHour);
  c.accounts = {{.account = "a", .shares = 1, .users = {}}, {.account = "b", .shares = 1, .users = {}}};
  FairshareTracker t = Make(c);
  ASSERT_TRUE(t.Charge("old", "a", 100, 0));
  const FairshareDetail d = t.Explain("new", "a", 0);
  EXPECT_EQ(d.user_usage, 0.0);
  EXPECT_EQ(d.user_factor, 1.0);
  EXPECT_DOUBLE_EQ(d.factor, std::exp2(-2.0));  // U_a = 1, S_a = 0.5
}

TEST(Fairshare, UserSharesWithinAnAccount) {
  FairshareConfig c = HalfLife(kHour);
  c.accounts = {
      {.account = "lab", .shares = 1, .users = {{.user = "pi", .shares = 3}, {.user = "student", .shares = 1}}}};
  FairshareTracker t = Make(c);
  ASSERT_TRUE(t.Charge("pi", "lab", 300, 0));
  ASSERT_TRUE(t.Charge("student", "lab", 100, 0));
  // Both exactly at their share within the account.
  EXPECT_DOUBLE_EQ(t.Explain("pi", "lab", 0).user_factor, 0.5);
  EXPECT_DOUBLE_EQ(t.Explain("student", "lab", 0).user_factor, 0.5);
  // An unlisted user gets the default share: 1 of 3 + 1 + 1.
  EXPECT_DOUBLE_EQ(t.Explain("guest", "lab", 0).user_norm_shares, 0.2);
}

TEST(Fairshare, UnknownAccountsGetTheDefaultShare) {
  FairshareConfig c = HalfLife(kHour);
  c.default_account_shares = 2;
  c.accounts = {{.account = "known", .shares = 6, .users = {}}};
  FairshareTracker t = Make(c);
  EXPECT_DOUBLE_EQ(t.Explain("u", "stranger", 0).account_norm_shares, 0.25);  // 2 / (6 + 2)
  ASSERT_TRUE(t.Charge("u", "stranger", 1, 0));
  ASSERT_TRUE(t.Charge("v", "other", 1, 0));
  EXPECT_DOUBLE_EQ(t.Explain("u", "stranger", 0).account_norm_shares, 0.2);  // 2 / (6 + 2 + 2)
}

TEST(Fairshare, FactorIsMonotoneDecreasingInUsage) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    FairshareTracker t = Make(HalfLife(kHour));
    std::uniform_real_distribution<double> amount(0, 1000);
    for (int i = 0; i < 6; ++i) {
      ASSERT_TRUE(t.Charge("u" + std::to_string(i % 3), "a" + std::to_string(i % 2), amount(rng), i * 60));
    }
    double previous = t.UserFactor("me", "a0", 600);
    for (int step = 0; step < 30; ++step) {
      ASSERT_TRUE(t.Charge("me", "a0", amount(rng), 600));
      const double f = t.UserFactor("me", "a0", 600);
      EXPECT_LE(f, previous) << "trial " << trial << " step " << step;
      EXPECT_GT(f, 0.0);
      EXPECT_LE(f, 1.0);
      previous = f;
    }
  }
}

TEST(Fairshare, FactorStaysPositiveForExtremeShares) {
  FairshareConfig c = HalfLife(kHour);
  c.accounts = {{.account = "tiny", .shares = 1e-300, .users = {}}, {.account = "huge", .shares = 1e300, .users = {}}};
  FairshareTracker t = Make(c);
  ASSERT_TRUE(t.Charge("u", "tiny", 1, 0));
  EXPECT_GT(t.UserFactor("u", "tiny", 0), 0.0);
}

TEST(Fairshare, DecayToNothingRestoresOne) {
  FairshareTracker t = Make(HalfLife(1));
  ASSERT_TRUE(t.Charge("u", "a", 1, 0));
  EXPECT_EQ(t.UserFactor("u", "a", 1'000'000), 1.0);  // 2^-1e6 underflows to 0: no usage
}

TEST(Fairshare, BadChargesFailAndChangeNothing) {
  FairshareTracker t = Make(HalfLife(kHour));
  ASSERT_TRUE(t.Charge("u", "a", 10, 0));
  EXPECT_FALSE(t.Charge("u", "a", -1, 0));
  EXPECT_FALSE(t.Charge("u", "a", std::nan(""), 0));
  EXPECT_FALSE(t.Charge("u", "a", INFINITY, 0));
  EXPECT_FALSE(t.Charge("", "a", 1, 0));
  auto bad = t.Charge("u", "", 1, 0);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().where, "charge.account");
  EXPECT_EQ(t.Usage("u", "a", 0), 10.0);
  EXPECT_EQ(t.TotalUsage(0), 10.0);
}

TEST(Fairshare, ConfigErrorsNameTheField) {
  struct Case {
    const char* what;
    FairshareConfig config;
    const char* where;
  };
  FairshareConfig negative_half_life = HalfLife(-1);
  FairshareConfig zero_default;
  zero_default.default_account_shares = 0;
  FairshareConfig nan_user_default;
  nan_user_default.default_user_shares = std::nan("");
  FairshareConfig dup_account;
  dup_account.accounts = {{.account = "a", .shares = 1, .users = {}}, {.account = "a", .shares = 2, .users = {}}};
  FairshareConfig bad_user_share;
  bad_user_share.accounts = {{.account = "a", .shares = 1, .users = {{.user = "u", .shares = -2}}}};
  FairshareConfig dup_user;
  dup_user.accounts = {
      {.account = "a", .shares = 1, .users = {{.user = "u", .shares = 1}, {.user = "u", .shares = 1}}}};
  FairshareConfig empty_account;
  empty_account.accounts = {{.account = "", .shares = 1, .users = {}}};
  const Case cases[] = {
      {"negative half-life", negative_half_life, "fairshare.half_life"},
      {"zero default account shares", zero_default, "fairshare.default_account_shares"},
      {"NaN default user shares", nan_user_default, "fairshare.default_user_shares"},
      {"account twice", dup_account, "fairshare.accounts[1].account"},
      {"negative user shares", bad_user_share, "fairshare.accounts[0].users[0].shares"},
      {"user twice", dup_user, "fairshare.accounts[0].users[1].user"},
      {"empty account", empty_account, "fairshare.accounts[0].account"},
  };
  for (const Case& c : cases) {
    auto t = FairshareTracker::Create(c.config);
    ASSERT_FALSE(t.has_value()) << c.what;
    EXPECT_EQ(t.error().where, c.where) << c.what << ": " << t.error().ToString();
  }
}

}  // namespace
}  // namespace phalanx
