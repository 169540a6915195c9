#include "util/duration.h"

#include <gtest/gtest.h>

namespace phalanx {
namespace {

TEST(ParseSlurmDuration, EveryForm) {
  struct Case {
    const char* text;
    int64_t seconds;
  };
  const Case cases[] = {
      {"90", 90 * 60},                                    // MM: minutes, as sbatch -t 90
      {"0", 0},                                           // MM
      {"5:30", 5 * 60 + 30},                              // MM:SS
      {"120:00", 120 * 60},                               // MM:SS with many minutes
      {"2:00:00", 2 * 3600},                              // HH:MM:SS
      {"48:00:00", 48 * 3600},                            // HH:MM:SS past a day
      {"1-0", 86400},                                     // D-HH
      {"1-12", 86400 + 12 * 3600},                        // D-HH
      {"2-03:04", 2 * 86400 + 3 * 3600 + 4 * 60},         // D-HH:MM
      {"2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5},  // D-HH:MM:SS
      {"0-00:00:01", 1},
  };
  for (const Case& c : cases) {
    auto d = ParseSlurmDuration(c.text);
    ASSERT_TRUE(d.has_value()) << c.text << ": " << d.error().ToString();
    EXPECT_EQ(*d, c.seconds) << c.text;
  }
}

// Regression: the sacct reader once read "0-05" (D-HH) as 5 minutes, as if the bare MM form.
TEST(ParseSlurmDuration, DayHoursIsHoursEvenWithZeroDays) {
  EXPECT_EQ(ParseSlurmDuration("0-05").value(), 5 * 3600);
  EXPECT_EQ(ParseSlurmDuration("0-05:00").value(), 5 * 3600);
  EXPECT_EQ(ParseSlurmDuration("05").value(), 5 * 60);
}

TEST(ParseSlurmDuration, RejectsWithTheText) {
  for (const char* bad : {"", "abc", "1:2:3:4", "1:60", "1:00:60", "1-24", "1-", "-5", "1--5", "5x", "+5", " 5", "1.5",
                          "1-2-3", ":30", "30:", "2h", "UNLIMITED", "1234567890"}) {
    auto d = ParseSlurmDuration(bad);
    ASSERT_FALSE(d.has_value()) << "'" << bad << "' parsed as " << *d;
    EXPECT_EQ(d.error().message,
              std::string("'") + bad + "' is not a Slurm duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)");
  }
}

// Hostile text (a -t argument, a sacct field): control bytes and huge inputs are refused, not
// read around; a long run of digits cannot overflow (9 digits per field at most).
TEST(ParseSlurmDuration, RejectsControlBytesAndHugeText) {
  const std::string bad[] = {
      std::string("5\0", 2),
      std::string("\0", 1),
      "5\n",
      "1-05\n",
      "\x1b[31m5",
      "5\x1b",
      "1:\r30",
      std::string(1'000'000, '9'),
      std::string(1'000'000, ':'),
      "1-" + std::string(1'000'000, '0'),
      "999999999-23:59:59" + std::string(1'000'000, '0'),
  };
  for (const std::string& text : bad) {
    auto d = ParseSlurmDuration(text);
    ASSERT_FALSE(d.has_value()) << text.size() << " bytes parsed as " << *d;
    EXPECT_TRUE(
        d.error().message.ends_with("' is not a Slurm duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)"));
  }
  // The largest value the fields allow, computed without overflow.
  EXPECT_EQ(ParseSlurmDuration("999999999-23:59:59").value(), 999999999LL * 86400 + 86399);
}

}  // namespace
}  // namespace phalanx
