#include "util/log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace phalanx {
namespace {

// Restores the default level and stderr after each test.
class LogTest : public ::testing::Test {
 protected:
  void TearDown() override {
    SetLogSink(nullptr);
    SetLogLevel(LogLevel::kInfo);
  }
};

TEST_F(LogTest, LevelsByName) {
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("info"), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("warn"), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("warning"), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("error"), LogLevel::kError);
  EXPECT_FALSE(ParseLogLevel("loud").has_value());
  EXPECT_FALSE(ParseLogLevel("INFO").has_value());
  EXPECT_EQ(LogLevelName(LogLevel::kWarn), "warn");
}

TEST_F(LogTest, DropsRecordsBelowTheLevelUnevaluated) {
  std::vector<std::pair<LogLevel, std::string>> got;
  SetLogSink([&](LogLevel level, const std::string& message) { got.emplace_back(level, message); });
  SetLogLevel(LogLevel::kWarn);
  int evaluated = 0;
  const auto count = [&] { return ++evaluated; };
  PHX_LOG(kInfo) << "dropped " << count();
  Log(LogLevel::kDebug, "dropped too");
  PHX_LOG(kError) << "kept " << count();
  Log(LogLevel::kWarn, "kept too");
  EXPECT_EQ(evaluated, 1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(LogLevel::kError, std::string("kept 1")));
  EXPECT_EQ(got[1], std::make_pair(LogLevel::kWarn, std::string("kept too")));
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
}

// The daemon's format, for phalanxd and phalanx-agent alike: UTC time, level tag, message.
TEST_F(LogTest, OneLinePerRecordOnStderr) {
  testing::internal::CaptureStderr();
  PHX_LOG(kInfo) << "start job=" << 7;
  Log(LogLevel::kError, "disk full");
  Log(LogLevel::kDebug, "not shown");
  const std::string out = testing::internal::GetCapturedStderr();
  const std::regex two(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  start job=7\n)"
                       R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ERROR disk full\n)");
  EXPECT_TRUE(std::regex_match(out, two)) << out;
}

// Issue 12: a newline in a job name forged a whole daemon log line; an ESC reached the terminal
// of whoever read the log.
TEST_F(LogTest, AHostileNameCannotForgeALineOrReachATerminal) {
  static constexpr char kName[] = "x\n2026-12-01T13:00:00.000Z INFO  admin granted\x1b[2J\0\r\xff\xc2\x9b";
  const std::string name(kName, sizeof kName - 1);
  testing::internal::CaptureStderr();
  PHX_LOG(kInfo) << "submit job=9 name=" << name;
  const std::string out = testing::internal::GetCapturedStderr();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;  // one record, one line
  EXPECT_EQ(out.back(), '\n');
  for (char c : out.substr(0, out.size() - 1)) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_FALSE(u < 0x20 || u == 0x7f) << "control byte " << int(u) << " in " << out;
  }
  EXPECT_NE(out.find(" INFO  submit job=9 name=x\\n2026-12-01T13:00:00.000Z INFO  admin granted\\x1b[2J\\x00\\r"
                     "\\xff\\u009b\n"),
            std::string::npos)
      << out;
}

TEST_F(LogTest, TheSinkGetsTheEscapedMessage) {
  std::vector<std::string> got;
  SetLogSink([&](LogLevel, const std::string& message) { got.push_back(message); });
  Log(LogLevel::kWarn, "a\tb\nc 训练");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "a\\tb\\nc 训练");
}

}  // namespace
}  // namespace phalanx
