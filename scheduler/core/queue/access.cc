#include "core/queue/access.h"

#include <algorithm>

namespace phalanx {
namespace {

bool Has(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

bool InAny(const std::vector<std::string>& list, const std::vector<std::string>& xs) {
  return std::any_of(xs.begin(), xs.end(), [&](const std::string& x) { return Has(list, x); });
}

std::string Join(const std::vector<std::string>& xs) {
  std::string out;
  for (const std::string& x : xs) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// "users [a, b], groups [g]" (the lists that are set); "nobody but admins" when none is.
std::string Describe(const AccessList& l, bool with_accounts) {
  std::string out;
  const auto add = [&](const char* what, const std::vector<std::string>& xs) {
    if (xs.empty()) return;
    out += (out.empty() ? "" : ", ") + std::string(what) + " [" + Join(xs) + "]";
  };
  add("users", l.users);
  add("groups", l.groups);
  if (with_accounts) add("accounts", l.accounts);
  return out.empty() ? "admins only" : out;
}

std::string Who(const Requester& who) {
  return "user " + who.user + (who.groups.empty() ? "" : " (groups " + Join(who.groups) + ")");
}

Status CheckNames(const std::string& where, const AccessList& l) {
  for (const auto* list : {&l.users, &l.groups, &l.accounts}) {
    for (const std::string& x : *list) {
      if (x.empty()) return Fail(where, "an empty name in a list");
    }
  }
  return {};
}

}  // namespace

Result<AccessRules> AccessRules::Build(AccessConfig config, const std::vector<std::string>& known_classes) {
  for (const auto& [name, rule] : config.classes) {
    const std::string where = "access.classes." + name;
    if (!Has(known_classes, name)) return Fail(where, "no such priority class (known: " + Join(known_classes) + ")");
    PHX_RETURN_IF_ERROR(CheckNames(where, rule));
  }
  for (const auto& [name, rule] : config.accounts) {
    const std::string where = "access.accounts." + name;
    if (name.empty()) return Fail("access.accounts", "an empty account name");
    if (!rule.accounts.empty()) return Fail(where, "an account rule has users and groups, not accounts");
    PHX_RETURN_IF_ERROR(CheckNames(where, rule));
  }
  for (const auto& [user, account] : config.default_accounts) {
    const std::string where = "access.default_accounts." + user;
    if (user.empty() || account.empty()) return Fail("access.default_accounts", "an empty user or account name");
    auto it = config.accounts.find(account);
    if (it != config.accounts.end() && it->second.groups.empty() && !Has(it->second.users, user))
      return Fail(where, "account " + account + " does not list user " + user);
    if (it == config.accounts.end() && !config.unlisted_accounts_open)
      return Fail(where, "account " + account + " has no rule and unlisted accounts are refused");
  }
  return AccessRules(std::move(config));
}

std::string AccessRules::AccountFor(const std::string& user, const std::string& account) const {
  if (!account.empty()) return account;
  auto it = config_.default_accounts.find(user);
  return it == config_.default_accounts.end() ? "" : it->second;
}

Status AccessRules::CheckAccount(const Requester& who, const std::string& account) const {
  if (who.admin || account.empty()) return {};
  auto it = config_.accounts.find(account);
  if (it == config_.accounts.end()) {
    if (config_.unlisted_accounts_open) return {};
    return Fail(ErrorCode::kPermissionDenied, "account",
                "account " + account + " is not a configured account (access.unlisted_accounts: deny)");
  }
  const AccessList& rule = it->second;
  if (Has(rule.users, who.user) || InAny(rule.groups, who.groups)) return {};
  return Fail(ErrorCode::kPermissionDenied, "account",
              Who(who) + " may not charge account " + account + ": access.accounts." + account + " allows " +
                  Describe(rule, false));
}

Status AccessRules::CheckClass(const Requester& who, const std::string& cls, const std::string& account) const {
  if (who.admin) return {};
  auto it = config_.classes.find(cls);
  if (it == config_.classes.end()) return {};
  const AccessList& rule = it->second;
  if (Has(rule.users, who.user) || InAny(rule.groups, who.groups) || (!account.empty() && Has(rule.accounts, account)))
    return {};
  return Fail(ErrorCode::kPermissionDenied, "priority_class",
              Who(who) + (account.empty() ? "" : " charging account " + account) + " may not use class " + cls +
                  ": access.classes." + cls + " allows " + Describe(rule, true));
}

}  // namespace phalanx
