// Log: phalanxd's logger. One line per message on stderr (or a test sink):
//   2024-05-01T12:00:03.123Z INFO  start job=7 on node[0-1] (launch 12): scheduled
// Levels debug < info < warn < error; messages below the configured level are dropped before
// they are formatted (PHX_LOG checks the level first).
//
// Thread-safety: every function is safe from any thread; lines never interleave.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace phalanx::service {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
std::string_view LogLevelName(LogLevel level);
// "debug", "info", "warn"/"warning", "error"; false for anything else.
bool ParseLogLevel(std::string_view name, LogLevel* level);

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// Replaces stderr (tests capture lines); an empty function restores stderr.
void SetLogSink(std::function<void(LogLevel, const std::string&)> sink);
void LogLine(LogLevel level, const std::string& message);

}  // namespace phalanx::service

// PHX_LOG(kInfo) << "started " << n << " jobs";
#define PHX_LOG(level)                                                                   \
  for (bool phx_once_ = ::phalanx::service::LogEnabled(::phalanx::service::LogLevel::level); \
       phx_once_; phx_once_ = false)                                                     \
  ::phalanx::service::LogMessage(::phalanx::service::LogLevel::level).stream()

namespace phalanx::service {
// One message; written when destroyed.
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { LogLine(level_, out_.str()); }
  std::ostringstream& stream() { return out_; }

 private:
  LogLevel level_;
  std::ostringstream out_;
};
}  // namespace phalanx::service
