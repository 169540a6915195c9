// Access rules: who may use which priority class and charge which account (Slurm's
// AllowGroups/AllowAccounts on partitions and its account associations, as plain data).
//
//   - An account that has a rule may be charged only by its members: a user named in its
//     `users` or in one of its `groups`. An account without a rule is open, or refused when
//     `unlisted_accounts_open` is false. A job that names no account gets the user's default
//     account (`default_accounts`), if any; no account at all is always allowed.
//   - A class that has a rule may be used only by a user named in its `users`, in one of its
//     `groups`, or charging one of its `accounts` (the job's account, itself allowed). A class
//     without a rule is open. A rule whose lists are all empty leaves the class to admins.
//   - Admins pass every rule.
// Refusals are kPermissionDenied and name the class or account, the rule and who asked.
// Pure: the caller (phalanxd) resolves who is asking (user name and group names).
// Thread-safety: a built AccessRules is immutable and safe to share.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/common/result.h"

namespace phalanx {

struct AccessList {
  std::vector<std::string> users = {};
  std::vector<std::string> groups = {};
  std::vector<std::string> accounts = {};  // classes only: jobs charging these accounts
};

struct AccessConfig {
  std::map<std::string, AccessList> classes;            // by class name
  std::map<std::string, AccessList> accounts;           // by account name (no `accounts` list)
  bool unlisted_accounts_open = true;                   // false: only accounts with a rule
  std::map<std::string, std::string> default_accounts;  // user -> account for jobs naming none
};

// Who is asking.
struct Requester {
  std::string user;
  std::vector<std::string> groups;
  bool admin = false;
};

class AccessRules {
 public:
  AccessRules() = default;  // everything open
  // Fails on a class rule naming a class not in `known_classes`, an account rule with an
  // `accounts` list, an empty name in any list, or a default account that has a rule not
  // naming the user in its `users` (group membership is not known here, so it is not checked).
  static Result<AccessRules> Build(AccessConfig config, const std::vector<std::string>& known_classes);

  // The account a job of `user` naming `account` charges: `account`, or the default one.
  std::string AccountFor(const std::string& user, const std::string& account) const;
  // May `who` charge `account` ("" always)?
  Status CheckAccount(const Requester& who, const std::string& account) const;
  // May `who` use class `cls` (already resolved: "" is not a name here) for a job charging
  // `account`? The account is checked separately (CheckAccount).
  Status CheckClass(const Requester& who, const std::string& cls, const std::string& account) const;

  bool empty() const {
    return config_.classes.empty() && config_.accounts.empty() && config_.unlisted_accounts_open &&
           config_.default_accounts.empty();
  }
  const AccessConfig& config() const { return config_; }

 private:
  explicit AccessRules(AccessConfig config) : config_(std::move(config)) {}
  AccessConfig config_;
};

}  // namespace phalanx
