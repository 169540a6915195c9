// Slurm hostlist expressions: expanding them to host names, and writing names as one.
//
// Grammar (what Slurm's hostlist.c accepts for plain names):
//   list   := item ("," item)*                 commas inside [...] separate ranges, not items
//   item   := (text | "[" ranges "]")+         text: any characters except , [ ] and whitespace
//   ranges := range ("," range)*
//   range  := NUMBER | NUMBER "-" NUMBER        decimal digits only
// Several bracket groups in one item expand as a cartesian product, leftmost slowest:
// "r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2. Zero padding is kept: a range is printed with at least
// as many digits as its lower bound is written with ("dgx[001-010]" -> dgx001..dgx010,
// "n[1-10]" -> n1..n10).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx {

inline constexpr size_t kMaxHostlistHosts = 1'000'000;
// The names' characters together: the host bound times HOST_NAME_MAX (64), so that a short
// expression with a long prefix ("<1000 characters>[1-1000000]") cannot expand to gigabytes.
inline constexpr size_t kMaxHostlistChars = 64 * kMaxHostlistHosts;

// The names `expr` denotes. Order and duplicates are preserved as written (callers that need
// unique names check for themselves). Leading/trailing whitespace of the whole expression is
// ignored.
// Fails (with `where` and a message quoting the offending part) on: an empty expression or an
// empty item ("a,,b"), an unterminated "[" (typically a truncated line), a stray "]", nested
// brackets, an empty bracket "[]" or empty range ("[1,]", "[1-]"), a non-numeric bound, a reversed
// range ("[5-1]"), a bound above 10^15, whitespace or a control character (NUL, ESC, DEL...:
// named by its code, not printed) inside the expression, more than kMaxHostlistHosts names in
// total, or more than kMaxHostlistChars characters of names in total.
Result<std::vector<std::string>> ExpandHostlist(std::string_view expr, std::string_view where);

// `names` as a hostlist, in their order: adjacent names with the same prefix share one bracket
// group, consecutive numbers form ranges, zero padding is kept:
//   node0 node1 node2 node5   -> node[0-2,5]
//   dgx008 dgx009 dgx010      -> dgx[008-010]
//   su1-n1 su1-n2 su2-n1      -> su1-n[1-2],su2-n1
// ExpandHostlist(FormatHostlist(names)) == names for any names without the characters , [ ]
// or whitespace (what Slurm accepts as host names). Only the last 15 digits of a name count as
// its number (ExpandHostlist's bound).
std::string FormatHostlist(const std::vector<std::string>& names);

// As FormatHostlist, after sorting the names (by prefix, then number) and dropping duplicates,
// as sinfo prints node lists: "dgx04,dgx01,dgx02,gpu7,dgx01" -> "dgx[01-02,04],gpu7".
std::string CompressHostlist(std::vector<std::string> names);

}  // namespace phalanx
