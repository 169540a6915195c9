// A tiny flag parser for the phalanx admin CLI: positional arguments plus --flag VALUE,
// --flag=VALUE and boolean --flag, checked against a table of known flags.
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx::cli {

struct FlagSpec {
  std::string_view name;       // without the dashes: "depth"
  std::string_view value;      // placeholder shown in help ("N"); empty: a boolean flag
  std::string_view help;
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string, std::less<>> flags;  // boolean flags map to "true"

  bool Has(std::string_view name) const { return flags.find(name) != flags.end(); }
  std::string Get(std::string_view name, std::string fallback = {}) const {
    auto it = flags.find(name);
    return it == flags.end() ? fallback : it->second;
  }
};

// Fails on an unknown flag, a flag without its value, a value given to a boolean flag, or a
// flag given twice. "--" ends the flags; "-h" is "--help" when the table has "help".
Result<ParsedArgs> ParseArgs(std::span<const std::string> args, std::span<const FlagSpec> specs);

// The integer value of flag `name` in [lo, hi], or `fallback` when absent.
Result<int> IntFlag(const ParsedArgs& args, std::string_view name, int fallback, int lo, int hi);

// "  --depth N        levels to print" lines for a usage text.
std::string FlagsHelp(std::span<const FlagSpec> specs);

}  // namespace phalanx::cli
