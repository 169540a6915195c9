// LimitTracker: per-user and per-account job limits (after Slurm's MaxJobs/MaxSubmit and
// GrpTRES=gres/gpu) and the counters they are checked against.
//
// Counters: pending jobs and running GPUs, per user (across all accounts) and per account. The
// caller keeps them in step with the queue: AddPending at submit, RemovePending when a pending
// job starts or leaves, AddRunning/RemoveRunning when a job starts/ends. Checks are advisory:
// the counters never refuse an Add, so lowering a limit never corrupts them.
//   CheckSubmit: one more pending job would exceed a max_pending_jobs limit.
//   CheckStart:  `gpus` more running GPUs would exceed a max_running_gpus limit (busy now).
//   CheckRequest: `gpus` exceeds a max_running_gpus limit by itself (never startable).
// Each returns the limit that refuses (LimitHit: the user's or the account's, and why), or
// nullopt when allowed; the user's limit is checked before the account's.
//
// Contract: a Remove of more than was added returns an Error and changes nothing; counters
// never go negative. Entries that drop to zero are erased, so memory follows live users.
// Thread-safety: none; callers serialize (the core is single-threaded). Pure and deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx {

struct Limits {
  uint32_t max_running_gpus = 0;  // 0 = unlimited
  uint32_t max_pending_jobs = 0;  // 0 = unlimited
};

struct LimitsConfig {
  Limits default_user;     // for users not listed in `users`
  Limits default_account;  // for accounts not listed in `accounts`
  std::map<std::string, Limits, std::less<>> users;
  std::map<std::string, Limits, std::less<>> accounts;
};

// Whose limit refuses: the user's (Slurm's UserLimit) or the account's (AccountLimit).
enum class LimitScope : uint8_t { kUser, kAccount };

// A limit that refuses, and why: "user alice has 3 pending jobs (max 3)".
struct LimitHit {
  LimitScope scope = LimitScope::kUser;
  std::string reason;

  // "UserLimit: <reason>" or "AccountLimit: <reason>".
  std::string ToString() const;
  bool operator==(const LimitHit&) const = default;
};

struct LimitUsage {
  uint64_t running_gpus = 0;
  uint64_t pending_jobs = 0;
};

class LimitTracker {
 public:
  explicit LimitTracker(LimitsConfig config = {});

  void AddPending(std::string_view user, std::string_view account);
  // Fails, changing nothing, when the user or the account has no pending job.
  Status RemovePending(std::string_view user, std::string_view account);
  void AddRunning(std::string_view user, std::string_view account, uint32_t gpus);
  // Fails, changing nothing, when the user or the account runs fewer than `gpus` GPUs.
  Status RemoveRunning(std::string_view user, std::string_view account, uint32_t gpus);

  std::optional<LimitHit> CheckSubmit(std::string_view user, std::string_view account) const;
  std::optional<LimitHit> CheckStart(std::string_view user, std::string_view account, uint32_t gpus) const;
  std::optional<LimitHit> CheckRequest(std::string_view user, std::string_view account, uint32_t gpus) const;

  // Whether any user or account has a max_running_gpus (else CheckStart never fails).
  bool gpu_limits() const { return gpu_limits_; }
  LimitUsage UserUsage(std::string_view user) const;
  LimitUsage AccountUsage(std::string_view account) const;
  const Limits& UserLimits(std::string_view user) const;
  const Limits& AccountLimits(std::string_view account) const;

 private:
  using Counters = std::map<std::string, LimitUsage, std::less<>>;
  static LimitUsage Get(const Counters& counters, std::string_view name);
  static void EraseIfZero(Counters& counters, std::string_view name);

  LimitsConfig config_;
  // Whether any user or account has a max_running_gpus (CheckStart is asked for every pending
  // job in every pass, and most sites set none).
  bool gpu_limits_ = false;
  Counters users_;
  Counters accounts_;
};

}  // namespace phalanx
