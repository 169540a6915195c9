#include "util/numbers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace phalanx {
namespace {

TEST(ParseNumber, WholeTextOnly) {
  EXPECT_EQ(ParseNumber<int>("42"), 42);
  EXPECT_EQ(ParseNumber<int64_t>("-7"), -7);
  EXPECT_EQ(ParseNumber<uint64_t>("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "+1", "1x", "0x10", "1.5", "--1"}) {
    EXPECT_FALSE(ParseNumber<int>(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ParseNumber, RangeOfTheType) {
  EXPECT_EQ(ParseNumber<uint8_t>("255"), 255);
  EXPECT_FALSE(ParseNumber<uint8_t>("256").has_value());
  EXPECT_FALSE(ParseNumber<uint32_t>("-1").has_value());
  EXPECT_FALSE(ParseNumber<int64_t>("9223372036854775808").has_value());
}

TEST(ParseNumber, FloatingPoint) {
  EXPECT_EQ(ParseNumber<double>("0.25"), 0.25);
  EXPECT_EQ(ParseNumber<double>("1e3"), 1000.0);
  EXPECT_EQ(ParseNumber<double>("-2"), -2.0);
  EXPECT_TRUE(std::isinf(*ParseNumber<double>("inf")));  // callers check isfinite
  EXPECT_FALSE(ParseNumber<double>("1.5 ").has_value());
  EXPECT_FALSE(ParseNumber<double>(".").has_value());
}

TEST(ParseWholeNumber, NamesTheFieldAndTheValue) {
  EXPECT_EQ(ParseWholeNumber<uint32_t>("--gpus", "8").value(), 8u);
  auto bad = ParseWholeNumber<uint32_t>("--gpus", "eight");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().ToString(), "--gpus: 'eight' is not a whole number");
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

TEST(ParseReal, NamesTheFieldAndTheValue) {
  EXPECT_EQ(ParseReal("share", "0.5").value(), 0.5);
  EXPECT_EQ(ParseReal("share", "half").error().ToString(), "share: 'half' is not a number");
}

}  // namespace
}  // namespace phalanx
