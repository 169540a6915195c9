// FairshareTracker: decayed GPU usage per (user, account) and the fairshare factor it implies.
//
// Usage is charged in GPU-seconds and decays exponentially with a half-life h (Slurm's
// PriorityDecayHalfLife): a charge of g at time t counts g * 2^(-(now - t) / h) at `now`. Each
// accumulator stores its value at a reference time and decays lazily with the exact factor for
// the whole interval, so there is no per-tick drift; decay after exactly one half-life halves it.
//
// Factor: a two-level form of Slurm's classic fairshare F = 2^(-U/S) (see docs/priority.md):
//   F_account = 2^(-(U_account / U_total)   / (S_account / S_all_accounts))
//   F_user    = 2^(-(U_user / U_account)    / (S_user / S_all_users_of_the_account))
//   F         = F_account * F_user = 2^-(r_account + r_user)
// where U is decayed usage and S shares. A level with no usage (U_total = 0, resp. U_account = 0)
// contributes 1, so a user whose account has no usage gets 1.0. An entity exactly at its share
// gets 0.5 at that level. The siblings of an account are the configured accounts, the charged
// ones and the queried one (unknown accounts hold `default_account_shares`); likewise for users
// within an account with `default_user_shares` (equal shares by default).
//
// Time: passed in. A query at a time before the latest charge is answered at the latest charge
// (decay never runs backwards). Charges may arrive out of order; the result is the same.
// Thread-safety: none; callers serialize (the core is single-threaded). Pure and deterministic.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/common/time.h"

namespace phalanx {

struct FairshareConfig {
  struct UserShares {
    std::string user;
    double shares = 1.0;
  };
  struct AccountShares {
    std::string account;
    double shares = 1.0;
    std::vector<UserShares> users;  // users not listed get default_user_shares
  };
  Duration half_life = 7 * 24 * 3600;  // seconds; 0 = no decay (usage accumulates forever)
  double default_account_shares = 1.0;
  double default_user_shares = 1.0;
  std::vector<AccountShares> accounts;
};

// One query's numbers, as `sshare -l` shows them.
struct FairshareDetail {
  double account_usage = 0;        // decayed GPU-seconds of the account
  double account_norm_usage = 0;   // U_account / U_total (0 when nothing is charged)
  double account_norm_shares = 0;  // S_account / S_all_accounts
  double account_factor = 1;
  double user_usage = 0;        // decayed GPU-seconds of the user in this account
  double user_norm_usage = 0;   // U_user / U_account (0 when the account has no usage)
  double user_norm_shares = 0;  // S_user / S_all_users_of_the_account
  double user_factor = 1;
  double factor = 1;  // account_factor * user_factor, in (0, 1]
};

class FairshareTracker {
 public:
  // Fails on: half_life < 0, shares (default, account or user) not finite or <= 0, an empty or
  // repeated account name, an empty or repeated user within one account.
  static Result<FairshareTracker> Create(const FairshareConfig& config);

  // Adds `gpu_seconds` of usage at time `at`. Fails, changing nothing, on an empty user or
  // account name or gpu_seconds negative or not finite.
  Status Charge(std::string_view user, std::string_view account, double gpu_seconds, Time at);

  // The fairshare factor in (0, 1] of `user` charging `account`, at `now`. Never fails: unknown
  // users and accounts have default shares and no usage.
  double UserFactor(std::string_view user, std::string_view account, Time now) const;
  FairshareDetail Explain(std::string_view user, std::string_view account, Time now) const;

  // Decayed GPU-seconds at `now`, for reporting.
  double Usage(std::string_view user, std::string_view account, Time now) const;
  double AccountUsage(std::string_view account, Time now) const;
  double TotalUsage(Time now) const;

  Duration half_life() const { return half_life_; }

 private:
  // A decayed sum stored as its value at `ref`.
  struct Decayed {
    double value = 0;
    Time ref = 0;
  };
  struct User {
    double shares = 0;
    Decayed usage;
  };
  struct Account {
    double shares = 0;
    double user_shares_total = 0;  // sum of `users[*].shares`
    Decayed usage;
    std::map<std::string, User, std::less<>> users;
  };

  FairshareTracker() = default;
  double Decay(Duration elapsed) const;  // 2^(-elapsed / half_life), 1 without decay
  void Add(Decayed& d, double amount, Time at) const;
  double At(const Decayed& d, Time now) const;  // `now` >= d.ref (callers clamp)
  Time Clamp(Time now) const { return now < latest_ ? latest_ : now; }

  Duration half_life_ = 0;
  double default_account_shares_ = 1;
  double default_user_shares_ = 1;
  double account_shares_total_ = 0;  // sum of `accounts_[*].shares`
  Decayed total_;
  Time latest_ = 0;  // the latest charge time (queries clamp to it)
  bool charged_ = false;
  std::map<std::string, Account, std::less<>> accounts_;
};

}  // namespace phalanx
