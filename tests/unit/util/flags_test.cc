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

// Hostile arguments: values are kept byte for byte (the programs check them); a name with a
// control byte or a newline is an unknown option, named as given; size is argv's (the kernel's)
// bound, so a long list or a long value costs only its own size.
TEST(ParseFlags, HostileArguments) {
  const std::string nul_value("1\0x", 3);
  auto f = Parse({"--depth", nul_value, "--admin=\x1b[31m", "--admin", "a\nb"});
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->Get("depth"), nul_value);
  EXPECT_THAT(f->GetAll("admin"), ElementsAre("\x1b[31m", "a\nb"));
  for (const std::string& bad : {std::string("--for\0ce", 8), std::string("--force\n"), std::string("--\x1b[31m"),
                                 std::string("--") + std::string(100'000, 'x')}) {
    auto r = Parse({bad});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
    EXPECT_EQ(r.error().where, bad);
    EXPECT_EQ(r.error().message, "unknown option");
  }
  EXPECT_EQ(ErrorOf({std::string("--force=\0", 9)}), "--force: takes no value");
  std::vector<std::string> many;
  for (int i = 0; i < 10'000; ++i) many.insert(many.end(), {"--admin", std::to_string(i)});
  many.push_back("--depth=" + std::string(100'000, '7'));
  f = Parse(many);
  ASSERT_TRUE(f) << f.error().ToString();
  EXPECT_EQ(f->GetAll("admin").size(), 10'000u);
  EXPECT_EQ(f->GetAll("admin").back(), "9999");
  EXPECT_EQ(f->Get("depth").size(), 100'000u);
}

TEST(FlagsHelp, OneLinePerFlag) {
  EXPECT_EQ(FlagsHelp(std::span(kSpecs).first(1)), "  --depth N                 levels to print\n");
  EXPECT_EQ(FlagsHelp(std::span(kSpecs).subspan(2, 1)), "  --force                   a boolean flag\n");
}

}  // namespace
}  // namespace phalanx
