#include "util/flags.h"

#include <algorithm>

namespace phalanx {

std::string ParsedFlags::Get(std::string_view name, std::string fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> ParsedFlags::GetAll(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

Result<ParsedFlags> ParseFlags(std::span<const std::string> args, std::span<const FlagSpec> specs,
                               bool allow_positional) {
  const auto find = [&](std::string_view name) {
    return std::find_if(specs.begin(), specs.end(), [&](const FlagSpec& s) { return s.name == name; });
  };
  ParsedFlags out;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool is_help = arg == "-h" && find("help") != specs.end();
    if (flags_done || (!arg.starts_with('-') && !is_help) || arg == "-") {
      if (!allow_positional) return Fail(arg, "unexpected argument (see --help)");
      out.positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (!is_help && !arg.starts_with("--")) return Fail(ErrorCode::kNotFound, arg, "unknown option");
    std::string name = is_help ? "help" : arg.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const std::string flag = "--" + name;
    const auto spec = find(name);
    if (spec == specs.end()) return Fail(ErrorCode::kNotFound, flag, "unknown option");
    if (out.Has(name) && !spec->repeatable) return Fail(flag, "given twice");
    if (spec->value.empty()) {
      if (inline_value) return Fail(flag, "takes no value");
    } else if (!inline_value) {
      if (i + 1 == args.size()) return Fail(flag, "needs a value");
      value = args[++i];
    }
    out.values_[name].push_back(std::move(value));
  }
  return out;
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

}  // namespace phalanx
