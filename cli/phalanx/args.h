// The phalanx admin CLI's flags: util/flags.h's parser (--flag VALUE, --flag=VALUE, boolean
// --flag, positional arguments, "--" ends the flags, repeatable flags as declared) with its
// errors in this program's wording, and whole-number flag values.
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/common/result.h"
#include "util/flags.h"

namespace phalanx::cli {

// Fails (where empty) with "unknown option '--x' (see --help)", "option '--x' needs a value",
// "option '--x' takes no value" or "option '--x' given twice".
Result<ParsedFlags> ParseArgs(std::span<const std::string> args, std::span<const FlagSpec> specs);

// The integer value of flag `name` in [lo, hi], or `fallback` when absent.
Result<int> IntFlag(const ParsedFlags& args, std::string_view name, int fallback, int lo, int hi);

}  // namespace phalanx::cli
