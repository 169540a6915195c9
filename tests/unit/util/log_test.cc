#include "util/log.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace phalanx
