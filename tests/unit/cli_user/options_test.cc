#include "options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace phalanx::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr OptionSpec kSpecs[] = {
    {"gpus", 'G', "N", "gpus"},
    {"long", 'l', "", "long"},
    {"nodes", 'N', "", "nodes"},
    {"preemptible", 0, "", "yes"},
    {"no-preemptible", 0, "", "no", "preemptible", "false"},
    {"socket", 0, "PATH", "socket"},
};

Result<ParsedOptions> Parse(std::vector<std::string> args, Positionals mode = Positionals::kInterleaved) {
  return ParseOptions(args, kSpecs, mode);
}

TEST(ParseOptions, LongAndShortSpellings) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--gpus", "8"}, {"--gpus=8"}, {"-G", "8"}, {"-G8"}}) {
    auto o = Parse(args);
    ASSERT_TRUE(o.has_value()) << o.error().ToString();
    EXPECT_EQ(o->Get("gpus"), "8");
  }
  EXPECT_EQ(Parse({"-G8"})->Find("gpus")->flag, "-G");
  EXPECT_EQ(Parse({"--gpus=8"})->Find("gpus")->flag, "--gpus");
}

TEST(ParseOptions, BundledShortSwitchesAndAValueLast) {
  auto o = Parse({"-lNG", "4"});
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_TRUE(o->Has("long"));
  EXPECT_TRUE(o->Has("nodes"));
  EXPECT_EQ(o->Get("gpus"), "4");
}

TEST(ParseOptions, LaterOptionWinsAndNoFormsShareAKey) {
  auto o = Parse({"-G", "4", "--gpus", "8", "--preemptible", "--no-preemptible"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->Get("gpus"), "8");
  EXPECT_EQ(o->Get("preemptible"), "false");
  EXPECT_EQ(o->Find("preemptible")->flag, "--no-preemptible");
  EXPECT_EQ(Parse({"--no-preemptible", "--preemptible"})->Get("preemptible"), "true");
}

TEST(ParseOptions, Errors) {
  EXPECT_THAT(Parse({"--bogus"}).error().message, HasSubstr("unknown option '--bogus'"));
  EXPECT_THAT(Parse({"-x"}).error().message, HasSubstr("unknown option '-x'"));
  EXPECT_THAT(Parse({"--gpus"}).error().message, HasSubstr("option '--gpus' needs a value (N)"));
  EXPECT_THAT(Parse({"-G"}).error().message, HasSubstr("option '-G' needs a value (N)"));
  EXPECT_THAT(Parse({"--long=yes"}).error().message, HasSubstr("option '--long' takes no value"));
  auto where = ParseOptions(std::vector<std::string>{"--bogus"}, kSpecs, Positionals::kInterleaved, "job.sh:3");
  EXPECT_EQ(where.error().ToString(), "job.sh:3: unknown option '--bogus' (see --help)");
}

TEST(ParseOptions, InterleavedPositionals) {
  auto o = Parse({"1", "-l", "2", "--", "-3"});
  ASSERT_TRUE(o.has_value());
  EXPECT_THAT(o->positional, ElementsAre("1", "2", "-3"));
  EXPECT_TRUE(o->dashdash);
}

TEST(ParseOptions, StopAtFirstKeepsTheScriptsArguments) {
  auto o = Parse({"-G", "2", "job.sh", "-l", "--gpus", "9"}, Positionals::kStopAtFirst);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->Get("gpus"), "2");
  EXPECT_FALSE(o->Has("long"));
  EXPECT_FALSE(o->dashdash);
  EXPECT_THAT(o->positional, ElementsAre("job.sh", "-l", "--gpus", "9"));

  auto cmd = Parse({"-l", "--", "python", "-u", "train.py"}, Positionals::kStopAtFirst);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_TRUE(cmd->dashdash);
  EXPECT_THAT(cmd->positional, ElementsAre("python", "-u", "train.py"));
}

TEST(ParseOptions, OverrideWithKeepsOrigin) {
  auto directives =
      ParseOptions(std::vector<std::string>{"-G", "4", "-l"}, kSpecs, Positionals::kInterleaved, "a.sh:2");
  auto cli = Parse({"--gpus", "8"});
  directives->OverrideWith(*cli);
  EXPECT_EQ(directives->Get("gpus"), "8");
  EXPECT_EQ(directives->Find("gpus")->where, "");
  EXPECT_EQ(directives->Find("long")->where, "a.sh:2");
  EXPECT_EQ(directives->Find("long")->Bad("x").ToString(), "a.sh:2: -l: x");
}

TEST(SplitWords, ShellLikeQuoting) {
  EXPECT_THAT(SplitWords("  -G 8   --time=1:00 ").value(), ElementsAre("-G", "8", "--time=1:00"));
  EXPECT_THAT(SplitWords("-J 'my job' -o \"out %j.log\"").value(), ElementsAre("-J", "my job", "-o", "out %j.log"));
  EXPECT_THAT(SplitWords("-J my\\ job").value(), ElementsAre("-J", "my job"));
  EXPECT_THAT(SplitWords("-J a'b c'd").value(), ElementsAre("-J", "ab cd"));
  EXPECT_THAT(SplitWords("-G 8 # eight GPUs").value(), ElementsAre("-G", "8"));
  EXPECT_THAT(SplitWords("-J a#b").value(), ElementsAre("-J", "a#b"));
  EXPECT_THAT(SplitWords("-J ''").value(), ElementsAre("-J", ""));
  EXPECT_TRUE(SplitWords("").value().empty());
  EXPECT_THAT(SplitWords("-J 'oops").error().message, HasSubstr("unterminated ' quote"));
  EXPECT_THAT(SplitWords("-J \"oops").error().message, HasSubstr("unterminated \" quote"));
  EXPECT_THAT(SplitWords("-J oops\\").error().message, HasSubstr("trailing backslash"));
}

TEST(ParseCount, RangeAndGarbage) {
  EXPECT_EQ(ParseCount("17", 1, 100).value(), 17u);
  EXPECT_THAT(ParseCount("0", 1, 100).error().message, HasSubstr("'0' is out of range 1..100"));
  EXPECT_THAT(ParseCount("8x", 1, 100).error().message, HasSubstr("'8x' is not a whole number"));
  EXPECT_THAT(ParseCount("-1", 1, 100).error().message, HasSubstr("'-1' is not a whole number"));
  EXPECT_THAT(ParseCount("", 1, 100).error().message, HasSubstr("'' is not a whole number"));
}

TEST(OptionsHelp, AlignsTheHelpColumn) {
  const std::string help = OptionsHelp(kSpecs);
  EXPECT_THAT(help, HasSubstr("  -G, --gpus N"));
  EXPECT_THAT(help, HasSubstr("      --socket PATH"));
  size_t line_start = 0, column = std::string::npos;
  for (const OptionSpec& s : kSpecs) {
    const size_t end = help.find('\n', line_start);
    const std::string line = help.substr(line_start, end - line_start);
    const size_t at = line.rfind(std::string(s.help));
    ASSERT_NE(at, std::string::npos) << line;
    if (column == std::string::npos) column = at;
    EXPECT_EQ(at, column) << line;
    line_start = end + 1;
  }
}

}  // namespace
}  // namespace phalanx::cli
