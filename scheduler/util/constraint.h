// Node constraints as Slurm's -C/--constraint writes them: features joined by '&' (and) and '|'
// (or), '&' binding tighter: "h100|a100&nvlink" = h100 or (a100 and nvlink). A feature is
// [A-Za-z0-9_.:-]+; blanks are ignored. Slurm's brackets, counts ("a*2") and parentheses are not supported: they are
// an error naming the character, not a silently different constraint.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx {

// An OR of ANDs of features; empty: no constraint (every node matches).
struct Constraint {
  std::vector<std::vector<std::string>> any_of;

  bool empty() const { return any_of.empty(); }
  // True when one of the alternatives has all its features in `features`.
  bool Matches(const std::vector<std::string>& features) const;
  // Canonical text: "a&b|c" (as parsed; ParseConstraint(ToString()) gives the same).
  std::string ToString() const;
};

// Fails with where = `field` on: an empty feature ("a&&b", "a|", "&a"), a character outside the
// feature alphabet ("a(b)", "[a|b]", "a*2": "'*' at position 2 ..."), more than 64 features.
// Blank text is no constraint.
Result<Constraint> ParseConstraint(std::string_view text, std::string_view field);

// The features of a node whose model is named `model`: the name itself and each of its
// '-'-separated words ("dgx-h100" -> dgx-h100, dgx, h100), lower-cased.
std::vector<std::string> ModelFeatures(std::string_view model);

}  // namespace phalanx
