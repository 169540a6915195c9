#include "adapters/topology/bandwidth_units.h"

#include <gtest/gtest.h>

namespace phalanx {
namespace {

struct Case {
  const char* text;
  const char* default_unit;
  double gbs;
};

class BandwidthParse : public ::testing::TestWithParam<Case> {};

TEST_P(BandwidthParse, ConvertsToGigabytesPerSecondPerDirection) {
  const Case& c = GetParam();
  auto gbs = ParseBandwidth(c.text, "test", c.default_unit);
  ASSERT_TRUE(gbs.has_value()) << c.text << ": " << gbs.error().ToString();
  EXPECT_DOUBLE_EQ(*gbs, c.gbs) << c.text;
}

INSTANTIATE_TEST_SUITE_P(BandwidthUnits, BandwidthParse,
                         ::testing::Values(Case{"400Gb/s", "", 50}, Case{"400Gbps", "", 50}, Case{"400 Gbit/s", "", 50},
                                           Case{"400gb/s", "", 50}, Case{"50GB/s", "", 50}, Case{"50GBps", "", 50},
                                           Case{"100Mb/s", "", 0.0125}, Case{"1.6Tb/s", "", 200},
                                           Case{"900GB/s", "", 900}, Case{"1.5TB/s", "", 1500},
                                           Case{"800MB/s", "", 0.8}, Case{"  200Gb/s  ", "", 25}, Case{"EDR", "", 12.5},
                                           Case{"HDR", "", 25}, Case{"NDR", "", 50}, Case{"XDR", "", 100},
                                           Case{"ndr", "", 50}, Case{"2xNDR", "", 100}, Case{"4 x HDR", "", 100},
                                           Case{"400", "Gb/s", 50}, Case{"50", "GB/s", 50}, Case{"12.5", "GB/s", 12.5},
                                           Case{"400Gb/s", "GB/s", 50}));  // an explicit unit wins over the default

struct BadCase {
  const char* text;
  const char* default_unit;
  const char* message;  // substring
};

class BandwidthReject : public ::testing::TestWithParam<BadCase> {};

TEST_P(BandwidthReject, FailsWithWhereAndText) {
  const BadCase& c = GetParam();
  auto gbs = ParseBandwidth(c.text, "topology.conf:7", c.default_unit);
  ASSERT_FALSE(gbs.has_value()) << c.text << " parsed as " << *gbs;
  EXPECT_EQ(gbs.error().where, "topology.conf:7");
  EXPECT_NE(gbs.error().message.find(c.message), std::string::npos) << gbs.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    BandwidthErrors, BandwidthReject,
    ::testing::Values(
        BadCase{"", "", "empty bandwidth"}, BadCase{"   ", "Gb/s", "empty bandwidth"},
        BadCase{"400", "", "'400' has no unit"}, BadCase{"400Gb", "", "unknown bandwidth unit 'Gb'"},
        BadCase{"400 furlongs", "", "unknown bandwidth unit 'furlongs'"}, BadCase{"fast", "", "bad bandwidth 'fast'"},
        BadCase{"-400Gb/s", "", "must be a positive number, got '-400Gb/s'"},
        BadCase{"0Gb/s", "", "must be a positive number"}, BadCase{"inf", "Gb/s", "must be a positive number"},
        BadCase{"nan Gb/s", "", "must be a positive number"}, BadCase{"0xNDR", "", "bad lane multiplier '0'"},
        BadCase{"axNDR", "", "bad lane multiplier 'a'"},
        BadCase{"400", "parsecs", "bad default bandwidth unit 'parsecs'"}, BadCase{"1e400Gb/s", "", "bad bandwidth"}));

}  // namespace
}  // namespace phalanx
