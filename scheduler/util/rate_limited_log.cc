#include "util/rate_limited_log.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace phalanx {
namespace {

constexpr std::string_view kOtherKey = "(other keys)";

double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

RateLimitedLog::RateLimitedLog(Options options) : options_(options) {}

std::string RateLimitedLog::WithCount(std::string_view message, uint64_t n, double span_s) {
  std::string out(message);
  if (n == 0) return out;
  const auto secs = static_cast<uint64_t>(std::max(1.0, std::ceil(span_s)));
  out += " (" + std::to_string(n) + " more in the last " + std::to_string(secs) + "s suppressed)";
  return out;
}

std::optional<std::string> RateLimitedLog::AdmitLocked(std::string_view key_in, std::string_view message, double now_s,
                                                       LogLevel level) {
  std::string key(key_in);
  if (!entries_.contains(key) && entries_.size() >= std::max<size_t>(options_.max_keys, 1)) key = kOtherKey;
  auto [it, fresh] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (fresh || now_s - e.window_start >= options_.window_s) {
    e.window_start = now_s;
    e.written = 0;
  }
  if (e.written < std::max<uint32_t>(options_.burst, 1)) {
    ++e.written;
    std::string out = WithCount(message, e.suppressed, now_s - e.first_suppressed);
    e.suppressed = 0;
    e.last_message.clear();
    return out;
  }
  if (e.suppressed == 0) e.first_suppressed = now_s;
  ++e.suppressed;
  ++suppressed_total_;
  e.last_message.assign(message);
  e.level = level;
  return std::nullopt;
}

std::optional<std::string> RateLimitedLog::Admit(std::string_view key, std::string_view message, double now_s) {
  MutexLock lock(&mu_);
  return AdmitLocked(key, message, now_s, LogLevel::kWarn);
}

std::vector<std::pair<LogLevel, std::string>> RateLimitedLog::FlushLocked(double now_s) {
  std::vector<std::pair<LogLevel, std::string>> out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (now_s - e.window_start < options_.window_s) {
      ++it;
      continue;
    }
    if (e.suppressed == 0) {  // quiet for a whole window: forget it
      it = entries_.erase(it);
      continue;
    }
    out.emplace_back(e.level, WithCount(e.last_message, e.suppressed - 1, now_s - e.first_suppressed));
    e.suppressed = 0;
    e.last_message.clear();
    e.window_start = now_s;
    e.written = 1;
    ++it;
  }
  return out;
}

std::vector<std::string> RateLimitedLog::Flush(double now_s) {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (auto& [level, text] : FlushLocked(now_s)) out.push_back(std::move(text));
  return out;
}

bool RateLimitedLog::Log(LogLevel level, std::string_view key, std::string_view message) {
  if (!LogEnabled(level)) return false;
  std::optional<std::string> text;
  {
    MutexLock lock(&mu_);
    text = AdmitLocked(key, message, SteadyNow(), level);
  }
  if (!text) return false;
  phalanx::Log(level, *text);
  return true;
}

void RateLimitedLog::FlushToLog() {
  std::vector<std::pair<LogLevel, std::string>> records;
  {
    MutexLock lock(&mu_);
    records = FlushLocked(SteadyNow());
  }
  for (const auto& [level, text] : records) phalanx::Log(level, text);
}

uint64_t RateLimitedLog::suppressed_total() const {
  MutexLock lock(&mu_);
  return suppressed_total_;
}

}  // namespace phalanx
