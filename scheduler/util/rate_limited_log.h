// RateLimitedLog: repeated errors logged a few times, then counted. A flood of the same failure
// (accept: Too many open files, a refused connection, a wrong agent token) writes at most `burst`
// records per key in each `window_s` seconds; the others are suppressed and counted, and the next
// record written for that key carries the count:
//   accept: Too many open files (8912 more in the last 10s suppressed)
// Flush() writes that count for keys that went quiet, so a flood that stopped is still accounted
// for. A key names the kind of failure and whatever should be told apart ("accept:EMFILE",
// "token:10.0.0.5"); at most `max_keys` keys are tracked, further ones share one key.
//
// The clock is passed in (any monotonic seconds) so that tests are deterministic; Log() and
// FlushToLog() read std::chrono::steady_clock and write through util/log.h.
// Thread-safety: every member function is safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/log.h"
#include "util/thread_annotations.h"

namespace phalanx {

class RateLimitedLog {
 public:
  struct Options {
    double window_s = 10;   // > 0
    uint32_t burst = 3;     // records written per key and window (>= 1)
    size_t max_keys = 256;  // beyond: one shared key
  };
  RateLimitedLog() : RateLimitedLog(Options{}) {}
  explicit RateLimitedLog(Options options);

  // One record of `key` at `now_s`: the text to write (`message`, plus " (N more in the last Xs
  // suppressed)" when records of the key were suppressed since the last one written), or nullopt
  // when this record is suppressed (and counted).
  std::optional<std::string> Admit(std::string_view key, std::string_view message, double now_s) PHALANX_EXCLUDES(mu_);
  // Keys whose window ended with suppressed records: their last suppressed message with the
  // count, once each. Forgets quiet keys.
  std::vector<std::string> Flush(double now_s) PHALANX_EXCLUDES(mu_);

  // Admit at the steady clock's time; writes what is admitted at `level`. True when written.
  bool Log(LogLevel level, std::string_view key, std::string_view message) PHALANX_EXCLUDES(mu_);
  // Flush at the steady clock's time, each record at the level of its last message.
  void FlushToLog() PHALANX_EXCLUDES(mu_);

  // Records suppressed so far, all keys together (tests, benches).
  uint64_t suppressed_total() const PHALANX_EXCLUDES(mu_);

 private:
  struct Entry {
    double window_start = 0;
    uint32_t written = 0;     // in the current window
    uint64_t suppressed = 0;  // since the last record written
    double first_suppressed = 0;
    std::string last_message;  // the last suppressed one
    LogLevel level = LogLevel::kWarn;
  };
  static std::string WithCount(std::string_view message, uint64_t n, double span_s);
  std::optional<std::string> AdmitLocked(std::string_view key, std::string_view message, double now_s, LogLevel level)
      PHALANX_REQUIRES(mu_);
  std::vector<std::pair<LogLevel, std::string>> FlushLocked(double now_s) PHALANX_REQUIRES(mu_);

  const Options options_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ PHALANX_GUARDED_BY(mu_);
  uint64_t suppressed_total_ PHALANX_GUARDED_BY(mu_) = 0;
};

}  // namespace phalanx
