// Slurm hostlists: expansion (moved from tests/unit/adapters), FormatHostlist (from
// tests/unit/service), CompressHostlist (from tests/unit/cli_user).
#include "util/hostlist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

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

TEST(Hostlist, KeepsOrderAndDuplicates) { EXPECT_THAT(Expand("n[3,1],n1"), ElementsAre("n3", "n1", "n1")); }

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
                      BadCase{"a[]", "empty brackets"}, BadCase{"a[1,]", "empty range"},
                      BadCase{"a[-3]", "missing a bound"}, BadCase{"a[1-]", "missing a bound"},
                      BadCase{"a[x-3]", "non-numeric range bound 'x'"},
                      BadCase{"a[1-3-5]", "non-numeric range bound '3-5'"}, BadCase{"a[5-1]", "reversed range '5-1'"},
                      BadCase{"n[1-1000001]", "expands to more than 1000000 hosts"},
                      BadCase{"a[1-1000],b[1-1000]c[1-1000]", "expands to more than 1000000 hosts"},
                      BadCase{"a[1-600000],b[1-600000]", "expands to more than 1000000 hosts"},
                      BadCase{"node[0-999999999]", "expands to more than 1000000 hosts"},
                      BadCase{"a[1-999999999999999999]", "too large"}, BadCase{"a b", "whitespace inside hostlist"},
                      BadCase{"a\nb", "whitespace inside hostlist"}, BadCase{"a\tb", "whitespace inside hostlist"}));

// Hostile bytes: control characters are refused by code and place, never copied into the message
// (it ends up on a terminal or in a log).
TEST(Hostlist, RejectsControlCharactersWithoutPrintingThem) {
  struct Case {
    std::string expr, message;
  };
  const Case cases[] = {
      {std::string("dgx") + '\0' + "01", "control character 0x00 in hostlist after 'dgx'"},
      {"\x1b[31mdgx01", "control character 0x1B in hostlist after ''"},
      {"n[1-2],x\x7f", "control character 0x7F in hostlist after 'n[1-2],x'"},
      {"n\x01[1-2]", "control character 0x01 in hostlist after 'n'"},
  };
  for (const Case& c : cases) {
    auto hosts = ExpandHostlist(c.expr, "topology.conf:4");
    ASSERT_FALSE(hosts.has_value()) << c.message;
    EXPECT_EQ(hosts.error().ToString(), "topology.conf:4: " + c.message);
  }
}

// A short expression must not expand to gigabytes: a long prefix times many hosts is refused
// before anything is allocated (58 + 7 characters x 10^6 names > 64 x 10^6).
TEST(Hostlist, BoundsTheCharactersOfAllNames) {
  const std::string expr = std::string(58, 'a') + "[1-1000000]";
  auto hosts = ExpandHostlist(expr, "t");
  ASSERT_FALSE(hosts.has_value()) << hosts->size() << " hosts";
  EXPECT_THAT(hosts.error().message, ::testing::HasSubstr("expands to more than 64000000 characters of host names"));
  auto many_items = ExpandHostlist(std::string(60, 'b') + "[1-500000]," + std::string(60, 'c') + "[1-500000]", "t");
  ASSERT_FALSE(many_items.has_value());
  EXPECT_THAT(many_items.error().message, ::testing::HasSubstr("characters of host names"));
  EXPECT_EQ(Expand(std::string(1000, 'a') + "[1-2]").size(), 2u);  // long names, few of them: fine
}

// Regression: the bracket's host count was recounted after every range (200000 ranges took
// seconds; a megabyte of them, minutes).
TEST(Hostlist, ManyRangesInOneBracketExpandInLinearTime) {
  std::string expr = "n[";
  for (int i = 0; i < 200000; ++i) expr += (i ? "," : "") + std::to_string(2 * i);
  expr += "]";
  const auto hosts = Expand(expr);
  ASSERT_EQ(hosts.size(), 200000u);
  EXPECT_EQ(hosts.back(), "n399998");
}

TEST(FormatHostlist, RangesInTheGivenOrder) {
  EXPECT_EQ(FormatHostlist({"node0", "node1", "node2", "node5"}), "node[0-2,5]");
  EXPECT_EQ(FormatHostlist({"dgx008", "dgx009", "dgx010"}), "dgx[008-010]");
  EXPECT_EQ(FormatHostlist({"su1-n1", "su1-n2", "su2-n1"}), "su1-n[1-2],su2-n1");
  EXPECT_EQ(FormatHostlist({"login"}), "login");
  EXPECT_EQ(FormatHostlist({"n9", "n10"}), "n[9-10]");
  EXPECT_EQ(FormatHostlist({"n2", "n1"}), "n[2,1]");
  EXPECT_EQ(FormatHostlist({}), "");
}

// Names with more digits than ExpandHostlist's bounds take: only the last 15 are a number.
TEST(FormatHostlist, LongNumbersStayExpandable) {
  const std::vector<std::string> names = {"x12345678901234567890", "x12345678901234567891"};
  EXPECT_EQ(FormatHostlist(names), "x12345[678901234567890-678901234567891]");
  EXPECT_EQ(*ExpandHostlist(FormatHostlist(names), "t"), names);
}

TEST(FormatHostlist, ExpandsBackToTheSameNames) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> names;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      static const char* kPrefixes[] = {"n", "node", "gpu-", "r1n", "x"};
      std::string name = kPrefixes[rng() % 5];
      const int width = static_cast<int>(rng() % 4);
      std::string num = std::to_string(rng() % 120);
      if (width > 0 && num.size() < static_cast<size_t>(width)) num.insert(0, width - num.size(), '0');
      if (rng() % 8 != 0) name += num;
      names.push_back(name);
    }
    auto back = ExpandHostlist(FormatHostlist(names), "t");
    ASSERT_TRUE(back) << FormatHostlist(names) << ": " << back.error().ToString();
    EXPECT_EQ(*back, names) << FormatHostlist(names);
  }
}

TEST(CompressHostlist, SortedUniqueRanges) {
  EXPECT_EQ(CompressHostlist({"dgx01", "dgx02", "dgx03", "dgx04"}), "dgx[01-04]");
  EXPECT_EQ(CompressHostlist({"dgx04", "dgx01", "dgx02", "dgx07", "dgx08"}), "dgx[01-02,04,07-08]");
  EXPECT_EQ(CompressHostlist({"dgx01"}), "dgx01");
  EXPECT_EQ(CompressHostlist({"b1", "a2", "a1", "login", "a1"}), "a[1-2],b1,login");
  EXPECT_EQ(CompressHostlist({"n9", "n10", "n11"}), "n[9-11]");
  EXPECT_EQ(CompressHostlist({"n098", "n099", "n100", "n101"}), "n[098-101]");
  EXPECT_EQ(CompressHostlist({"n09", "n10", "n9"}), "n[09,9-10]");  // n9-n10 do not pad
  EXPECT_EQ(CompressHostlist({"r1n1", "r1n2", "r2n1"}), "r1n[1-2],r2n1");
  EXPECT_EQ(CompressHostlist({"n2", "n", "n1"}), "n,n[1-2]");
  EXPECT_EQ(CompressHostlist({}), "");
}

// Whatever the names, the hostlist expands back to them (sorted, unique).
TEST(CompressHostlist, ExpandsBackToTheSameNames) {
  std::mt19937 rng(7);
  const char* prefixes[] = {"dgx", "n", "gpu-", "r1n", "x"};
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> names;
    const int count = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < count; ++i) {
      std::string digits = std::to_string(rng() % 130);
      const size_t pad = rng() % 4;
      if (digits.size() < pad) digits.insert(0, pad - digits.size(), '0');
      names.push_back(prefixes[rng() % 5] + (rng() % 10 == 0 ? std::string() : digits));
    }
    const std::string list = CompressHostlist(names);
    auto expanded = ExpandHostlist(list, "test");
    ASSERT_TRUE(expanded.has_value()) << list << ": " << expanded.error().ToString();
    std::vector<std::string> want = names, got = *expanded;
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << list;
  }
}

}  // namespace
}  // namespace phalanx
