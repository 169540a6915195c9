#include "adapters/topology/hostlist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace phalanx {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Expand(std::string_view expr) {
  auto hosts = ExpandHostlist(expr, "test");
  EXPECT_TRUE(hosts.has_value()) << expr << ": " << hosts.error().ToString();
  return hosts.value_or(std::vector<std::string>{});
}

TEST(Hostlist, PlainNamesAndCommaLists) {
  EXPECT_THAT(Expand("dgx001"), ElementsAre("dgx001"));
  EXPECT_THAT(Expand("a,b,c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Expand("  a,b  "), ElementsAre("a", "b"));
}

TEST(Hostlist, RangeKeepsZeroPadding) {
  const auto hosts = Expand("dgx[001-032]");
  ASSERT_EQ(hosts.size(), 32u);
  EXPECT_EQ(hosts.front(), "dgx001");
  EXPECT_EQ(hosts[9], "dgx010");
  EXPECT_EQ(hosts.back(), "dgx032");
  EXPECT_THAT(Expand("n[8-11]"), ElementsAre("n8", "n9", "n10", "n11"));
  EXPECT_THAT(Expand("n[098-101]"), ElementsAre("n098", "n099", "n100", "n101"));
  EXPECT_THAT(Expand("n[0-1]"), ElementsAre("n0", "n1"));
}

TEST(Hostlist, RangeListsSuffixesAndProducts) {
  EXPECT_THAT(Expand("n[1-3,7]"), ElementsAre("n1", "n2", "n3", "n7"));
  EXPECT_THAT(Expand("a[01-02]-ib"), ElementsAre("a01-ib", "a02-ib"));
  EXPECT_THAT(Expand("r[1-2]n[1-2]"), ElementsAre("r1n1", "r1n2", "r2n1", "r2n2"));
  EXPECT_THAT(Expand("a,b[1-2]"), ElementsAre("a", "b1", "b2"));
  EXPECT_THAT(Expand("x[1],y[3-4]z"), ElementsAre("x1", "y3z", "y4z"));
  EXPECT_THAT(Expand("[1-2]"), ElementsAre("1", "2"));
  EXPECT_THAT(Expand("/dev/nvidia[0-3]"), ElementsAre("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"));
}

TEST(Hostlist, KeepsOrderAndDuplicates) {
  EXPECT_THAT(Expand("n[3,1],n1"), ElementsAre("n3", "n1", "n1"));
}

TEST(Hostlist, AcceptsTheLimitExactly) {
  auto hosts = ExpandHostlist("n[1-1000000]", "test");
  ASSERT_TRUE(hosts.has_value()) << hosts.error().ToString();
  EXPECT_EQ(hosts->size(), kMaxHostlistHosts);
  EXPECT_EQ(hosts->back(), "n1000000");
}

struct BadCase {
  const char* expr;
  const char* message;  // substring
};

class HostlistReject : public ::testing::TestWithParam<BadCase> {};

TEST_P(HostlistReject, FailsWithWhereAndExpression) {
  const BadCase& c = GetParam();
  auto hosts = ExpandHostlist(c.expr, "topology.conf:4");
  ASSERT_FALSE(hosts.has_value()) << c.expr << " expanded to " << hosts->size() << " hosts";
  EXPECT_EQ(hosts.error().where, "topology.conf:4");
  EXPECT_THAT(hosts.error().message, ::testing::HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    HostlistErrors, HostlistReject,
    ::testing::Values(BadCase{"", "empty hostlist"}, BadCase{"   ", "empty hostlist"},
                      BadCase{"a,,b", "empty host name in hostlist 'a,,b'"}, BadCase{"a,", "empty host name"},
                      BadCase{"dgx[001-", "unterminated '[' in hostlist 'dgx[001-' (truncated?)"},
                      BadCase{"dgx001]", "unmatched ']'"}, BadCase{"a[1[2]]", "nested '['"},
                      BadCase{"a[]", "empty brackets"}, BadCase{"a[1,]", "empty range"}, BadCase{"a[-3]", "missing a bound"},
                      BadCase{"a[1-]", "missing a bound"}, BadCase{"a[x-3]", "non-numeric range bound 'x'"},
                      BadCase{"a[1-3-5]", "non-numeric range bound '3-5'"}, BadCase{"a[5-1]", "reversed range '5-1'"},
                      BadCase{"n[1-1000001]", "expands to more than 1000000 hosts"},
                      BadCase{"a[1-1000],b[1-1000]c[1-1000]", "expands to more than 1000000 hosts"},
                      BadCase{"a[1-600000],b[1-600000]", "expands to more than 1000000 hosts"},
                      BadCase{"a[1-999999999999999999]", "too large"}, BadCase{"a b", "whitespace inside hostlist"}));

}  // namespace
}  // namespace phalanx
