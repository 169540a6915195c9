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

// Hostile bytes (a job name, a node name, a file name): NUL, ESC and every other control byte
// come out as \u escapes, DEL stays (JSON allows it), and size costs only its own size.
TEST(JsonQuote, HostileBytes) {
  EXPECT_EQ(JsonQuote(std::string("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(JsonQuote("\x1b[31mred\x1b[0m"), R"("\u001b[31mred\u001b[0m")");
  EXPECT_EQ(JsonQuote("x\x7f"), "\"x\x7f\"");
  EXPECT_EQ(JsonQuote("line\r\nnext"), R"("line\r\nnext")");
  EXPECT_EQ(JsonQuote("\xc3\x1b"), std::string("\"") + kFffd + "\\u001b\"");  // cut sequence, then ESC
  const std::string huge(1'000'000, '\n');
  const std::string quoted = JsonQuote(huge);
  EXPECT_EQ(quoted.size(), 2 + 2 * huge.size());
  EXPECT_EQ(quoted.substr(0, 5), R"("\n\n)");
}

}  // namespace
}  // namespace phalanx
