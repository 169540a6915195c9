// The logger of phalanxd and phalanx-agent. One line per record on stderr (or a test sink):
//   2024-05-01T12:00:03.123Z INFO  start job=7 on node[0-1] (launch 12): scheduled
// (UTC time with milliseconds, the level in five columns, the message). A message is escaped
// as util/printable.h's EscapeForLog says: control characters as \n \r \t or \xNN, C1 controls
// and bidirectional overrides as \uNNNN, invalid UTF-8 bytes as \xNN, so one record is always
// one line and no ESC byte reaches the log (a job name in a message cannot forge a record or
// drive the reader's terminal). The sink gets the escaped message. Levels debug < info <
// warn < error; records below the configured level (default info) are dropped before they are
// formatted (PHX_LOG checks the level first). The core never logs: it returns reasons.
//
// Thread-safety: every function is safe from any thread; lines never interleave.
#pragma once

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace phalanx {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// "debug", "info", "warn", "error".
std::string_view LogLevelName(LogLevel level);
// "debug", "info", "warn" (or "warning"), "error"; nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(std::string_view name);

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// Replaces stderr (tests capture records); an empty function restores stderr.
void SetLogSink(std::function<void(LogLevel, const std::string&)> sink);

// Writes one record when `level` is enabled.
void Log(LogLevel level, std::string_view message);

// One record built with <<; written when destroyed (PHX_LOG).
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { Log(level_, out_.str()); }
  std::ostringstream& stream() { return out_; }

 private:
  LogLevel level_;
  std::ostringstream out_;
};

}  // namespace phalanx

// PHX_LOG(kInfo) << "started " << n << " jobs";  (nothing is evaluated below the level)
#define PHX_LOG(level)                                                                                   \
  for (bool phx_once_ = ::phalanx::LogEnabled(::phalanx::LogLevel::level); phx_once_; phx_once_ = false) \
  ::phalanx::LogMessage(::phalanx::LogLevel::level).stream()
