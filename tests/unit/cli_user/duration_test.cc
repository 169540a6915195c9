#include "duration.h"

#include <gtest/gtest.h>

namespace phalanx::cli {
namespace {

// The Slurm grammar itself is util's (tests/unit/util/duration_test.cc); here only that -t
// takes it, "0-05" (D-HH) included.
TEST(ParseDuration, TakesSlurmForms) {
  EXPECT_EQ(ParseDuration("90").value(), 90 * 60);  // MM, as sbatch -t 90
  EXPECT_EQ(ParseDuration("0-05").value(), 5 * 3600);
  EXPECT_EQ(ParseDuration("2-03:04:05").value(), 2 * 86400 + 3 * 3600 + 4 * 60 + 5);
}

TEST(ParseDuration, UnitForms) {
  EXPECT_EQ(ParseDuration("90s").value(), 90);
  EXPECT_EQ(ParseDuration("30m").value(), 1800);
  EXPECT_EQ(ParseDuration("2h").value(), 7200);
  EXPECT_EQ(ParseDuration("1d").value(), 86400);
}

// Neither a unit form nor a Slurm one: the message is -t's, listing both kinds of form.
TEST(ParseDuration, RejectsWithTheText) {
  for (const char* bad : {"", "abc", "1-24", "1:60", "5x", "m", "1.5h", "1 h", "2h30m", "-5s", "+5s", "h5"}) {
    auto d = ParseDuration(bad);
    ASSERT_FALSE(d.has_value()) << "'" << bad << "' parsed as " << *d;
    EXPECT_EQ(d.error().message, std::string("'") + bad +
                                     "' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or "
                                     "90s/30m/2h/1d)");
  }
}

// Hostile -t values: control bytes and huge numbers are refused in the unit form too.
TEST(ParseDuration, RejectsControlBytesAndHugeUnitForms) {
  for (const std::string& bad : {std::string("1\0s", 3), std::string("\x1b[1m2h"), std::string("2h\n"),
                                 std::string("9999999999s"), std::string(1'000'000, '9') + "d"}) {
    EXPECT_FALSE(ParseDuration(bad).has_value()) << bad.size() << " bytes";
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
