#include "job_target.h"

#include "util/job_array.h"
#include "util/numbers.h"

namespace phalanx::cli {

std::string JobTarget::ToString() const { return std::to_string(id) + (task ? "_" + std::to_string(*task) : ""); }

Result<std::vector<JobTarget>> ParseJobTargets(std::string_view text) {
  const auto bad = [&](std::string why = "") {
    return Fail("", "'" + std::string(text) + "' is not a job id (ID, ID_TASK or ID_[TASKS])" +
                        (why.empty() ? "" : ": " + why));
  };
  const size_t us = text.find('_');
  uint64_t id = 0;
  if (!ParseNumber(text.substr(0, us), &id) || id == 0) return bad();
  if (us == std::string_view::npos) return std::vector<JobTarget>{{id, std::nullopt}};
  std::string_view tasks = text.substr(us + 1);
  if (tasks.starts_with('[')) {
    if (!tasks.ends_with(']')) return bad();
    tasks = tasks.substr(1, tasks.size() - 2);
    if (tasks.find('%') != std::string_view::npos) return bad("no %N here");
    auto a = ParseArraySpec(tasks, kArraySizeCeiling);
    if (!a) return bad(a.error().message);
    std::vector<JobTarget> out;
    for (uint32_t t : a->tasks) out.push_back({id, t});
    return out;
  }
  uint32_t task = 0;
  if (!ParseNumber(tasks, &task)) return bad();
  return std::vector<JobTarget>{{id, task}};
}

}  // namespace phalanx::cli
