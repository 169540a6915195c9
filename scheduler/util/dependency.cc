#include "util/dependency.h"

#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

std::optional<DependKind> KindOf(std::string_view name) {
  if (name == "after") return DependKind::kAfter;
  if (name == "afterany") return DependKind::kAfterAny;
  if (name == "afterok") return DependKind::kAfterOk;
  if (name == "afternotok") return DependKind::kAfterNotOk;
  if (name == "singleton") return DependKind::kSingleton;
  return std::nullopt;
}

std::string Target(const DependItem& d) {
  std::string out = std::to_string(d.job);
  if (d.task) out += "_" + std::to_string(*d.task);
  return out;
}

}  // namespace

std::string_view DependKindName(DependKind kind) {
  switch (kind) {
    case DependKind::kAfter: return "after";
    case DependKind::kAfterAny: return "afterany";
    case DependKind::kAfterOk: return "afterok";
    case DependKind::kAfterNotOk: return "afternotok";
    case DependKind::kSingleton: return "singleton";
  }
  return "afterok";
}

Result<Dependencies> ParseDependencies(std::string_view text) {
  Dependencies out;
  const bool comma = text.find(',') != std::string_view::npos;
  out.any = text.find('?') != std::string_view::npos;
  if (comma && out.any) return Fail("", Quote(text) + ": use ',' (all of them) or '?' (any of them), not both");
  if (text.empty()) return Fail("", "'' names no dependency (e.g. afterok:ID, afterany:ID, singleton)");
  for (std::string_view item : Split(text, out.any ? '?' : ',')) {
    const std::vector<std::string_view> parts = Split(item, ':');
    const std::optional<DependKind> kind = KindOf(parts[0]);
    if (!kind) {
      if (parts[0] == "aftercorr" || parts[0] == "afterburstbuffer")
        return Fail("", Quote(item) + ": " + std::string(parts[0]) + " is not supported");
      return Fail("", Quote(item) + ": unknown dependency type " + Quote(parts[0]) +
                          " (after, afterany, afterok, afternotok, singleton)");
    }
    if (*kind == DependKind::kSingleton) {
      if (parts.size() > 1) return Fail("", Quote(item) + ": singleton takes no job ids");
      out.items.push_back({DependKind::kSingleton, 0, std::nullopt});
      continue;
    }
    if (parts.size() < 2) return Fail("", Quote(item) + ": " + std::string(parts[0]) + " needs a job id");
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string_view t = parts[i];
      if (t.find('+') != std::string_view::npos)
        return Fail("", Quote(item) + ": a delay (" + Quote(t) + ", Slurm's +MINUTES) is not supported");
      DependItem d{*kind, 0, std::nullopt};
      const size_t us = t.find('_');
      if (!ParseNumber(t.substr(0, us), &d.job) || d.job == 0)
        return Fail("", Quote(item) + ": " + Quote(t) + " is not a job id (ID or ARRAYID_TASK)");
      if (us != std::string_view::npos) {
        uint32_t task = 0;
        if (!ParseNumber(t.substr(us + 1), &task))
          return Fail("", Quote(item) + ": " + Quote(t) + " is not a job id (ID or ARRAYID_TASK)");
        d.task = task;
      }
      out.items.push_back(d);
      if (out.items.size() > kMaxDependItems)
        return Fail("", "more than " + std::to_string(kMaxDependItems) + " dependencies");
    }
  }
  return out;
}

std::string FormatDependItem(const DependItem& item) {
  std::string out(DependKindName(item.kind));
  if (item.kind != DependKind::kSingleton) out += ":" + Target(item);
  return out;
}

std::string FormatDependencies(const Dependencies& deps) {
  std::string out;
  for (size_t i = 0; i < deps.items.size(); ++i) {
    const DependItem& d = deps.items[i];
    // Consecutive items of one kind share it ("afterok:1:2"), as users write them; not under
    // '?', where one item alone would read as "all of them".
    if (i > 0 && !deps.any && d.kind == deps.items[i - 1].kind && d.kind != DependKind::kSingleton) {
      out += ":" + Target(d);
      continue;
    }
    if (i > 0) out += deps.any ? '?' : ',';
    out += FormatDependItem(d);
  }
  return out;
}

}  // namespace phalanx
