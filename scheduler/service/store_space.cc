#include "service/store_space.h"

#include <sys/statvfs.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "util/log.h"

namespace phalanx::service {

Result<uint64_t> ParseByteSize(const std::string& text) {
  const auto bad = [&text]() -> Result<uint64_t> {
    return std::unexpected(
        Error{"", "expected a size in bytes (a number, or with a unit: 64MiB, 512KiB, 2GiB), got '" + text + "'"});
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return bad();
  const std::string num = text.substr(0, i);
  if (num.find('.') != num.rfind('.') || num.front() == '.' || num.back() == '.') return bad();
  size_t j = i;
  while (j < text.size() && text[j] == ' ') ++j;
  std::string unit = text.substr(j);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();  // "MiB", "MB", "B"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  double mult = 1;
  if (unit.empty()) mult = 1;
  else if (unit == "k" || unit == "K") mult = 1024.0;
  else if (unit == "m" || unit == "M") mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else return bad();
  errno = 0;
  const double v = std::strtod(num.c_str(), nullptr) * mult;
  if (errno != 0 || !std::isfinite(v) || v >= 1.8e19) return bad();
  return static_cast<uint64_t>(std::llround(v));
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

Result<uint64_t> StatvfsFreeBytes(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0)
    return std::unexpected(Error{dir, std::string("statvfs: ") + std::strerror(errno), ErrorCode::kInternal});
  return static_cast<uint64_t>(s.f_bavail) * static_cast<uint64_t>(s.f_frsize);
}

StoreSpace::StoreSpace(Options options, Reader reader, NowSeconds now)
    : options_(std::move(options)), reader_(std::move(reader)), now_(std::move(now)) {
  if (!reader_) reader_ = StatvfsFreeBytes;
  if (!now_)
    now_ = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
}

void StoreSpace::Refresh() {
  if (options_.min_free == 0) return;
  const double now = now_();
  if (read_at_ && now - *read_at_ < options_.cache_s) return;
  read_at_ = now;
  auto r = reader_(options_.dir);
  if (!r) {
    free_.reset();
    log_.Log(LogLevel::kWarn, "store:space-read", "store: cannot read the free space: " + r.error().ToString());
    return;
  }
  free_ = *r;
  const bool was_low = low_;
  low_ = *r < options_.min_free;
  if (was_low && !low_)
    PHX_LOG(kInfo) << "store: " << FormatBytes(*r) << " free on " << options_.dir << " again (store.min_free "
                   << FormatBytes(options_.min_free) << "): submissions are accepted";
}

std::string StoreSpace::Message() const {
  return "store: only " + FormatBytes(free_.value_or(0)) + " free on " + options_.dir + " (store.min_free " +
         FormatBytes(options_.min_free) +
         "): submissions and job changes are refused until space is freed; running jobs continue";
}

Status StoreSpace::CheckUserWrite() {
  Refresh();
  if (!low_) return {};
  ++refusals_;
  const std::string m = Message();
  log_.Log(LogLevel::kWarn, "store:low-space", m);
  return std::unexpected(Error{"", m, ErrorCode::kResourceExhausted});
}

}  // namespace phalanx::service
