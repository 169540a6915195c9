// AccessRules: class and account rules (users, groups, accounts), defaults, admins, and the
// refusals' messages; Build's checks of the configuration.
#include "core/queue/access.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace phalanx {
namespace {

const std::vector<std::string> kClasses = {"low", "normal", "high", "urgent"};

AccessConfig AccessConf() {
  AccessConfig c;
  c.classes["urgent"] = {.users = {"alice"}, .groups = {"oncall"}, .accounts = {"prod"}};
  c.classes["high"] = {};  // admins only
  c.accounts["ml"] = {.users = {"alice"}, .groups = {"ml-team"}};
  c.accounts["prod"] = {.users = {"carol"}};
  c.default_accounts["alice"] = "ml";
  return c;
}

AccessRules Rules(AccessConfig c = AccessConf()) {
  auto r = AccessRules::Build(std::move(c), kClasses);
  EXPECT_TRUE(r) << r.error().ToString();
  return r ? *r : AccessRules();
}

Requester Who(std::string user, std::vector<std::string> groups = {}, bool admin = false) {
  return Requester{std::move(user), std::move(groups), admin};
}

TEST(AccessRules, EverythingIsOpenWithoutRules) {
  AccessRules r;
  EXPECT_TRUE(r.empty());
  EXPECT_TRUE(r.CheckClass(Who("bob"), "urgent", "anything"));
  EXPECT_TRUE(r.CheckAccount(Who("bob"), "anything"));
  EXPECT_EQ(r.AccountFor("bob", ""), "");
}

TEST(AccessRules, AccountMembersByUserOrGroup) {
  const AccessRules r = Rules();
  EXPECT_TRUE(r.CheckAccount(Who("alice"), "ml"));
  EXPECT_TRUE(r.CheckAccount(Who("dave", {"users", "ml-team"}), "ml"));
  const Status bob = r.CheckAccount(Who("bob", {"users"}), "ml");
  ASSERT_FALSE(bob);
  EXPECT_EQ(bob.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(bob.error().ToString(),
            "account: user bob (groups users) may not charge account ml: access.accounts.ml allows users [alice], "
            "groups [ml-team]");
  EXPECT_TRUE(r.CheckAccount(Who("bob"), "")) << "no account is always allowed";
  EXPECT_TRUE(r.CheckAccount(Who("bob"), "physics")) << "unlisted accounts are open by default";
  EXPECT_TRUE(r.CheckAccount(Who("root", {}, true), "ml")) << "admins pass";
}

TEST(AccessRules, UnlistedAccountsCanBeRefused) {
  AccessConfig c = AccessConf();
  c.unlisted_accounts_open = false;
  const AccessRules r = Rules(c);
  const Status st = r.CheckAccount(Who("bob"), "physics");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(st.error().message.find("account physics is not a configured account (access.unlisted_accounts: deny)"),
            std::string::npos)
      << st.error().message;
  EXPECT_TRUE(r.CheckAccount(Who("alice"), "ml"));
  EXPECT_TRUE(r.CheckAccount(Who("bob"), ""));
}

TEST(AccessRules, ClassByUserGroupOrAccount) {
  const AccessRules r = Rules();
  EXPECT_TRUE(r.CheckClass(Who("alice"), "urgent", ""));
  EXPECT_TRUE(r.CheckClass(Who("erin", {"oncall"}), "urgent", ""));
  EXPECT_TRUE(r.CheckClass(Who("carol"), "urgent", "prod")) << "by the account charged";
  EXPECT_TRUE(r.CheckClass(Who("bob"), "normal", "")) << "a class without a rule is open";
  const Status bob = r.CheckClass(Who("bob"), "urgent", "physics");
  ASSERT_FALSE(bob);
  EXPECT_EQ(bob.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(bob.error().ToString(),
            "priority_class: user bob charging account physics may not use class urgent: access.classes.urgent "
            "allows users [alice], groups [oncall], accounts [prod]");
  const Status high = r.CheckClass(Who("alice"), "high", "");
  ASSERT_FALSE(high);
  EXPECT_NE(high.error().message.find("access.classes.high allows admins only"), std::string::npos)
      << high.error().message;
  EXPECT_TRUE(r.CheckClass(Who("root", {}, true), "high", ""));
}

TEST(AccessRules, DefaultAccount) {
  const AccessRules r = Rules();
  EXPECT_EQ(r.AccountFor("alice", ""), "ml");
  EXPECT_EQ(r.AccountFor("alice", "other"), "other") << "a named account wins";
  EXPECT_EQ(r.AccountFor("bob", ""), "");
}

TEST(AccessRules, BuildRefusesBadRules) {
  const auto err = [](AccessConfig c) {
    auto r = AccessRules::Build(std::move(c), kClasses);
    return r ? std::string("ok") : r.error().ToString();
  };
  AccessConfig unknown;
  unknown.classes["urgnet"] = {.users = {"alice"}};
  EXPECT_EQ(err(unknown), "access.classes.urgnet: no such priority class (known: low, normal, high, urgent)");
  AccessConfig empty_name;
  empty_name.accounts["ml"] = {.users = {""}};
  EXPECT_EQ(err(empty_name), "access.accounts.ml: an empty name in a list");
  AccessConfig nested;
  nested.accounts["ml"] = {.accounts = {"x"}};
  EXPECT_EQ(err(nested), "access.accounts.ml: an account rule has users and groups, not accounts");
  AccessConfig not_member;
  not_member.accounts["ml"] = {.users = {"alice"}};
  not_member.default_accounts["bob"] = "ml";
  EXPECT_EQ(err(not_member), "access.default_accounts.bob: account ml does not list user bob");
  AccessConfig closed;
  closed.unlisted_accounts_open = false;
  closed.default_accounts["bob"] = "physics";
  EXPECT_EQ(err(closed), "access.default_accounts.bob: account physics has no rule and unlisted accounts are refused");
  EXPECT_EQ(err(AccessConf()), "ok");
}

}  // namespace
}  // namespace phalanx
