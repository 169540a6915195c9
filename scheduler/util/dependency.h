// Job dependencies as Slurm's `--dependency`: the text form and its parts.
//
//   after:ID[:ID...]       start after the jobs started (or were cancelled)
//   afterany:ID[:ID...]    ... after they ended, however
//   afterok:ID[:ID...]     ... after they completed successfully (exit code 0)
//   afternotok:ID[:ID...]  ... after they failed, were cancelled or killed
//   singleton              ... when no other job of the same user and name runs
// Items are joined by ',' (all of them must be met) or by '?' (any one is enough), not both.
// An ID is a job id, an array's job id (every task of it) or ARRAY_TASK (one task: 1234_7).
// Not supported (an error naming the item): aftercorr, afterburstbuffer, "+MINUTES" delays.
// FormatDependency writes the canonical text (items in the order given, ids joined by ':' per
// item, not under '?'): Parse(Format(d)) == d (any is false for one item).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace phalanx {

enum class DependKind : uint8_t { kAfter, kAfterAny, kAfterOk, kAfterNotOk, kSingleton };
std::string_view DependKindName(DependKind kind);  // "after", "afterany", ...

struct DependItem {
  DependKind kind = DependKind::kAfterOk;
  uint64_t job = 0;                   // a job id or an array's id; 0 for singleton
  std::optional<uint32_t> task = {};  // set: task `task` of array `job`

  bool operator==(const DependItem&) const = default;
};

struct Dependencies {
  std::vector<DependItem> items;
  bool any = false;  // '?': one met item is enough; else all of them

  bool empty() const { return items.empty(); }
  bool operator==(const Dependencies&) const = default;
};

// The most items one dependency may list.
inline constexpr size_t kMaxDependItems = 1000;

// Errors have an empty `where` (the caller names the option or field) and quote the item.
Result<Dependencies> ParseDependencies(std::string_view text);
std::string FormatDependencies(const Dependencies& deps);
// "afterok:1234_7", "singleton".
std::string FormatDependItem(const DependItem& item);

}  // namespace phalanx
