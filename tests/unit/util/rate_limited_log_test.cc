// RateLimitedLog (util/rate_limited_log.h): a few records per key and window, the rest counted
// and reported with the next record written or by Flush; time is passed in.
#include "util/rate_limited_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace phalanx {
namespace {

RateLimitedLog::Options Opts(double window, uint32_t burst, size_t max_keys = 256) {
  RateLimitedLog::Options o;
  o.window_s = window;
  o.burst = burst;
  o.max_keys = max_keys;
  return o;
}

TEST(RateLimitedLog, WritesTheBurstThenCountsAndReportsTheCountWithTheNextRecord) {
  RateLimitedLog log(Opts(10, 2));
  EXPECT_EQ(log.Admit("accept", "accept: Too many open files", 100.0), "accept: Too many open files");
  EXPECT_EQ(log.Admit("accept", "accept: Too many open files", 100.1), "accept: Too many open files");
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(log.Admit("accept", "accept: Too many open files", 100.2 + i * 0.001));
  EXPECT_EQ(log.suppressed_total(), 1000u);
  // Still inside the window that began at 100.0.
  EXPECT_FALSE(log.Admit("accept", "accept: Too many open files", 109.9));
  // A new window: the record carries the count and the span since the first suppressed one.
  EXPECT_EQ(log.Admit("accept", "accept: Too many open files", 110.0),
            "accept: Too many open files (1001 more in the last 10s suppressed)");
  EXPECT_EQ(log.Admit("accept", "accept: Too many open files", 110.5), "accept: Too many open files")
      << "the count is told once";
  EXPECT_FALSE(log.Admit("accept", "accept: Too many open files", 110.6));
}

TEST(RateLimitedLog, KeysAreCountedApart) {
  RateLimitedLog log(Opts(10, 1));
  EXPECT_TRUE(log.Admit("token:10.0.0.5", "bad token from 10.0.0.5", 0));
  EXPECT_FALSE(log.Admit("token:10.0.0.5", "bad token from 10.0.0.5", 1));
  EXPECT_TRUE(log.Admit("token:10.0.0.6", "bad token from 10.0.0.6", 1)) << "another peer is its own key";
  EXPECT_FALSE(log.Admit("token:10.0.0.6", "bad token from 10.0.0.6", 2));
  EXPECT_EQ(log.Admit("token:10.0.0.5", "bad token from 10.0.0.5", 10.5),
            "bad token from 10.0.0.5 (1 more in the last 10s suppressed)");
}

TEST(RateLimitedLog, FlushReportsAFloodThatStoppedOnceAndForgetsQuietKeys) {
  RateLimitedLog log(Opts(5, 1));
  EXPECT_TRUE(log.Admit("a", "refused uid 60001", 0));
  for (int i = 0; i < 7; ++i) EXPECT_FALSE(log.Admit("a", "refused uid 60001 #" + std::to_string(i), 1 + i * 0.1));
  EXPECT_TRUE(log.Admit("b", "quiet", 0));
  EXPECT_TRUE(log.Flush(4.9).empty()) << "the window has not ended";
  // The last suppressed message stands for itself; the other 6 are counted.
  EXPECT_EQ(log.Flush(5.0), std::vector<std::string>{"refused uid 60001 #6 (6 more in the last 4s suppressed)"});
  EXPECT_TRUE(log.Flush(20).empty()) << "told once; then both keys are quiet and forgotten";
  // A forgotten key starts afresh.
  EXPECT_EQ(log.Admit("a", "refused uid 60001", 21), "refused uid 60001");
}

TEST(RateLimitedLog, KeysBeyondTheLimitShareOneKey) {
  RateLimitedLog log(Opts(10, 1, 2));
  EXPECT_TRUE(log.Admit("k1", "one", 0));
  EXPECT_TRUE(log.Admit("k2", "two", 0));
  EXPECT_TRUE(log.Admit("k3", "three", 0)) << "the first of the shared key";
  EXPECT_FALSE(log.Admit("k4", "four", 0)) << "a flood of distinct keys cannot grow the table or the log";
  EXPECT_FALSE(log.Admit("k5", "five", 0));
  EXPECT_EQ(log.suppressed_total(), 2u);
}

TEST(RateLimitedLog, LogWritesWhatIsAdmittedThroughTheLogger) {
  std::vector<std::string> lines;
  SetLogSink([&](LogLevel, const std::string& line) { lines.push_back(line); });
  RateLimitedLog log(Opts(3600, 2));
  int written = 0;
  for (int i = 0; i < 10000; ++i) written += log.Log(LogLevel::kWarn, "k", "accept failed") ? 1 : 0;
  SetLogSink({});
  EXPECT_EQ(written, 2);
  EXPECT_EQ(lines, (std::vector<std::string>{"accept failed", "accept failed"}));
  EXPECT_EQ(log.suppressed_total(), 9998u);
}

}  // namespace
}  // namespace phalanx
