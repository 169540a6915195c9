#include "args.h"

#include "util/numbers.h"

namespace phalanx::cli {

Result<ParsedFlags> ParseArgs(std::span<const std::string> args, std::span<const FlagSpec> specs) {
  auto parsed = ParseFlags(args, specs);
  if (parsed) return parsed;
  const Error& e = parsed.error();
  if (e.code == ErrorCode::kNotFound) return Fail("", "unknown option '" + e.where + "' (see --help)");
  return Fail("", "option '" + e.where + "' " + e.message);
}

Result<int> IntFlag(const ParsedFlags& args, std::string_view name, int fallback, int lo, int hi) {
  if (!args.Has(name)) return fallback;
  const std::string v = args.Get(name);
  const auto n = ParseNumber<int>(v);
  if (!n) return Fail("", "option '--" + std::string(name) + "': '" + v + "' is not a whole number");
  if (*n < lo || *n > hi)
    return Fail("", "option '--" + std::string(name) + "': " + v + " is out of range " + std::to_string(lo) + ".." +
                        std::to_string(hi));
  return *n;
}

}  // namespace phalanx::cli
