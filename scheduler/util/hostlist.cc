#include "util/hostlist.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <tuple>

#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

constexpr size_t kMaxDigits = 15;  // bounds up to 10^15 - 1: no overflow, no absurd names

struct Range {
  uint64_t lo = 0, hi = 0;
  size_t width = 0;  // digits of the lower bound as written: the zero padding
};

// One piece of an item: literal text, or a bracket with its ranges.
struct Segment {
  std::string text;
  std::vector<Range> ranges;  // empty for text
  uint64_t count() const {
    if (ranges.empty()) return 1;
    uint64_t n = 0;
    for (const Range& r : ranges) n += r.hi - r.lo + 1;
    return n;
  }
  // The most characters this piece adds to a name: a number prints with at least its padding.
  uint64_t width() const {
    if (ranges.empty()) return text.size();
    uint64_t w = 0;
    for (const Range& r : ranges) w = std::max<uint64_t>({w, r.width, std::to_string(r.hi).size()});
    return w;
  }
};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// `value` with at least `width` digits (zero padded).
std::string Padded(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

class Expander {
 public:
  Expander(std::string_view expr, std::string_view where) : expr_(expr), where_(where) {}

  Result<std::vector<std::string>> Run() {
    if (expr_.empty()) return Fail(where_, "empty hostlist");
    for (size_t i = 0; i < expr_.size(); ++i) {
      const auto c = static_cast<unsigned char>(expr_[i]);
      if (std::isspace(c)) return Fail(where_, "whitespace inside hostlist " + Quote(expr_));
      if (std::iscntrl(c)) {  // NUL, ESC, DEL...: named by code and place, never printed
        char code[8];
        std::snprintf(code, sizeof code, "0x%02X", static_cast<unsigned>(c));
        return Fail(where_,
                    "control character " + std::string(code) + " in hostlist after " + Quote(expr_.substr(0, i)));
      }
    }
    // Split at top-level commas.
    std::vector<std::string_view> items;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < expr_.size(); ++i) {
      const char c = expr_[i];
      if (c == '[') {
        if (depth > 0) return Fail(where_, "nested '[' in hostlist " + Quote(expr_));
        depth = 1;
      } else if (c == ']') {
        if (depth == 0) return Fail(where_, "unmatched ']' in hostlist " + Quote(expr_));
        depth = 0;
      } else if (c == ',' && depth == 0) {
        items.push_back(expr_.substr(start, i - start));
        start = i + 1;
      }
    }
    if (depth > 0) return Fail(where_, "unterminated '[' in hostlist " + Quote(expr_) + " (truncated?)");
    items.push_back(expr_.substr(start));

    std::vector<std::vector<Segment>> parsed;
    uint64_t total = 0, total_chars = 0;
    for (std::string_view item : items) {
      if (item.empty()) return Fail(where_, "empty host name in hostlist " + Quote(expr_));
      PHX_ASSIGN_OR_RETURN(auto segments, ParseItem(item));
      uint64_t n = 1, name_chars = 0;
      for (const Segment& s : segments) {
        n *= s.count();  // each factor <= kMaxHostlistHosts and n <= it: no overflow
        if (n > kMaxHostlistHosts) return TooMany();
        name_chars += s.width();
      }
      total += n;
      if (total > kMaxHostlistHosts) return TooMany();
      total_chars += n * name_chars;  // n <= 10^6, name_chars <= item.size(): no overflow
      if (total_chars > kMaxHostlistChars) {
        return Fail(where_, "hostlist " + Quote(expr_) + " expands to more than " + std::to_string(kMaxHostlistChars) +
                                " characters of host names");
      }
      parsed.push_back(std::move(segments));
    }

    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(total));
    for (const std::vector<Segment>& segments : parsed) Emit(segments, out);
    return out;
  }

 private:
  std::unexpected<Error> TooMany() const {
    return Fail(where_,
                "hostlist " + Quote(expr_) + " expands to more than " + std::to_string(kMaxHostlistHosts) + " hosts");
  }

  Result<std::vector<Segment>> ParseItem(std::string_view item) const {
    std::vector<Segment> segments;
    size_t i = 0;
    while (i < item.size()) {
      if (item[i] != '[') {
        const size_t open = item.find('[', i);
        const size_t end = open == std::string_view::npos ? item.size() : open;
        segments.push_back(Segment{std::string(item.substr(i, end - i)), {}});
        i = end;
        continue;
      }
      const size_t close = item.find(']', i);  // present: brackets were checked while splitting
      const std::string_view body = item.substr(i + 1, close - i - 1);
      if (body.empty()) return Fail(where_, "empty brackets in hostlist " + Quote(expr_));
      Segment seg;
      uint64_t count = 0;  // seg.count() kept as it grows (recounting would be quadratic)
      size_t pos = 0;
      while (pos <= body.size()) {
        const size_t comma = std::min(body.find(',', pos), body.size());
        PHX_ASSIGN_OR_RETURN(auto range, ParseRange(body.substr(pos, comma - pos)));
        seg.ranges.push_back(range);
        count += range.hi - range.lo + 1;  // each term <= kMaxHostlistHosts: no overflow
        if (count > kMaxHostlistHosts) return TooMany();
        pos = comma + 1;
      }
      segments.push_back(std::move(seg));
      i = close + 1;
    }
    return segments;
  }

  Result<Range> ParseRange(std::string_view text) const {
    if (text.empty()) return Fail(where_, "empty range in hostlist " + Quote(expr_));
    const size_t dash = text.find('-');
    const std::string_view lo_text = text.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? lo_text : text.substr(dash + 1);
    for (std::string_view bound : {lo_text, hi_text}) {
      if (bound.empty())
        return Fail(where_, "range " + Quote(text) + " is missing a bound in hostlist " + Quote(expr_));
      if (!AllDigits(bound)) {
        return Fail(where_, "non-numeric range bound " + Quote(bound) + " in hostlist " + Quote(expr_) +
                                " (ranges are [N], [N-M] or [N-M,K])");
      }
      if (bound.size() > kMaxDigits)
        return Fail(where_, "range bound " + Quote(bound) + " is too large in hostlist " + Quote(expr_));
    }
    Range r;
    r.lo = *ParseNumber<uint64_t>(lo_text);  // at most 15 digits: no overflow
    r.hi = *ParseNumber<uint64_t>(hi_text);
    r.width = lo_text.size();
    if (r.hi < r.lo) return Fail(where_, "reversed range " + Quote(text) + " in hostlist " + Quote(expr_));
    if (r.hi - r.lo >= kMaxHostlistHosts) return TooMany();
    return r;
  }

  // Appends the cartesian product of `segments` to `out`, leftmost segment varying slowest.
  static void Emit(const std::vector<Segment>& segments, std::vector<std::string>& out) {
    std::vector<std::string> names = {""};
    for (const Segment& s : segments) {
      if (s.ranges.empty()) {
        for (std::string& name : names) name += s.text;
        continue;
      }
      std::vector<std::string> next;
      next.reserve(names.size() * static_cast<size_t>(s.count()));
      for (const std::string& name : names) {
        for (const Range& r : s.ranges) {
          for (uint64_t v = r.lo; v <= r.hi; ++v) next.push_back(name + Padded(v, r.width));
        }
      }
      names = std::move(next);
    }
    for (std::string& name : names) out.push_back(std::move(name));
  }

  std::string_view expr_;
  std::string where_;
};

// A host name as prefix + numeric suffix.
struct NameParts {
  std::string_view prefix, digits;  // digits empty: the name has no numeric suffix
};

NameParts SplitName(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (name.size() - i > kMaxDigits) i = name.size() - kMaxDigits;  // what ExpandHostlist accepts
  return {name.substr(0, i), name.substr(i)};
}

uint64_t Number(std::string_view digits) {
  uint64_t v = 0;
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

struct Run {
  std::string lo, hi;  // as written
  uint64_t last = 0;
};

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view expr, std::string_view where) {
  return Expander(Trim(expr), where).Run();
}

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
    const NameParts s = SplitName(name);
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
      if (v == r.last + 1 && Padded(v, r.lo.size()) == s.digits) {
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

std::string CompressHostlist(std::vector<std::string> names) {
  const auto key = [](const std::string& name) {
    const NameParts p = SplitName(name);
    return std::make_tuple(p.prefix, Number(p.digits), p.digits);
  };
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return FormatHostlist(names);
}

}  // namespace phalanx
