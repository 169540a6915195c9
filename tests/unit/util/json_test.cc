// JsonQuote and the UTF-8 sanitizer under it (moved here from tests/unit/http/escape_test.cc).
#include "util/json.h"

#include <gtest/gtest.h>

#include "util/utf8.h"

namespace phalanx {
namespace {

constexpr const char* kFffd = "\xEF\xBF\xBD";

TEST(SanitizeUtf8, KeepsValidAndReplacesInvalidBytes) {
  EXPECT_EQ(SanitizeUtf8("plain é € 😀"), "plain é € 😀");
  EXPECT_EQ(SanitizeUtf8("a\xff"
                         "b"),
            std::string("a") + kFffd + "b");
  EXPECT_EQ(SanitizeUtf8("\xc0\xaf"), std::string(kFffd) + kFffd);              // overlong '/'
  EXPECT_EQ(SanitizeUtf8("\xed\xa0\x80"), std::string(kFffd) + kFffd + kFffd);  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xf4\x90\x80\x80"), std::string(kFffd) + kFffd + kFffd + kFffd);
  EXPECT_EQ(SanitizeUtf8("\xe2\x82"), std::string(kFffd) + kFffd);  // truncated
  EXPECT_EQ(SanitizeUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(JsonQuote, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\te\x01\x1f/é"), R"("a\"b\\c\nd\te\u0001\u001f/é")");
  EXPECT_EQ(JsonQuote("\r\b\f"), R"("\r\b\f")");
  EXPECT_EQ(JsonQuote(""), "\"\"");
}

// Every hand-written JSON is valid whatever the bytes: node names, file names, error texts.
TEST(JsonQuote, ReplacesInvalidUtf8) {
  EXPECT_EQ(JsonQuote("\xff"), std::string("\"") + kFffd + "\"");
  EXPECT_EQ(JsonQuote("dgx\xc3"), std::string("\"dgx") + kFffd + "\"");
}

}  // namespace
}  // namespace phalanx
