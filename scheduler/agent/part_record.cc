#include "agent/part_record.h"

#include <map>

#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx::agent {

std::string FormatPartRecord(const PartRecord& r) {
  std::string out;
  auto line = [&out](std::string_view key, const std::string& value) {
    out.append(key).append(" ").append(value).append("\n");
  };
  line("job_id", std::to_string(r.job_id));
  line("launch_id", std::to_string(r.launch_id));
  line("pid", std::to_string(r.pid));
  line("pid_start", std::to_string(r.pid_start));
  line("keeper_pid", std::to_string(r.keeper_pid));
  line("keeper_start", std::to_string(r.keeper_start));
  line("boot_id", r.boot_id);
  line("start_time_ms", std::to_string(r.start_time_ms));
  line("walltime_ms", std::to_string(r.walltime_ms));
  line("checkpoint_signal", std::to_string(r.checkpoint_signal));
  line("uid", std::to_string(r.uid));
  line("checkpoint_file", r.checkpoint_file);
  line("stop_reason", r.stop_reason);
  line("checkpoint_seen", r.checkpoint_seen);
  if (r.suspended_at_ms != 0) line("suspended_at_ms", std::to_string(r.suspended_at_ms));
  std::string gpus;
  for (uint32_t g : r.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  line("gpus", gpus);
  return out;
}

Result<PartRecord> ParsePartRecord(std::string_view text, std::string_view where) {
  std::map<std::string, std::string, std::less<>> kv;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    kv[std::string(line.substr(0, sp))] = sp == std::string_view::npos ? "" : std::string(line.substr(sp + 1));
  }
  PartRecord r;
  bool ok = true;
  std::string bad;
  auto num = [&](const char* key, auto* out, bool required) {
    auto it = kv.find(key);
    if (it == kv.end()) {
      if (required && ok) ok = false, bad = std::string(key) + ": missing";
      return;
    }
    if (!ParseNumber(it->second, out) && ok)
      ok = false, bad = std::string(key) + ": '" + it->second + "' is not a number";
  };
  auto str = [&](const char* key, std::string* out) {
    if (auto it = kv.find(key); it != kv.end()) *out = it->second;
  };
  num("job_id", &r.job_id, true);
  num("launch_id", &r.launch_id, true);
  num("pid", &r.pid, true);
  num("keeper_pid", &r.keeper_pid, true);
  num("pid_start", &r.pid_start, false);
  num("keeper_start", &r.keeper_start, false);
  num("start_time_ms", &r.start_time_ms, false);
  num("walltime_ms", &r.walltime_ms, false);
  num("checkpoint_signal", &r.checkpoint_signal, false);
  num("uid", &r.uid, false);
  num("suspended_at_ms", &r.suspended_at_ms, false);
  str("boot_id", &r.boot_id);
  str("checkpoint_file", &r.checkpoint_file);
  str("stop_reason", &r.stop_reason);
  str("checkpoint_seen", &r.checkpoint_seen);
  if (auto it = kv.find("gpus"); it != kv.end() && !it->second.empty()) {
    for (const std::string_view item : Split(it->second, ',')) {
      const auto g = ParseNumber<uint32_t>(item);
      if (!g) {
        if (ok) ok = false, bad = "gpus: '" + it->second + "' is not a list of GPU indices";
        break;
      }
      r.gpus.push_back(*g);
    }
  }
  if (!ok) return Fail(std::string(where), bad);
  return r;
}

}  // namespace phalanx::agent
