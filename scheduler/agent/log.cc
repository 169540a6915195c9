#include "agent/log.h"

#include <atomic>
#include <cstdio>

namespace phalanx::agent {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
constexpr const char* kNames[] = {"debug", "info", "warn", "error"};

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void Log(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  std::string line = "phalanx-agent: ";
  line += kNames[static_cast<int>(level)];
  line += ": ";
  line += message;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

Result<LogLevel> ParseLogLevel(std::string_view text) {
  for (int i = 0; i < 4; ++i) {
    if (text == kNames[i]) return static_cast<LogLevel>(i);
  }
  return Fail("--log-level", "'" + std::string(text) + "' is not one of debug, info, warn, error");
}

}  // namespace phalanx::agent
