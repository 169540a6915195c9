// --array's text form (util/job_array.h) and --dependency's (util/dependency.h).
#include "util/job_array.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/dependency.h"

namespace phalanx {
namespace {

std::vector<uint32_t> Tasks(std::string_view text, uint32_t max = 1001) {
  auto a = ParseArraySpec(text, max);
  if (!a) ADD_FAILURE() << a.error().message;
  return a ? a->tasks : std::vector<uint32_t>{};
}
std::string ArrayError(std::string_view text, uint32_t max = 1001) {
  auto a = ParseArraySpec(text, max);
  return a ? "ok" : a.error().message;
}

TEST(JobArraySpec, SlurmForms) {
  EXPECT_EQ(Tasks("0-3"), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(Tasks("1,3,5-7"), (std::vector<uint32_t>{1, 3, 5, 6, 7}));
  EXPECT_EQ(Tasks("0-15:4"), (std::vector<uint32_t>{0, 4, 8, 12}));
  EXPECT_EQ(Tasks("7"), (std::vector<uint32_t>{7}));
  EXPECT_EQ(Tasks("5,1-3,2"), (std::vector<uint32_t>{1, 2, 3, 5}));  // sorted, no repeats
  auto a = ParseArraySpec("0-99%8", 1001);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->tasks.size(), 100u);
  EXPECT_EQ(a->max_running, 8u);
  EXPECT_EQ(ParseArraySpec("1,3", 1001)->max_running, 0u);
}

TEST(JobArraySpec, ErrorsNameTheItem) {
  EXPECT_EQ(ArrayError("5-3"), "'5-3': the range ends before it starts");
  EXPECT_EQ(ArrayError("0-2000"), "index 2000 is not below the array size limit 1001 (MaxArraySize)");
  EXPECT_EQ(ArrayError("1001"), "index 1001 is not below the array size limit 1001 (MaxArraySize)");
  EXPECT_EQ(ArrayError("1000"), "ok");
  EXPECT_EQ(ArrayError("0-9%0"), "'0-9%0': the limit after '%' must be a whole number of at least 1, not '0'");
  EXPECT_EQ(ArrayError("0-9%x"), "'0-9%x': the limit after '%' must be a whole number of at least 1, not 'x'");
  EXPECT_EQ(ArrayError("0-15:0"), "'0-15:0': the step after ':' must be a whole number of at least 1, not '0'");
  EXPECT_EQ(ArrayError("3:2"), "'3:2': a step needs a range (e.g. 0-15:4)");
  EXPECT_EQ(ArrayError("a-b"), "'a-b': 'a' is not a task index (a whole number)");
  EXPECT_EQ(ArrayError("-1"), "'-1': '' is not a task index (a whole number)");
  EXPECT_EQ(ArrayError("1,,2"), "'1,,2': an empty item between commas");
  EXPECT_EQ(ArrayError("%4"), "'%4': no task indices (e.g. 0-99, 1,3,5-7, 0-15:4, 0-99%8)");
  EXPECT_EQ(ArrayError(""), "'': no task indices (e.g. 0-99, 1,3,5-7, 0-15:4, 0-99%8)");
}

TEST(JobArraySpec, FormatAndShape) {
  EXPECT_EQ(FormatArrayTasks({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(FormatArrayTasks({4}), "4");
  EXPECT_EQ(FormatArrayTasks({}), "");
  const ArrayShape even = ShapeOfArray({0, 4, 8, 12});
  EXPECT_EQ(even.count, 4u);
  EXPECT_EQ(even.min, 0u);
  EXPECT_EQ(even.max, 12u);
  EXPECT_EQ(even.step, 4u);
  EXPECT_EQ(ShapeOfArray({1, 3, 5, 6}).step, 1u);
  EXPECT_EQ(ShapeOfArray({9}).step, 1u);
}

TEST(Dependencies, SlurmFormsRoundTrip) {
  for (std::string text : {"afterok:1", "afterok:1:2,afterany:3", "after:4?afternotok:5_7", "singleton",
                           "afterany:1234,singleton", "afterok:10_0"}) {
    auto d = ParseDependencies(text);
    ASSERT_TRUE(d) << text << ": " << d.error().message;
    EXPECT_EQ(FormatDependencies(*d), text);
    EXPECT_EQ(*ParseDependencies(FormatDependencies(*d)), *d);
  }
  auto d = ParseDependencies("afterok:1:2?afterany:3_4");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->any);
  ASSERT_EQ(d->items.size(), 3u);
  EXPECT_EQ(d->items[1], (DependItem{DependKind::kAfterOk, 2, std::nullopt}));
  EXPECT_EQ(d->items[2], (DependItem{DependKind::kAfterAny, 3, 4u}));
  // Under '?' every id is an item of its own in the text too.
  EXPECT_EQ(FormatDependencies(*d), "afterok:1?afterok:2?afterany:3_4");
}

TEST(Dependencies, ErrorsNameTheItem) {
  const auto err = [](std::string_view t) {
    auto d = ParseDependencies(t);
    return d ? "ok" : d.error().message;
  };
  EXPECT_EQ(err("afterok:1,afterany:2?after:3"),
            "'afterok:1,afterany:2?after:3': use ',' (all of them) or '?' "
            "(any of them), not both");
  EXPECT_EQ(err("afterok"), "'afterok': afterok needs a job id");
  EXPECT_EQ(err("afterok:x"), "'afterok:x': 'x' is not a job id (ID or ARRAYID_TASK)");
  EXPECT_EQ(err("afterok:0"), "'afterok:0': '0' is not a job id (ID or ARRAYID_TASK)");
  EXPECT_EQ(err("afterok:5_"), "'afterok:5_': '5_' is not a job id (ID or ARRAYID_TASK)");
  EXPECT_EQ(err("before:3"),
            "'before:3': unknown dependency type 'before' (after, afterany, afterok, afternotok, "
            "singleton)");
  EXPECT_EQ(err("aftercorr:3"), "'aftercorr:3': aftercorr is not supported");
  EXPECT_EQ(err("after:3+10"), "'after:3+10': a delay ('3+10', Slurm's +MINUTES) is not supported");
  EXPECT_EQ(err("singleton:3"), "'singleton:3': singleton takes no job ids");
  EXPECT_EQ(err(""), "'' names no dependency (e.g. afterok:ID, afterany:ID, singleton)");
}

}  // namespace
}  // namespace phalanx
