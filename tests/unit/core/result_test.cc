// PHX_RETURN_IF_ERROR and PHX_ASSIGN_OR_RETURN (core/common/result.h): the Error comes back
// unchanged (code, where, message), the value is moved (never copied), `expr` runs once, and
// both work in functions returning Status and Result<T>, and in lambdas.
#include "core/common/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace phalanx {
namespace {

Result<int> Number(bool ok, int value = 7) {
  if (!ok) return Fail(ErrorCode::kNotFound, "file:3", "no such number");
  return value;
}

Status Check(bool ok) {
  if (!ok) return Fail(ErrorCode::kResourceExhausted, "limits.user", "too many jobs");
  return {};
}

// A value that counts its copies and moves.
struct Counted {
  static inline int copies = 0;
  static inline int moves = 0;
  std::string text;
  explicit Counted(std::string t) : text(std::move(t)) {}
  Counted(const Counted& o) : text(o.text) { ++copies; }
  Counted(Counted&& o) noexcept : text(std::move(o.text)) { ++moves; }
  Counted& operator=(const Counted&) = delete;
  Counted& operator=(Counted&&) = delete;
};

void ExpectSameError(const Error& e, ErrorCode code, const std::string& where, const std::string& message) {
  EXPECT_EQ(e.code, code);
  EXPECT_EQ(e.where, where);
  EXPECT_EQ(e.message, message);
}

Result<int> Twice(bool ok) {
  PHX_ASSIGN_OR_RETURN(auto n, Number(ok));
  return 2 * n;
}

TEST(ResultMacros, AssignOrReturnGivesTheValue) {
  ASSERT_TRUE(Twice(true));
  EXPECT_EQ(*Twice(true), 14);
}

TEST(ResultMacros, AssignOrReturnPropagatesTheErrorUnchanged) {
  const Result<int> r = Twice(false);
  ASSERT_FALSE(r);
  ExpectSameError(r.error(), ErrorCode::kNotFound, "file:3", "no such number");
}

TEST(ResultMacros, AssignOrReturnFromStatusFunctionAndIntoAnExistingVariable) {
  int out = 0;
  const auto f = [&](bool ok) -> Status {
    PHX_ASSIGN_OR_RETURN(out, Number(ok, 42));
    return {};
  };
  EXPECT_TRUE(f(true));
  EXPECT_EQ(out, 42);
  out = 0;
  const Status s = f(false);
  ASSERT_FALSE(s);
  ExpectSameError(s.error(), ErrorCode::kNotFound, "file:3", "no such number");
  EXPECT_EQ(out, 0);  // not assigned on error
}

TEST(ResultMacros, AssignOrReturnMovesMoveOnlyValues) {
  const auto make = [](bool ok) -> Result<std::unique_ptr<std::string>> {
    if (!ok) return Fail(ErrorCode::kInternal, "store", "disk I/O error");
    return std::make_unique<std::string>("job 1");
  };
  const auto use = [&](bool ok) -> Result<std::string> {
    PHX_ASSIGN_OR_RETURN(std::unique_ptr<std::string> p, make(ok));
    return *p + "!";
  };
  EXPECT_EQ(*use(true), "job 1!");
  ASSERT_FALSE(use(false));
  ExpectSameError(use(false).error(), ErrorCode::kInternal, "store", "disk I/O error");
}

TEST(ResultMacros, AssignOrReturnMovesAndNeverCopies) {
  Counted::copies = Counted::moves = 0;
  const auto use = []() -> Result<std::string> {
    PHX_ASSIGN_OR_RETURN(Counted c, Result<Counted>(std::in_place, "abc"));
    return c.text;
  };
  EXPECT_EQ(*use(), "abc");
  EXPECT_EQ(Counted::copies, 0);
  EXPECT_EQ(Counted::moves, 1);  // out of the hidden Result into c
}

TEST(ResultMacros, AssignOrReturnBindsAReferenceToTheHiddenResult) {
  const auto use = []() -> Result<size_t> {
    PHX_ASSIGN_OR_RETURN(const auto& v, Result<std::vector<int>>(std::vector<int>{1, 2, 3}));
    return v.size();
  };
  EXPECT_EQ(*use(), 3u);
}

TEST(ResultMacros, ExpressionsRunOnceAndMayHoldCommas) {
  int calls = 0;
  const auto counted = [&](bool ok) -> Result<std::pair<int, int>> {
    ++calls;
    if (!ok) return Fail("pair", "none");
    return std::pair<int, int>{1, 2};
  };
  const auto use = [&](bool ok) -> Result<int> {
    PHX_ASSIGN_OR_RETURN(auto p, counted(ok));
    PHX_ASSIGN_OR_RETURN(auto q, Result<std::pair<int, int>>(std::pair<int, int>{3, 4}));
    PHX_RETURN_IF_ERROR(counted(ok));
    return p.first + p.second + q.first + q.second;
  };
  EXPECT_EQ(*use(true), 10);
  EXPECT_EQ(calls, 2);
  calls = 0;
  EXPECT_FALSE(use(false));
  EXPECT_EQ(calls, 1);
}

Status Both(bool first, bool second) {
  PHX_RETURN_IF_ERROR(Check(first));
  PHX_RETURN_IF_ERROR(Number(second));  // a Result<int>'s value is dropped
  return {};
}

TEST(ResultMacros, ReturnIfErrorWithStatusAndResult) {
  EXPECT_TRUE(Both(true, true));
  const Status a = Both(false, true);
  ASSERT_FALSE(a);
  ExpectSameError(a.error(), ErrorCode::kResourceExhausted, "limits.user", "too many jobs");
  const Status b = Both(true, false);
  ASSERT_FALSE(b);
  ExpectSameError(b.error(), ErrorCode::kNotFound, "file:3", "no such number");
}

TEST(ResultMacros, ReturnIfErrorOnAVariableIntoAResult) {
  const auto use = [](bool ok) -> Result<std::string> {
    Status s = Check(ok);
    PHX_RETURN_IF_ERROR(s);
    return std::string("fine");
  };
  EXPECT_EQ(*use(true), "fine");
  ASSERT_FALSE(use(false));
  ExpectSameError(use(false).error(), ErrorCode::kResourceExhausted, "limits.user", "too many jobs");
}

}  // namespace
}  // namespace phalanx
