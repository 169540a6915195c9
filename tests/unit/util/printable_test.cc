#include "util/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace phalanx {
namespace {

using namespace std::string_literals;

TEST(Printable, KeepsPrintableAsciiAndUtf8) {
  EXPECT_EQ(Printable("train-llama_7b v2"), "train-llama_7b v2");
  EXPECT_EQ(Printable("训练 café 🚀"), "训练 café 🚀");
  EXPECT_EQ(Printable(""), "");
}

TEST(Printable, ShowsControlCharactersVisibly) {
  EXPECT_EQ(Printable("a\nb"), "a\\nb");
  EXPECT_EQ(Printable("a\r\tb"), "a\\r\\tb");
  EXPECT_EQ(Printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(Printable("nul\0after"s), "nul\\x00after");
  EXPECT_EQ(Printable("del\x7f"), "del\\x7f");
}

TEST(Printable, ShowsC1ControlsAndBidiOverrides) {
  EXPECT_EQ(Printable("x\xc2\x9b"
                      "31m"),
            "x\\u009b31m");  // CSI as a C1 control
  EXPECT_EQ(Printable("abc\xe2\x80\xae"
                      "fed"),
            "abc\\u202efed");  // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(Printable("\xe2\x81\xa6"
                      "x"),
            "\\u2066x");  // LEFT-TO-RIGHT ISOLATE
}

TEST(Printable, InvalidUtf8BecomesReplacementCharacter) {
  EXPECT_EQ(Printable("a\xff"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(Printable("\xc3"), "\xEF\xBF\xBD");                                  // truncated sequence
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate: 3 bad bytes
}

TEST(Printable, NoDangerousByteSurvives) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string out = Printable(all);
  for (char c : out) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_FALSE(u < 0x20 || u == 0x7f) << "byte " << int(u);
  }
}

TEST(EscapeForLog, InvalidBytesAsHex) {
  EXPECT_EQ(EscapeForLog("a\xff\nb"), "a\\xff\\nb");
  EXPECT_EQ(EscapeForLog("ok é"), "ok é");
}

TEST(DisplayWidth, AsciiCjkEmojiCombining) {
  EXPECT_EQ(DisplayWidth("train"), 5u);
  EXPECT_EQ(DisplayWidth("训练"), 4u);         // CJK ideographs: 2 each
  EXPECT_EQ(DisplayWidth("ｔｒａｉｎ"), 10u);  // fullwidth Latin
  EXPECT_EQ(DisplayWidth("한국어"), 6u);       // Hangul syllables
  EXPECT_EQ(DisplayWidth("カタカナ"), 8u);
  EXPECT_EQ(DisplayWidth("🚀x"), 3u);        // emoji: 2
  EXPECT_EQ(DisplayWidth("e\xcc\x81"), 1u);  // e + COMBINING ACUTE ACCENT
  EXPECT_EQ(DisplayWidth("café"), 4u);
  EXPECT_EQ(DisplayWidth("a\xe2\x80\x8b"
                         "b"),
            2u);                                            // ZERO WIDTH SPACE
  EXPECT_EQ(DisplayWidth("\xe2\x9d\xa4\xef\xb8\x8f"), 1u);  // HEAVY HEART + VS16: text width 1
  EXPECT_EQ(DisplayWidth("\xff"), 1u);                      // as U+FFFD
  EXPECT_EQ(CodePointWidth(U'ä'), 1);
  EXPECT_EQ(CodePointWidth(0x4E00), 2);
  EXPECT_EQ(CodePointWidth(0x0301), 0);
  EXPECT_EQ(CodePointWidth(0x1F600), 2);
  EXPECT_EQ(CodePointWidth(0x20000), 2);
  EXPECT_EQ(CodePointWidth(0x303F), 1);  // just past the wide CJK punctuation
}

TEST(FitToWidth, PadsByColumnsNotBytes) {
  EXPECT_EQ(FitToWidth("ab", 4), "ab  ");
  EXPECT_EQ(FitToWidth("ab", 4, true), "  ab");
  EXPECT_EQ(FitToWidth("训练", 6), "训练  ");
  EXPECT_EQ(FitToWidth("cafe\xcc\x81", 6), "cafe\xcc\x81  ");
  EXPECT_EQ(FitToWidth("anything", 0), "anything");
}

TEST(FitToWidth, TruncatesWithAMarkAtCharacterBoundaries) {
  EXPECT_EQ(FitToWidth("abcdefgh", 5), "abcd+");
  EXPECT_EQ(FitToWidth("abcdefgh", 5, true), "abcd+");
  EXPECT_EQ(FitToWidth("abcde", 5), "abcde");  // fits exactly: no mark
  // A wide character that does not fit whole is left out and the cell padded.
  EXPECT_EQ(FitToWidth("训练模型", 6), "训练+ ");
  EXPECT_EQ(FitToWidth("训练模型", 5), "训练+");
  EXPECT_EQ(DisplayWidth(FitToWidth("🚀🚀🚀", 4)), 4u);
  // A combining mark stays with its base character.
  EXPECT_EQ(FitToWidth("ae\xcc\x81xyz", 3), "ae\xcc\x81+");
  EXPECT_EQ(FitToWidth("abc", 1), "+");
}

}  // namespace
}  // namespace phalanx
