#include "util/job_array.h"

#include <algorithm>

#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
Result<ArraySpec> ParseArraySpec(std::string_view text, uint32_t max_size) {
  ArraySpec out;
  std::string_view list = text;
  if (const size_t pct = text.find('%'); pct != std::string_view::npos) {
    list = text.substr(0, pct);
    const std::string_view n = text.substr(pct + 1);
    if (!ParseNumber(n, &out.max_running) || out.max_running == 0)
      return Fail("", Quote(text) + ": the limit after '%' must be a whole number of at least 1, not " + Quote(n));
  }
  if (list.empty()) return Fail("", Quote(text) + ": no task indices (e.g. 0-99, 1,3,5-7, 0-15:4, 0-99%8)");
  const auto index = [&](std::string_view item, std::string_view s) -> Result<uint32_t> {
    uint32_t v = 0;
    if (!ParseNumber(s, &v)) return Fail("", Quote(item) + ": " + Quote(s) + " is not a task index (a whole number)");
    if (v >= max_size)
      return Fail("", "index " + std::string(s) + " is not below the array size limit " + std::to_string(max_size) +
                          " (MaxArraySize)");
    return v;
  };
  for (std::string_view item : Split(list, ',')) {
    if (item.empty()) return Fail("", Quote(text) + ": an empty item between commas");
    std::string_view range = item;
    uint32_t step = 1;
    if (const size_t colon = item.find(':'); colon != std::string_view::npos) {
      range = item.substr(0, colon);
      const std::string_view s = item.substr(colon + 1);
      if (!ParseNumber(s, &step) || step == 0)
        return Fail("", Quote(item) + ": the step after ':' must be a whole number of at least 1, not " + Quote(s));
    }
    const size_t dash = range.find('-');
    PHX_ASSIGN_OR_RETURN(const uint32_t first, index(item, range.substr(0, dash)));
    uint32_t last = first;
    if (dash != std::string_view::npos) {
      PHX_ASSIGN_OR_RETURN(last, index(item, range.substr(dash + 1)));
      if (last < first) return Fail("", Quote(item) + ": the range ends before it starts");
    } else if (step != 1) {
      return Fail("", Quote(item) + ": a step needs a range (e.g. 0-15:4)");
    }
    for (uint64_t v = first; v <= last; v += step) out.tasks.push_back(static_cast<uint32_t>(v));
    if (out.tasks.size() > max_size) break;  // repeats only from here on; bounded memory
  }
  std::sort(out.tasks.begin(), out.tasks.end());
  out.tasks.erase(std::unique(out.tasks.begin(), out.tasks.end()), out.tasks.end());
  return out;
}

std::string FormatArrayTasks(const std::vector<uint32_t>& tasks) {
  std::string out;
  for (size_t a = 0; a < tasks.size();) {
    size_t b = a;
    while (b + 1 < tasks.size() && tasks[b + 1] == tasks[b] + 1) ++b;
    if (!out.empty()) out += ',';
    out += std::to_string(tasks[a]);
    if (b > a) out += "-" + std::to_string(tasks[b]);
    a = b + 1;
  }
  return out;
}

ArrayShape ShapeOfArray(const std::vector<uint32_t>& tasks) {
  ArrayShape s;
  if (tasks.empty()) return s;
  s.count = static_cast<uint32_t>(tasks.size());
  s.min = tasks.front();
  s.max = tasks.back();
  if (tasks.size() >= 2) {
    const uint32_t d = tasks[1] - tasks[0];
    bool even = true;
    for (size_t i = 2; i < tasks.size() && even; ++i) even = tasks[i] - tasks[i - 1] == d;
    if (even) s.step = d;
  }
  return s;
}

}  // namespace phalanx
