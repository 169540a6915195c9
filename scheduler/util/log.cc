#include "util/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <utility>

#include "util/printable.h"
#include "util/thread_annotations.h"

namespace phalanx {
namespace {

constexpr std::string_view kNames[] = {"debug", "info", "warn", "error"};
constexpr std::string_view kTags[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
Mutex g_mu;
std::function<void(LogLevel, const std::string&)> g_sink PHALANX_GUARDED_BY(g_mu);

std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace

std::string_view LogLevelName(LogLevel level) { return kNames[static_cast<int>(level)]; }

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  if (name == "warning") return LogLevel::kWarn;
  for (int i = 0; i < 4; ++i) {
    if (name == kNames[i]) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void SetLogSink(std::function<void(LogLevel, const std::string&)> sink) {
  MutexLock lock(&g_mu);
  g_sink = std::move(sink);
}

void Log(LogLevel level, std::string_view message) {
  if (!LogEnabled(level)) return;
  // No message may forge a line or reach a terminal's escape parser (a job name is the user's).
  const std::string text = EscapeForLog(message);
  MutexLock lock(&g_mu);
  if (g_sink) {
    g_sink(level, text);
    return;
  }
  std::string line = Timestamp();
  line.append(" ").append(kTags[static_cast<int>(level)]).append(" ").append(text).append("\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace phalanx
