#include "service/http/url.h"

#include <gtest/gtest.h>

namespace phalanx::http {
namespace {

TEST(PercentDecodeTest, DecodesEscapesAndPlus) {
  EXPECT_EQ(PercentDecode("a%20b%2Fc%e2%82%AC", false).value(), "a b/c\xe2\x82\xac");
  EXPECT_EQ(PercentDecode("a+b", true).value(), "a b");
  EXPECT_EQ(PercentDecode("a+b", false).value(), "a+b");
  EXPECT_EQ(PercentDecode("", true).value(), "");
}

TEST(PercentDecodeTest, RejectsBadEscapesAndNul) {
  for (const char* bad : {"%", "%2", "a%zz", "%g0", "x%2"}) {
    auto r = PercentDecode(bad, true);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "'"), std::string::npos) << r.error().message;
  }
  auto nul = PercentDecode("a%00b", false);
  ASSERT_FALSE(nul);
  EXPECT_EQ(nul.error().message, "%00 (a NUL byte) is not allowed in 'a%00b'");
}

TEST(ParseQueryTest, KeysRepeatAndEmptyPiecesAreSkipped) {
  auto q = ParseQuery("state=pending&&state=running&user=al%69ce&flag&x=a%3Db&=v");
  ASSERT_TRUE(q) << q.error().ToString();
  Query want{{"state", "pending"}, {"state", "running"}, {"user", "alice"}, {"flag", ""}, {"x", "a=b"}, {"", "v"}};
  EXPECT_EQ(*q, want);
  auto [first, last] = q->equal_range("state");
  ASSERT_EQ(std::distance(first, last), 2);
  EXPECT_EQ(first->second, "pending");  // target order
  EXPECT_FALSE(ParseQuery("a=%"));
  EXPECT_TRUE(ParseQuery("")->empty());
}

TEST(SplitTest, PathQueryFragment) {
  EXPECT_EQ(Split("/a/b?x=1#frag").path, "/a/b");
  EXPECT_EQ(Split("/a/b?x=1#frag").query, "x=1");
  EXPECT_EQ(Split("/a?").query, "");
  EXPECT_EQ(Split("/a#f?x").path, "/a");
  EXPECT_EQ(Split("/a#f?x").query, "");
  EXPECT_EQ(Split("/a?b?c").query, "b?c");
}

}  // namespace
}  // namespace phalanx::http
