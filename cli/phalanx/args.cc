#include "args.h"

#include <algorithm>
#include <charconv>

namespace phalanx::cli {

Result<ParsedArgs> ParseArgs(std::span<const std::string> args, std::span<const FlagSpec> specs) {
  ParsedArgs out;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || a.size() < 2 || a[0] != '-' || a == "-") {
      out.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    std::string name = a == "-h" ? "help" : a.starts_with("--") ? a.substr(2) : a.substr(1);
    std::string value;
    bool has_inline = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name; });
    if (spec == specs.end()) return Fail("", "unknown option '" + a + "' (see --help)");
    if (out.Has(name)) return Fail("", "option '--" + name + "' given twice");
    if (spec->value.empty()) {
      if (has_inline) return Fail("", "option '--" + name + "' takes no value");
      out.flags[name] = "true";
      continue;
    }
    if (!has_inline) {
      if (i + 1 >= args.size()) return Fail("", "option '--" + name + "' needs a value (" + std::string(spec->value) + ")");
      value = args[++i];
    }
    out.flags[name] = value;
  }
  return out;
}

Result<int> IntFlag(const ParsedArgs& args, std::string_view name, int fallback, int lo, int hi) {
  if (!args.Has(name)) return fallback;
  const std::string v = args.Get(name);
  int n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) return Fail("", "option '--" + std::string(name) + "': '" + v + "' is not a whole number");
  if (n < lo || n > hi) return Fail("", "option '--" + std::string(name) + "': " + v + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

std::string FlagsHelp(std::span<const FlagSpec> specs) {
  std::string out;
  for (const FlagSpec& s : specs) {
    std::string left = "  --" + std::string(s.name) + (s.value.empty() ? "" : " " + std::string(s.value));
    left.resize(std::max<size_t>(left.size() + 2, 28), ' ');
    out += left + std::string(s.help) + "\n";
  }
  return out;
}

}  // namespace phalanx::cli
