#include "util/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace phalanx {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(Trim, DropsSurroundingWhitespaceOnly) {
  EXPECT_EQ(Trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(Trim("\v\fx"), "x");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(TrimLeft("  a  "), "a  ");
}

TEST(Split, KeepsEmptyFields) {
  EXPECT_THAT(Split("a,,b", ','), ElementsAre("a", "", "b"));
  EXPECT_THAT(Split("a,", ','), ElementsAre("a", ""));
  EXPECT_THAT(Split("", ','), ElementsAre(""));
  EXPECT_THAT(Split("1:2:3", ':'), ElementsAre("1", "2", "3"));
}

TEST(Split, NonEmptyAndWhitespace) {
  EXPECT_THAT(SplitNonEmpty(",a,,b,", ','), ElementsAre("a", "b"));
  EXPECT_THAT(SplitNonEmpty("", ','), IsEmpty());
  EXPECT_THAT(SplitWhitespace("  GPU0\tX  NV18 \r"), ElementsAre("GPU0", "X", "NV18"));
  EXPECT_THAT(SplitWhitespace(" \t "), IsEmpty());
}

TEST(Case, AsciiOnly) {
  EXPECT_EQ(ToUpper("Completed é"), "COMPLETED é");
  EXPECT_EQ(ToLower("JobID"), "jobid");
  EXPECT_TRUE(EqualsIgnoreCase("NDR", "ndr"));
  EXPECT_FALSE(EqualsIgnoreCase("NDR", "ndr4"));
  EXPECT_TRUE(StartsWithIgnoreCase("switchname=s1", "SwitchName="));
  EXPECT_FALSE(StartsWithIgnoreCase("Switch", "SwitchName="));
}

TEST(Quote, SingleQuotesWithoutEscaping) {
  EXPECT_EQ(Quote("dgx01"), "'dgx01'");
  EXPECT_EQ(Quote("it's"), "'it's'");
  EXPECT_EQ(Quote(""), "''");
}

TEST(FileStem, NameWithoutDirectoriesAndLastExtension) {
  EXPECT_EQ(FileStem("config/nodes/dgx01.xml"), "dgx01");
  EXPECT_EQ(FileStem("dgx01.topo.txt"), "dgx01.topo");
  EXPECT_EQ(FileStem("/abs/dgx01"), "dgx01");
  EXPECT_EQ(FileStem("dir.d/.hidden"), ".hidden");  // a leading dot starts no extension
  EXPECT_EQ(FileStem("dir/"), "");
  EXPECT_EQ(FileStem("dir/", "node"), "node");
  EXPECT_EQ(FileStem("x.xml", "node"), "x");
}

TEST(HtmlEscape, EntitiesForMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape("<b>a & \"b\"</b>"), "&lt;b&gt;a &amp; &quot;b&quot;&lt;/b&gt;");
  EXPECT_EQ(HtmlEscape("it's vc_6214e9"), "it's vc_6214e9");
  EXPECT_EQ(HtmlEscape("&amp;"), "&amp;amp;");  // not idempotent: escape once
  EXPECT_EQ(HtmlEscape(""), "");
}

}  // namespace
}  // namespace phalanx
