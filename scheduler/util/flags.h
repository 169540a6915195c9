// The command-line flag parser of phalanxd, phalanx-agent and the `phalanx` admin program
// (the users' gsub/gq/... parse Slurm-style short options themselves: cli/user/options.h).
//
// Arguments are checked against a table of FlagSpecs:
//   --name value, --name=value   a flag with a value ("--name=" gives the empty value)
//   --name                       a boolean flag
//   -h                           --help, when the table has "help"
//   --                           ends the flags: every later argument is positional
//   anything else                a positional argument ("-" included)
// A flag may be given once unless its spec is `repeatable` (values kept in order).
//
// Errors name the argument in `where`:
//   "--bogus: unknown option"             code kNotFound: not in the table (also "-x")
//   "--depth: needs a value"              the last argument, without its value
//   "--force: takes no value"             "--force=yes" for a boolean flag
//   "--socket: given twice"               a flag that is not repeatable, repeated
//   "stray: unexpected argument (see --help)"   a positional argument where none is allowed
// Programs add their own hint (phalanxd: "(see --help)" after an unknown option).
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx {

struct FlagSpec {
  std::string_view name;    // without the dashes: "depth"
  std::string_view value;   // placeholder in the help ("N"); empty: a boolean flag
  std::string_view help;    // one line for FlagsHelp
  bool repeatable = false;  // may be given more than once
};

class ParsedFlags {
 public:
  // The positional arguments, in order.
  const std::vector<std::string>& positional() const { return positional_; }
  bool Has(std::string_view name) const { return values_.find(name) != values_.end(); }
  // The value of a flag (the last one of a repeatable flag; "" for a boolean flag), or
  // `fallback` when it was not given.
  std::string Get(std::string_view name, std::string fallback = {}) const;
  // Every value of a flag, in the order given (empty when it was not given).
  std::vector<std::string> GetAll(std::string_view name) const;

 private:
  friend Result<ParsedFlags> ParseFlags(std::span<const std::string>, std::span<const FlagSpec>, bool);
  std::vector<std::string> positional_;
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
};

// Parses `args` (argv without the program name) against `specs`. With `allow_positional`
// false, any positional argument is an error.
Result<ParsedFlags> ParseFlags(std::span<const std::string> args, std::span<const FlagSpec> specs,
                               bool allow_positional = true);

// The table as usage lines, one per flag: "  --depth N                 levels to print" (the
// name and placeholder padded to 26 columns).
std::string FlagsHelp(std::span<const FlagSpec> specs);

}  // namespace phalanx
