#include "service/nodelist.h"

#include <cstdint>
#include <string_view>

namespace phalanx::service {
namespace {

struct Split {
  std::string_view prefix, digits;  // digits empty: the name has no numeric suffix
};

Split SplitName(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  // At most 15 digits, as ExpandHostlist accepts (bounds <= 10^15).
  if (name.size() - i > 15) i = name.size() - 15;
  return {name.substr(0, i), name.substr(i)};
}

uint64_t Number(std::string_view digits) {
  uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

std::string Pad(uint64_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

struct Run {
  std::string lo, hi;  // as written
  uint64_t last = 0;
};

}  // namespace

std::string FormatHostlist(const std::vector<std::string>& names) {
  std::string out;
  std::string prefix;
  std::vector<Run> runs;
  bool open = false;
  const auto flush = [&] {
    if (!open) return;
    if (!out.empty()) out += ',';
    out += prefix;
    if (runs.size() == 1 && runs[0].lo == runs[0].hi) {
      out += runs[0].lo;
    } else {
      out += '[';
      for (size_t i = 0; i < runs.size(); ++i) {
        if (i > 0) out += ',';
        out += runs[i].lo;
        if (runs[i].hi != runs[i].lo) out += "-" + runs[i].hi;
      }
      out += ']';
    }
    runs.clear();
    open = false;
  };
  for (const std::string& name : names) {
    const Split s = SplitName(name);
    if (s.digits.empty()) {
      flush();
      if (!out.empty()) out += ',';
      out += name;
      continue;
    }
    if (open && s.prefix != prefix) flush();
    if (!open) {
      prefix = std::string(s.prefix);
      open = true;
    }
    const uint64_t v = Number(s.digits);
    if (!runs.empty()) {
      Run& r = runs.back();
      if (v == r.last + 1 && Pad(v, r.lo.size()) == s.digits) {
        r.hi = std::string(s.digits);
        r.last = v;
        continue;
      }
    }
    runs.push_back(Run{std::string(s.digits), std::string(s.digits), v});
  }
  flush();
  return out;
}

}  // namespace phalanx::service
