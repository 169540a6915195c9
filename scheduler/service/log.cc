#include "service/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace phalanx::service {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;
std::function<void(LogLevel, const std::string&)> g_sink;  // guarded by g_mu

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

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "?";
}

bool ParseLogLevel(std::string_view name, LogLevel* level) {
  if (name == "debug") *level = LogLevel::kDebug;
  else if (name == "info") *level = LogLevel::kInfo;
  else if (name == "warn" || name == "warning") *level = LogLevel::kWarn;
  else if (name == "error") *level = LogLevel::kError;
  else return false;
  return true;
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void SetLogSink(std::function<void(LogLevel, const std::string&)> sink) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_sink = std::move(sink);
}

void LogLine(LogLevel level, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sink) {
    g_sink(level, message);
    return;
  }
  static constexpr const char* kTags[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
  const std::string line = Timestamp() + " " + kTags[static_cast<int>(level)] + " " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace phalanx::service
