#include "util/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace phalanx {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr FlagSpec kSpecs[] = {
    {"depth", "N", "levels to print"},
    {"admin", "USER", "an admin (repeatable)", /*repeatable=*/true},
    {"force", "", "a boolean flag"},
    {"help", "", "this help"},
};

Result<ParsedFlags> Parse(std::vector<std::string> args, bool allow_positional = true) {
  return ParseFlags(args, kSpecs, allow_positional);
}

std::string ErrorOf(std::vector<std::string> args, bool allow_positional = true) {
  auto r = Parse(std::move(args), allow_positional);
  return r ? "parsed" : r.error().ToString();
}

TEST(ParseFlags, SpaceAndEqualsForms) {
  auto f = Parse({"show", "--depth", "2", "file", "--force"});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->Get("depth"), "2");
  EXPECT_TRUE(f->Has("force"));
  EXPECT_EQ(f->Get("force"), "");
  EXPECT_FALSE(f->Has("admin"));
  EXPECT_EQ(f->Get("admin", "none"), "none");
  EXPECT_THAT(f->positional(), ElementsAre("show", "file"));
  f = Parse({"--depth=3", "--admin="});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->Get("depth"), "3");
  EXPECT_THAT(f->GetAll("admin"), ElementsAre(""));
}

TEST(ParseFlags, ValuesMayLookLikeFlags) {
  auto f = Parse({"--depth", "--force"});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->Get("depth"), "--force");
  EXPECT_FALSE(f->Has("force"));
}

TEST(ParseFlags, RepeatableFlagsKeepEveryValueInOrder) {
  auto f = Parse({"--admin", "ada", "--admin=bob", "--admin", "cy"});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_THAT(f->GetAll("admin"), ElementsAre("ada", "bob", "cy"));
  EXPECT_EQ(f->Get("admin"), "cy");
  EXPECT_THAT(f->GetAll("depth"), IsEmpty());
}

TEST(ParseFlags, DashDashEndsTheFlagsAndDashHIsHelp) {
  auto f = Parse({"-h", "--", "--depth", "-", "-x"});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_TRUE(f->Has("help"));
  EXPECT_FALSE(f->Has("depth"));
  EXPECT_THAT(f->positional(), ElementsAre("--depth", "-", "-x"));
}

TEST(ParseFlags, ErrorsNameTheFlag) {
  EXPECT_EQ(ErrorOf({"--bogus"}), "--bogus: unknown option");
  EXPECT_EQ(ErrorOf({"--bogus=1"}), "--bogus: unknown option");
  EXPECT_EQ(ErrorOf({"-x"}), "-x: unknown option");
  EXPECT_EQ(ErrorOf({"--depth"}), "--depth: needs a value");
  EXPECT_EQ(ErrorOf({"--force=yes"}), "--force: takes no value");
  EXPECT_EQ(ErrorOf({"--depth", "1", "--depth=2"}), "--depth: given twice");
  EXPECT_EQ(ErrorOf({"--force", "--force"}), "--force: given twice");
  EXPECT_EQ(ErrorOf({"stray"}, /*allow_positional=*/false), "stray: unexpected argument (see --help)");
  EXPECT_EQ(ErrorOf({"--", "x"}, /*allow_positional=*/false), "x: unexpected argument (see --help)");
  EXPECT_EQ(Parse({"--bogus"}).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(Parse({"--depth"}).error().code, ErrorCode::kInvalidArgument);
}

TEST(ParseFlags, DashHNeedsAHelpFlag) {
  constexpr FlagSpec kNoHelp[] = {{"depth", "N", ""}};
  auto f = ParseFlags(std::vector<std::string>{"-h"}, kNoHelp);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().ToString(), "-h: unknown option");
}

TEST(FlagsHelp, OneLinePerFlag) {
  EXPECT_EQ(FlagsHelp(std::span(kSpecs).first(1)), "  --depth N                 levels to print\n");
  EXPECT_EQ(FlagsHelp(std::span(kSpecs).subspan(2, 1)), "  --force                   a boolean flag\n");
}

}  // namespace
}  // namespace phalanx
