// The agent's log: one line per message on stderr ("phalanx-agent: warn: ..."), which systemd
// puts in the journal with a timestamp. Messages below the level set are dropped.
// Thread-safety: thread-safe (one fwrite per line; the level is atomic).
#pragma once

#include <string>
#include <string_view>

#include "core/common/result.h"

namespace phalanx::agent {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, std::string_view message);

// "debug" | "info" | "warn" | "error".
Result<LogLevel> ParseLogLevel(std::string_view text);

}  // namespace phalanx::agent
