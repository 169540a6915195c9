#include "duration.h"

#include <gtest/gtest.h>

namespace phalanx::cli {
namespace {

TEST(ParseDuration, SlurmForms) {
  struct Case {
    const char* text;
    int64_t seconds;
  };
  const Case cases[] = {
      {"90", 90 * 60},                      // MM: minutes, as sbatch -t 90
      {"5:30", 5 * 60 + 30},                // MM:SS
      {"120:00", 120 * 60},                 // MM:SS with many minutes
      {"2:00:00", 2 * 3600},                // HH:MM:SS
      {"0-05", 5 * 3600},                   // D-HH with no days: hours, not minutes
      {"1-0", 86400},                       // D-HH
      {"1-12", 86400 + 12 * 3600},          // D-HH
      {"2-03:04", 2 * 86400 + 3 * 3600 + 4 * 60},
      {"2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5},
      {"0-00:00:01", 1},
  };
  for (const Case& c : cases) {
    auto d = ParseDuration(c.text);
    ASSERT_TRUE(d.has_value()) << c.text << ": " << d.error().ToString();
    EXPECT_EQ(*d, c.seconds) << c.text;
  }
}

TEST(ParseDuration, UnitForms) {
  EXPECT_EQ(ParseDuration("90s").value(), 90);
  EXPECT_EQ(ParseDuration("30m").value(), 1800);
  EXPECT_EQ(ParseDuration("2h").value(), 7200);
  EXPECT_EQ(ParseDuration("1d").value(), 86400);
}

TEST(ParseDuration, RejectsWithTheText) {
  for (const char* bad : {"", "abc", "1:2:3:4", "1:60", "1:00:60", "1-24", "1-", "-5", "5x", "m", "1.5h", "1 h",
                          "1-2-3", ":30", "30:", "2h30m", "-5s", "1--5"}) {
    auto d = ParseDuration(bad);
    ASSERT_FALSE(d.has_value()) << "'" << bad << "' parsed as " << *d;
    EXPECT_NE(d.error().message.find(std::string("'") + bad + "'"), std::string::npos) << d.error().message;
  }
}

TEST(ParseDuration, ZeroAndUpperBound) {
  EXPECT_FALSE(ParseDuration("0").has_value());
  EXPECT_FALSE(ParseDuration("0s").has_value());
  EXPECT_EQ(ParseDuration("0", /*allow_zero=*/true).value(), 0);
  EXPECT_EQ(ParseDuration("365d").value(), 365 * 86400);
  auto too_long = ParseDuration("366d");
  ASSERT_FALSE(too_long.has_value());
  EXPECT_NE(too_long.error().message.find("365 days"), std::string::npos);
  EXPECT_FALSE(ParseDuration("9999999999").has_value());  // overflow-safe: too many digits
}

TEST(FormatDuration, SqueueStyle) {
  EXPECT_EQ(FormatDuration(0), "0:00");
  EXPECT_EQ(FormatDuration(59), "0:59");
  EXPECT_EQ(FormatDuration(61), "1:01");
  EXPECT_EQ(FormatDuration(3600), "1:00:00");
  EXPECT_EQ(FormatDuration(3 * 3600 + 2 * 60 + 1), "3:02:01");
  EXPECT_EQ(FormatDuration(86400 + 3600 + 60 + 1), "1-01:01:01");
  EXPECT_EQ(FormatDuration(-5), "0:00");
}

TEST(FormatDuration, RoundTripsThroughParse) {
  for (int64_t s : {1, 59, 60, 61, 3599, 3600, 86399, 86400, 90061, 30 * 86400 + 1}) {
    EXPECT_EQ(ParseDuration(FormatDuration(s)).value(), s) << FormatDuration(s);
  }
}

}  // namespace
}  // namespace phalanx::cli
