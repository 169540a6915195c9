#include "core/queue/fairshare.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace phalanx {
namespace {

bool ValidShares(double s) { return std::isfinite(s) && s > 0; }

std::string Num(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// 2^(-usage_ratio / share_ratio), 1 when there is no usage at this level.
double LevelFactor(double norm_usage, double norm_shares) {
  if (norm_usage <= 0) return 1.0;
  return std::exp2(-norm_usage / norm_shares);
}

}  // namespace

Result<FairshareTracker> FairshareTracker::Create(const FairshareConfig& config) {
  if (config.half_life < 0) {
    return Fail("fairshare.half_life", "must be >= 0 seconds, got " + std::to_string(config.half_life));
  }
  if (!ValidShares(config.default_account_shares)) {
    return Fail("fairshare.default_account_shares",
                "must be finite and > 0, got " + Num(config.default_account_shares));
  }
  if (!ValidShares(config.default_user_shares)) {
    return Fail("fairshare.default_user_shares", "must be finite and > 0, got " + Num(config.default_user_shares));
  }
  FairshareTracker t;
  t.half_life_ = config.half_life;
  t.default_account_shares_ = config.default_account_shares;
  t.default_user_shares_ = config.default_user_shares;
  for (size_t i = 0; i < config.accounts.size(); ++i) {
    const auto& a = config.accounts[i];
    const std::string where = "fairshare.accounts[" + std::to_string(i) + "]";
    if (a.account.empty()) return Fail(where + ".account", "empty account name");
    if (!ValidShares(a.shares)) {
      return Fail(where + ".shares",
                  "must be finite and > 0, got " + Num(a.shares) + " for account '" + a.account + "'");
    }
    auto [it, inserted] = t.accounts_.try_emplace(a.account);
    if (!inserted) return Fail(where + ".account", "account '" + a.account + "' listed twice");
    Account& acc = it->second;
    acc.shares = a.shares;
    t.account_shares_total_ += a.shares;
    for (size_t j = 0; j < a.users.size(); ++j) {
      const auto& u = a.users[j];
      const std::string uwhere = where + ".users[" + std::to_string(j) + "]";
      if (u.user.empty()) return Fail(uwhere + ".user", "empty user name in account '" + a.account + "'");
      if (!ValidShares(u.shares)) {
        return Fail(uwhere + ".shares", "must be finite and > 0, got " + Num(u.shares) + " for user '" + u.user + "'");
      }
      auto [uit, uinserted] = acc.users.try_emplace(u.user);
      if (!uinserted) {
        return Fail(uwhere + ".user", "user '" + u.user + "' listed twice in account '" + a.account + "'");
      }
      uit->second.shares = u.shares;
      acc.user_shares_total += u.shares;
    }
  }
  return t;
}

double FairshareTracker::Decay(Duration elapsed) const {
  return half_life_ == 0 ? 1.0 : std::exp2(-static_cast<double>(elapsed) / static_cast<double>(half_life_));
}

void FairshareTracker::Add(Decayed& d, double amount, Time at) const {
  if (d.value == 0) {
    d = {amount, at};
  } else if (at >= d.ref) {
    d = {d.value * Decay(at - d.ref) + amount, at};
  } else {
    d.value += amount * Decay(d.ref - at);  // an older charge, decayed to `ref`
  }
}

double FairshareTracker::At(const Decayed& d, Time now) const {
  if (d.value == 0 || now <= d.ref) return d.value;
  return d.value * Decay(now - d.ref);
}

Status FairshareTracker::Charge(std::string_view user, std::string_view account, double gpu_seconds, Time at) {
  if (user.empty()) return Fail("charge.user", "empty user name");
  if (account.empty()) return Fail("charge.account", "empty account name");
  if (!std::isfinite(gpu_seconds) || gpu_seconds < 0) {
    return Fail("charge.gpu_seconds", "must be finite and >= 0, got " + Num(gpu_seconds));
  }
  auto ait = accounts_.find(account);
  if (ait == accounts_.end()) {
    ait = accounts_.emplace(std::string(account), Account{}).first;
    ait->second.shares = default_account_shares_;
    account_shares_total_ += default_account_shares_;
  }
  Account& acc = ait->second;
  auto uit = acc.users.find(user);
  if (uit == acc.users.end()) {
    uit = acc.users.emplace(std::string(user), User{}).first;
    uit->second.shares = default_user_shares_;
    acc.user_shares_total += default_user_shares_;
  }
  Add(uit->second.usage, gpu_seconds, at);
  Add(acc.usage, gpu_seconds, at);
  Add(total_, gpu_seconds, at);
  latest_ = charged_ ? std::max(latest_, at) : at;
  charged_ = true;
  return {};
}

FairshareDetail FairshareTracker::Explain(std::string_view user, std::string_view account, Time now) const {
  now = Clamp(now);
  FairshareDetail d;
  const auto ait = accounts_.find(account);
  const Account* acc = ait == accounts_.end() ? nullptr : &ait->second;
  const double acc_shares = acc ? acc->shares : default_account_shares_;
  const double acc_total_shares = account_shares_total_ + (acc ? 0 : acc_shares);
  d.account_norm_shares = acc_shares / acc_total_shares;

  const User* usr = nullptr;
  if (acc) {
    const auto uit = acc->users.find(user);
    if (uit != acc->users.end()) usr = &uit->second;
  }
  const double user_shares = usr ? usr->shares : default_user_shares_;
  const double user_total_shares = (acc ? acc->user_shares_total : 0) + (usr ? 0 : user_shares);
  d.user_norm_shares = user_shares / user_total_shares;

  const double total = At(total_, now);
  d.account_usage = acc ? At(acc->usage, now) : 0;
  d.user_usage = usr ? At(usr->usage, now) : 0;
  // Decay can underflow to 0 long after the last charge: then there is no usage at that level.
  if (total > 0) d.account_norm_usage = std::min(1.0, d.account_usage / total);
  if (d.account_usage > 0) d.user_norm_usage = std::min(1.0, d.user_usage / d.account_usage);
  d.account_factor = LevelFactor(d.account_norm_usage, d.account_norm_shares);
  d.user_factor = LevelFactor(d.user_norm_usage, d.user_norm_shares);
  // Keep the contract (0, 1] even for absurd share ratios that underflow the power.
  d.factor = std::clamp(d.account_factor * d.user_factor, std::numeric_limits<double>::min(), 1.0);
  return d;
}

double FairshareTracker::UserFactor(std::string_view user, std::string_view account, Time now) const {
  return Explain(user, account, now).factor;
}

double FairshareTracker::Usage(std::string_view user, std::string_view account, Time now) const {
  const auto ait = accounts_.find(account);
  if (ait == accounts_.end()) return 0;
  const auto uit = ait->second.users.find(user);
  return uit == ait->second.users.end() ? 0 : At(uit->second.usage, Clamp(now));
}

double FairshareTracker::AccountUsage(std::string_view account, Time now) const {
  const auto ait = accounts_.find(account);
  return ait == accounts_.end() ? 0 : At(ait->second.usage, Clamp(now));
}

double FairshareTracker::TotalUsage(Time now) const { return At(total_, Clamp(now)); }

}  // namespace phalanx
