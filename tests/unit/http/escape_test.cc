#include "service/http/escape.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace phalanx::http {
namespace {

constexpr const char* kFffd = "\xEF\xBF\xBD";

TEST(PrometheusEscapeTest, LabelValues) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\nd"),
            R"(a\\b\"c\nd)");
  EXPECT_EQ(EscapeLabelValue("tab\tand\rcr stay"), "tab\tand\rcr stay");
  EXPECT_EQ(EscapeLabelValue("{x=\"y\",z}"), R"({x=\"y\",z})");
  EXPECT_EQ(EscapeLabelValue("bad\xfe"), std::string("bad") + kFffd);
  EXPECT_EQ(EscapeLabelValue(""), "");
}

TEST(PrometheusEscapeTest, HelpKeepsQuotes) { EXPECT_EQ(EscapeHelp("say \"hi\"\\n\nnext"), R"(say "hi"\\n\nnext)"); }

TEST(FormatValueTest, IntegersInFullOthersAsGo) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-0.0), "0");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(1e6), "1000000");
  EXPECT_EQ(FormatValue(9007199254740991.0), "9007199254740991");
  EXPECT_EQ(FormatValue(9007199254740992.0), "9.007199254740992e+15");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(1234567.5), "1.2345675e+06");
  EXPECT_EQ(FormatValue(1e-7), "1e-07");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

// Expected strings are Go's strconv.FormatFloat(v, 'g', -1, 64), as client_golang writes le.
TEST(FormatFloatTest, MatchesGoShortestG) {
  EXPECT_EQ(FormatFloat(0), "0");
  EXPECT_EQ(FormatFloat(1), "1");
  EXPECT_EQ(FormatFloat(0.005), "0.005");
  EXPECT_EQ(FormatFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatFloat(0.00001), "1e-05");
  EXPECT_EQ(FormatFloat(0.00012), "0.00012");
  EXPECT_EQ(FormatFloat(100000), "100000");
  EXPECT_EQ(FormatFloat(123456.5), "123456.5");
  EXPECT_EQ(FormatFloat(1e6), "1e+06");
  EXPECT_EQ(FormatFloat(1234567.5), "1.2345675e+06");
  EXPECT_EQ(FormatFloat(-2.5e-10), "-2.5e-10");
  EXPECT_EQ(FormatFloat(1.5e300), "1.5e+300");
  EXPECT_EQ(FormatFloat(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatFloat(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatFloat(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatFloat(std::nan("")), "NaN");
}

}  // namespace
}  // namespace phalanx::http
