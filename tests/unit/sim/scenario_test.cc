// Golden scenario files: tests/scenarios/NAME.scn -> NAME.expected (the decision log).
// After a reviewed change in behaviour, regenerate with tests/scenarios/regen.sh.
#include "sim/scenario.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace phalanx {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> Scenarios() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(PHALANX_SOURCE_DIR) / "tests/scenarios")) {
    if (e.path().extension() == ".scn") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class Golden : public ::testing::TestWithParam<fs::path> {};

TEST_P(Golden, MatchesExpectedDecisionLog) {
  const fs::path scn = GetParam();
  auto log = RunScenario(Read(scn), scn.filename().string());
  ASSERT_TRUE(log) << log.error().ToString();
  fs::path expected = scn;
  expected.replace_extension(".expected");
  if (std::getenv("PHALANX_UPDATE_GOLDEN")) {
    std::ofstream(expected) << *log;
    GTEST_SKIP() << "rewrote " << expected;
  }
  ASSERT_TRUE(fs::exists(expected)) << "missing " << expected << "; run tests/scenarios/regen.sh";
  EXPECT_EQ(*log, Read(expected)) << "scenario " << scn.filename();
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Golden, ::testing::ValuesIn(Scenarios()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                           std::string name = info.param.stem().string();
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return name;
                         });

TEST(ScenarioErrors, NameFileAndLine) {
  auto r = RunScenario("topology gen:demo\nat 0 submit id=1 gpus=two\n", "x.scn");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().ToString(), "x.scn:2: gpus: 'two' is not an integer");
  auto u = RunScenario("topology gen:demo\nat 0 frobnicate id=1\n", "y.scn");
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().where, "y.scn:2");
  auto t = RunScenario("at 0 schedule\n", "z.scn");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("'topology' must come before"), std::string::npos);
}

}  // namespace
}  // namespace phalanx
