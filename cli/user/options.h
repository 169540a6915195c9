// The option parser of the users' commands (gsub, gq, gcancel, ginfo), with Slurm habits:
// "--name VALUE", "--name=VALUE", "-X VALUE", "-XVALUE", bundled short switches ("-lN"), a
// repeated option overrides the earlier one (as sbatch does), "--" ends the options.
// Every value remembers how it was spelled and where it came from (the command line, or
// "job.sh:3" for a #PHX directive), so errors about a value can name the flag, the value and
// the line.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx::cli {

struct OptionSpec {
  std::string_view name;   // long name without dashes: "gpus"
  char short_name = 0;     // 'G'; 0: none
  std::string_view value;  // placeholder in help ("N"); empty: a switch
  std::string_view help;
  std::string_view key = {};  // where the value is stored; empty: `name` (--no-x stores into x)
  std::string_view set = {};  // a switch stores this; empty: "true"
};

struct OptionValue {
  std::string value;
  std::string flag;   // as written: "-G", "--gpus"
  std::string where;  // empty: the command line; "job.sh:3": a directive

  // "job.sh:3: -G: message" / "-G: message"
  Error Bad(std::string message) const { return Error{where, flag + ": " + std::move(message)}; }
};

struct ParsedOptions {
  std::vector<std::string> positional;
  bool dashdash = false;  // "--" was given (before the first positional in kStopAtFirst)
  std::map<std::string, OptionValue, std::less<>> values;

  bool Has(std::string_view key) const { return values.find(key) != values.end(); }
  const OptionValue* Find(std::string_view key) const {
    auto it = values.find(key);
    return it == values.end() ? nullptr : &it->second;
  }
  std::string Get(std::string_view key, std::string fallback = {}) const {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second.value;
  }
  // Values of `other` replace ours (the command line over directives).
  void OverrideWith(const ParsedOptions& other);
};

enum class Positionals {
  kInterleaved,  // options and arguments mix: gcancel 1 2 --signal USR1
  kStopAtFirst,  // the first argument and everything after it are arguments: gsub -G 8 job.sh -x
};

// Fails ("unknown option '--bogus'", "option '--gpus' needs a value (N)", "option '--hold'
// takes no value") with `where` set to the given origin.
Result<ParsedOptions> ParseOptions(std::span<const std::string> args, std::span<const OptionSpec> specs,
                                   Positionals mode, std::string_view where = {});

// Splits a #PHX directive into words like a shell: blanks separate words, '...' and "..." quote,
// a backslash escapes the next character, an unquoted word starting with '#' begins a comment.
// Fails on an unterminated quote or a trailing backslash.
Result<std::vector<std::string>> SplitWords(std::string_view line);

// "  -G, --gpus N|MIN:MAX     total GPUs..." lines for a usage text.
std::string OptionsHelp(std::span<const OptionSpec> specs);

// A decimal whole number in [lo, hi]; fails quoting the text.
Result<uint64_t> ParseCount(std::string_view text, uint64_t lo, uint64_t hi);

}  // namespace phalanx::cli
