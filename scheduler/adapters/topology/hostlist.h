// Slurm hostlist expressions -> the host names they denote.
//
// Grammar (what Slurm's hostlist.c accepts for plain names):
//   list   := item ("," item)*                 commas inside [...] separate ranges, not items
//   item   := (text | "[" ranges "]")+         text: any characters except , [ ] and whitespace
//   ranges := range ("," range)*
//   range  := NUMBER | NUMBER "-" NUMBER        decimal digits only
// Several bracket groups in one item expand as a cartesian product, leftmost slowest:
// "r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2. Zero padding is kept: a range is printed with at least
// as many digits as its lower bound is written with ("dgx[001-010]" -> dgx001..dgx010,
// "n[1-10]" -> n1..n10). Order and duplicates are preserved as written (callers that need
// unique names check for themselves). Leading/trailing whitespace of the whole expression is
// ignored.
//
// Fails (with `where` and a message quoting the offending part) on: an empty expression or an
// empty item ("a,,b"), an unterminated "[" (typically a truncated line), a stray "]", nested
// brackets, an empty bracket "[]" or empty range ("[1,]", "[1-]"), a non-numeric bound, a reversed
// range ("[5-1]"), a bound above 10^15, whitespace inside the expression, or more than
// kMaxHostlistHosts names in total.
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx {

inline constexpr size_t kMaxHostlistHosts = 1'000'000;

Result<std::vector<std::string>> ExpandHostlist(std::string_view expr, std::string_view where);

}  // namespace phalanx
