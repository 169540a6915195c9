#include "core/queue/limits.h"

#include <algorithm>
#include <utility>

namespace phalanx {
namespace {

std::string Str(uint64_t v) { return std::to_string(v); }

}  // namespace

std::string LimitHit::ToString() const {
  return (scope == LimitScope::kUser ? "UserLimit: " : "AccountLimit: ") + reason;
}

LimitTracker::LimitTracker(LimitsConfig config) : config_(std::move(config)) {
  const auto limited = [](const auto& entry) { return entry.second.max_running_gpus > 0; };
  gpu_limits_ = config_.default_user.max_running_gpus > 0 || config_.default_account.max_running_gpus > 0 ||
                std::any_of(config_.users.begin(), config_.users.end(), limited) ||
                std::any_of(config_.accounts.begin(), config_.accounts.end(), limited);
}

LimitUsage LimitTracker::Get(const Counters& counters, std::string_view name) {
  const auto it = counters.find(name);
  return it == counters.end() ? LimitUsage{} : it->second;
}

void LimitTracker::EraseIfZero(Counters& counters, std::string_view name) {
  const auto it = counters.find(name);
  if (it != counters.end() && it->second.running_gpus == 0 && it->second.pending_jobs == 0) counters.erase(it);
}

void LimitTracker::AddPending(std::string_view user, std::string_view account) {
  ++users_[std::string(user)].pending_jobs;
  ++accounts_[std::string(account)].pending_jobs;
}

Status LimitTracker::RemovePending(std::string_view user, std::string_view account) {
  if (Get(users_, user).pending_jobs == 0) {
    return Fail("limits", "user '" + std::string(user) + "' has no pending job to remove");
  }
  if (Get(accounts_, account).pending_jobs == 0) {
    return Fail("limits", "account '" + std::string(account) + "' has no pending job to remove");
  }
  --users_.find(user)->second.pending_jobs;
  --accounts_.find(account)->second.pending_jobs;
  EraseIfZero(users_, user);
  EraseIfZero(accounts_, account);
  return {};
}

void LimitTracker::AddRunning(std::string_view user, std::string_view account, uint32_t gpus) {
  if (gpus == 0) return;
  users_[std::string(user)].running_gpus += gpus;
  accounts_[std::string(account)].running_gpus += gpus;
}

Status LimitTracker::RemoveRunning(std::string_view user, std::string_view account, uint32_t gpus) {
  const uint64_t user_running = Get(users_, user).running_gpus;
  if (user_running < gpus) {
    return Fail("limits",
                "user '" + std::string(user) + "' runs " + Str(user_running) + " GPUs, cannot remove " + Str(gpus));
  }
  const uint64_t account_running = Get(accounts_, account).running_gpus;
  if (account_running < gpus) {
    return Fail("limits", "account '" + std::string(account) + "' runs " + Str(account_running) +
                              " GPUs, cannot remove " + Str(gpus));
  }
  if (gpus == 0) return {};
  users_.find(user)->second.running_gpus -= gpus;
  accounts_.find(account)->second.running_gpus -= gpus;
  EraseIfZero(users_, user);
  EraseIfZero(accounts_, account);
  return {};
}

const Limits& LimitTracker::UserLimits(std::string_view user) const {
  const auto it = config_.users.find(user);
  return it == config_.users.end() ? config_.default_user : it->second;
}

const Limits& LimitTracker::AccountLimits(std::string_view account) const {
  const auto it = config_.accounts.find(account);
  return it == config_.accounts.end() ? config_.default_account : it->second;
}

LimitUsage LimitTracker::UserUsage(std::string_view user) const { return Get(users_, user); }
LimitUsage LimitTracker::AccountUsage(std::string_view account) const { return Get(accounts_, account); }

std::optional<LimitHit> LimitTracker::CheckSubmit(std::string_view user, std::string_view account) const {
  const uint32_t user_max = UserLimits(user).max_pending_jobs;
  const uint64_t user_pending = Get(users_, user).pending_jobs;
  if (user_max > 0 && user_pending >= user_max) {
    return LimitHit{LimitScope::kUser, "user " + std::string(user) + " has " + Str(user_pending) +
                                           " pending jobs (max " + Str(user_max) + ")"};
  }
  const uint32_t account_max = AccountLimits(account).max_pending_jobs;
  const uint64_t account_pending = Get(accounts_, account).pending_jobs;
  if (account_max > 0 && account_pending >= account_max) {
    return LimitHit{LimitScope::kAccount, "account " + std::string(account) + " has " + Str(account_pending) +
                                              " pending jobs (max " + Str(account_max) + ")"};
  }
  return std::nullopt;
}

std::optional<LimitHit> LimitTracker::CheckStart(std::string_view user, std::string_view account, uint32_t gpus) const {
  // Asked for every pending job in every pass: the usage is looked up only under a limit.
  if (!gpu_limits_) return std::nullopt;
  const uint32_t user_max = UserLimits(user).max_running_gpus;
  const uint64_t user_running = user_max > 0 ? Get(users_, user).running_gpus : 0;
  if (user_max > 0 && user_running + gpus > user_max) {
    return LimitHit{LimitScope::kUser, "user " + std::string(user) + " has " + Str(user_running) + " running GPUs, " +
                                           Str(gpus) + " more would exceed max " + Str(user_max)};
  }
  const uint32_t account_max = AccountLimits(account).max_running_gpus;
  const uint64_t account_running = account_max > 0 ? Get(accounts_, account).running_gpus : 0;
  if (account_max > 0 && account_running + gpus > account_max) {
    return LimitHit{LimitScope::kAccount, "account " + std::string(account) + " has " + Str(account_running) +
                                              " running GPUs, " + Str(gpus) + " more would exceed max " +
                                              Str(account_max)};
  }
  return std::nullopt;
}

std::optional<LimitHit> LimitTracker::CheckRequest(std::string_view user, std::string_view account,
                                                   uint32_t gpus) const {
  const uint32_t user_max = UserLimits(user).max_running_gpus;
  if (user_max > 0 && gpus > user_max) {
    return LimitHit{LimitScope::kUser, "job requests " + Str(gpus) + " GPUs, user " + std::string(user) +
                                           " may run at most " + Str(user_max)};
  }
  const uint32_t account_max = AccountLimits(account).max_running_gpus;
  if (account_max > 0 && gpus > account_max) {
    return LimitHit{LimitScope::kAccount, "job requests " + Str(gpus) + " GPUs, account " + std::string(account) +
                                              " may run at most " + Str(account_max)};
  }
  return std::nullopt;
}

}  // namespace phalanx
