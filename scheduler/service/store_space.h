// StoreSpace: the free-space reserve under the store (store.min_free, docs/store.md "Free
// space"). Writes users cause (submit, hold, release, update) are refused with
// RESOURCE_EXHAUSTED while the store's file system has less than min_free bytes available, so
// that a filling disk gives a clear refusal instead of a failed commit (which stops phalanxd).
// Writes the scheduler itself makes (starts, ends, checkpoints) still go on, into the reserve.
//
// The free space is read through an injectable reader (statvfs of the store's directory by
// default; tests inject their own) at most once per `cache_s` seconds of an injectable clock,
// so a flood of submissions does not call statvfs each time. A reader error does not refuse
// anything (it is logged, rate-limited). Refusals are logged rate-limited (RateLimitedLog);
// space coming back is logged once.
// Thread-safety: not thread-safe; phalanxd uses it on the io thread only (Controller, /metrics).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/common/result.h"
#include "util/rate_limited_log.h"

namespace phalanx::service {

inline constexpr uint64_t kDefaultStoreMinFree = uint64_t{64} << 20;  // 64 MiB

// "64MiB", "64 MiB", "1.5GiB", "512k", "100MB", "1000000" (bytes) -> bytes. Units: B, k/K/KB/KiB,
// M/MB/MiB, G/GB/GiB, T/TB/TiB; all binary (1024). Error: what was expected and the text.
Result<uint64_t> ParseByteSize(const std::string& text);
// 12896000 -> "12.3 MiB", 64 MiB -> "64 MiB", 512 -> "512 bytes".
std::string FormatBytes(uint64_t bytes);

// Bytes available to an unprivileged writer on the file system holding `dir` (statvfs:
// f_bavail * f_frsize). Error: where = dir, the OS error.
Result<uint64_t> StatvfsFreeBytes(const std::string& dir);

class StoreSpace {
 public:
  using Reader = std::function<Result<uint64_t>(const std::string& dir)>;
  using NowSeconds = std::function<double()>;  // any monotonic seconds
  struct Options {
    std::string dir;                           // the store's directory
    uint64_t min_free = kDefaultStoreMinFree;  // 0: no reserve (never refuses)
    double cache_s = 1;                        // a reading is reused this long
  };
  // Defaults: StatvfsFreeBytes and the steady clock.
  explicit StoreSpace(Options options, Reader reader = {}, NowSeconds now = {});

  // Ok, or RESOURCE_EXHAUSTED "store: only 12.3 MiB free on DIR (store.min_free 64 MiB):
  // submissions and job changes are refused until space is freed; running jobs continue". Reads the free space
  // when the cached reading is older than cache_s.
  Status CheckUserWrite();
  // Reads the free space when the cached reading is stale (the gauges call it too).
  void Refresh();

  // The last reading (nullopt before the first, or when the last read failed).
  std::optional<uint64_t> free_bytes() const { return free_; }
  // True while below the reserve (as of the last reading).
  bool low() const { return low_; }
  uint64_t refusals() const { return refusals_; }
  const Options& options() const { return options_; }

 private:
  std::string Message() const;

  const Options options_;
  Reader reader_;
  NowSeconds now_;
  std::optional<double> read_at_;
  std::optional<uint64_t> free_;
  bool low_ = false;
  uint64_t refusals_ = 0;
  RateLimitedLog log_;
};

}  // namespace phalanx::service
