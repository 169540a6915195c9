// Golden scenario files: tests/scenarios/NAME.scn -> NAME.expected (the decision log), plus the
// `expect` lines inside each .scn (checked while it runs; they state what the scenario shows).
// After a reviewed change in behaviour, regenerate with tests/scenarios/regen.sh: it rewrites a
// .expected file only when the scenario's expectations hold, and never in CI.
#include "sim/scenario.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include <unistd.h>

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

// CI=true (or any value but empty, "false" and "0"), as every CI service sets it.
bool InCi() {
  const char* ci = std::getenv("CI");
  if (!ci) return false;
  const std::string_view v(ci);
  return !v.empty() && v != "false" && v != "0";
}

// The golden check of one scenario. With PHALANX_UPDATE_GOLDEN set (tests/scenarios/regen.sh) it
// rewrites NAME.expected instead of comparing (and sets *rewrote), but only after the scenario ran
// with all its expectations holding, and never in CI: there it fails.
void CheckGolden(const fs::path& scn, bool* rewrote) {
  *rewrote = false;
  const bool update = std::getenv("PHALANX_UPDATE_GOLDEN") != nullptr;
  if (update && InCi()) {
    FAIL() << "PHALANX_UPDATE_GOLDEN is set in CI (CI=" << std::getenv("CI")
           << "): golden files are never rewritten in CI; regenerate them locally with tests/scenarios/regen.sh";
  }
  auto log = RunScenario(Read(scn), scn.filename().string());
  ASSERT_TRUE(log) << log.error().ToString();
  fs::path expected = scn;
  expected.replace_extension(".expected");
  if (update) {
    std::ofstream(expected) << *log;
    *rewrote = true;
    return;
  }
  ASSERT_TRUE(fs::exists(expected)) << "missing " << expected << "; run tests/scenarios/regen.sh";
  EXPECT_EQ(*log, Read(expected)) << "scenario " << scn.filename();
}

class Golden : public ::testing::TestWithParam<fs::path> {};

TEST_P(Golden, MatchesExpectedDecisionLog) {
  bool rewrote = false;
  CheckGolden(GetParam(), &rewrote);
  if (rewrote) GTEST_SKIP() << "rewrote the .expected file of " << GetParam().filename();
}

// Every scenario states its point in `expect` lines, so that a regenerated .expected file cannot
// quietly accept a regression.
TEST_P(Golden, StatesItsPointInExpectLines) {
  std::istringstream in(Read(GetParam()));
  int expects = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string a, b, c;
    words >> a >> b >> c;
    expects += a == "expect" || (a == "at" && c == "expect");
  }
  EXPECT_GE(expects, 1) << GetParam().filename() << " has no 'expect' line (docs/scheduling.md#expectations)";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Golden, ::testing::ValuesIn(Scenarios()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.stem().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
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

// ---- expect lines ----------------------------------------------------------------------------

// On the demo cluster (node0, node1 under leaf0; node2, node3 under leaf1; 8 GPUs each): job 1
// runs on leaf0, job 2 (low, preemptible) on leaf1; urgent job 3 preempts job 2 through a
// checkpoint and starts on leaf1; job 4 does not fit until job 1 ends; job 5's submit is refused.
constexpr const char* kScript =
    "topology gen:demo\n"                                                           // 1
    "policy phalanx\n"                                                              // 2
    "set checkpoint_grace=100 backfill=easy max_walltime=50000 runtime=walltime\n"  // 3
    "at 0 submit id=1 gpus=16 time=10000 preemptible=no\n"                          // 4
    "at 0 submit id=2 gpus=16 time=10000 class=low\n"                               // 5
    "at 0 schedule\n"                                                               // 6
    "at 900 submit id=3 gpus=16 time=600 class=urgent\n"                            // 7
    "at 900 submit id=4 gpus=32 time=100\n"                                         // 8
    "at 900 schedule\n"                                                             // 9
    "at 950 checkpoint id=2 epoch=1\n"                                              // 10
    "at 950 schedule\n"                                                             // 11
    "at 950 submit id=5 gpus=8 time=99999\n"                                        // 12
    "at 1000 end id=1\n"                                                            // 13
    "at 1000 schedule\n";                                                           // 14

// Runs kScript with `lines` inserted after line `after` (1-based; 14 = at the end).
Result<std::string> RunWith(int after, const std::string& lines) {
  std::istringstream in(kScript);
  std::string out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    out += line + "\n";
    if (++n == after) out += lines;
  }
  return RunScenario(out, "t.scn");
}

TEST(ScenarioExpect, TheScriptRunsAsDescribed) {
  auto log = RunScenario(kScript, "t.scn");
  ASSERT_TRUE(log) << log.error().ToString();
  EXPECT_EQ(*log,
            "t=0 start job=1 gpus=node0:0-7,node1:0-7 (busbw 360.0 GB/s)\n"
            "t=0 start job=2 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)\n"
            "t=900 checkpoint job=2 deadline=1000 (preempt for job 3)\n"
            "t=900 wait job=3 Preempting(1 jobs checkpointing)\n"
            "t=900 wait job=4 Resources start=10000\n"
            "t=950 preempt job=2 requeue (preempted for job 3 after checkpoint)\n"
            "t=950 start job=3 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)\n"
            "t=950 wait job=2 Priority\n"
            "t=950 refused submit: job 5: walltime 99999s exceeds the maximum 50000s of partition default (MaxTime "
            "13:53:20)\n"
            "t=1000 wait job=4 Resources start=1550\n"
            "final: 1=completed 2=pending 3=running[16] 4=pending\n");
}

TEST(ScenarioExpect, HoldingExpectationsPassAndPrintNothing) {
  const std::string expects =
      "expect start id=1 at=0 on=leaf0 gpus=16\n"
      "expect start id=3 at<=950 at>=950 on=leaf1\n"
      "expect start id=3 before=951 times=1\n"
      "expect start id=2 on=leaf1 times=1\n"
      "expect checkpoint id=2 at=900 for=3\n"
      "expect preempt id=2 for=3\n"
      "expect no-preempt id=1\n"
      "expect no-preempt id=2 for=4\n"
      "expect no-start id=4\n"
      "expect no-start id=2 at>=1\n"
      "expect no-kill id=1\n";
  auto plain = RunScenario(kScript, "t.scn");
  ASSERT_TRUE(plain) << plain.error().ToString();
  auto r = RunWith(14, expects);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, *plain);  // expect lines add nothing to the log

  // `at T expect`: the state right after the lines above.
  for (const auto& [after, lines] : std::vector<std::pair<int, std::string>>{
           {6, "at 0 expect running id=1 on=leaf0 gpus=16\nat 0 expect running id=2 on=leaf1\n"},
           {9,
            "at 900 expect checkpointing id=2\nat 900 expect pending id=3 wait=Preempting\n"
            "at 900 expect pending id=4 wait=Resources\n"},
           {11,
            "at 950 expect pending id=2 wait=Priority\nat 950 expect running id=3 on=leaf1\n"
            "at 950 expect pending id=4 start=10000\n"},
           {12, "at 950 expect refused\n"},
           {14, "at 1000 expect completed id=1\nat 1000 expect pending id=4 start=1550\n"},
       }) {
    auto s = RunWith(after, lines);
    ASSERT_TRUE(s) << lines << s.error().ToString();
    EXPECT_EQ(*s, *plain);
  }
}

// A failing expectation fails the run, naming file:line, the expectation and what was seen.
TEST(ScenarioExpect, FailingExpectationsNameLineExpectationAndWhatWasSeen) {
  struct Case {
    int after;
    std::string line;
    std::string saw;  // the message after "saw: "
  };
  const std::vector<Case> cases = {
      {14, "expect start id=3 at=900", "t=950 start job=3 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)"},
      {14, "expect start id=3 on=leaf0", "t=950 start job=3 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)"},
      {14, "expect start id=3 gpus=8", "t=950 start job=3 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)"},
      {14, "expect start id=3 at<=949", "t=950 start job=3 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)"},
      {14, "expect start id=3 at>=951", "t=950 start job=3 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)"},
      {14, "expect start id=4", "no start decision for job 4"},
      {14, "expect checkpoint id=2 for=4", "t=900 checkpoint job=2 deadline=1000 (preempt for job 3)"},
      {14, "expect preempt id=1", "no preempt decision for job 1"},
      {14, "expect resize id=2", "no resize decision for job 2"},
      {14, "expect kill id=1", "no kill decision for job 1"},
      {14, "expect no-preempt id=2 at=950", "t=950 preempt job=2 requeue (preempted for job 3 after checkpoint)"},
      {14, "expect no-start id=3 before=1000", "t=950 start job=3 gpus=node2:0-7,node3:0-7 (busbw 360.0 GB/s)"},
      {14, "expect start id=1 times=2", "1 matching; t=0 start job=1 gpus=node0:0-7,node1:0-7 (busbw 360.0 GB/s)"},
      {14, "expect start id=9", "no job 9 (never submitted, or its submit was refused)"},
      {14, "expect no-start id=5", "no job 5 (never submitted, or its submit was refused)"},
      {6, "at 0 expect pending id=1", "job 1 running on node0:0-7,node1:0-7 (16 GPUs) (its state differs)"},
      {6, "at 0 expect running id=2 on=leaf0",
       "job 2 running on node2:0-7,node3:0-7 (16 GPUs) (where it runs differs)"},
      {6, "at 0 expect running id=2 gpus=8", "job 2 running on node2:0-7,node3:0-7 (16 GPUs) (its GPU count differs)"},
      {9, "at 900 expect pending id=4 wait=TopologyBlock",
       "job 4 pending, wait Resources start=10000 (its wait reason differs)"},
      {11, "at 950 expect pending id=4 start=1000",
       "job 4 pending, wait Resources start=10000 (its predicted start differs)"},
      {11, "at 950 expect running id=7", "no job 7 (never submitted, or its submit was refused)"},
      {11, "at 950 expect refused", "the event at t.scn:11 was accepted"},
  };
  for (const Case& c : cases) {
    auto r = RunWith(c.after, c.line + "\n");
    ASSERT_FALSE(r) << c.line;
    EXPECT_EQ(r.error().where, "t.scn:" + std::to_string(c.after + 1)) << c.line;
    EXPECT_EQ(r.error().message, "expectation failed: '" + c.line + "'; saw: " + c.saw);
  }
}

TEST(ScenarioExpect, TheFirstFailingWholeRunExpectationIsReported) {
  auto r = RunWith(14, "expect start id=1\nexpect start id=4\nexpect start id=2 at=5\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where, "t.scn:16");
}

// A bad expect line is a parse error naming file:line, whether or not the run would get there.
TEST(ScenarioExpect, BadLinesAreParseErrorsWithFileAndLine) {
  struct Case {
    int after;
    std::string line;
    std::string message;  // a part of it
  };
  const std::vector<Case> cases = {
      {14, "expect", "usage: expect KIND id=N"},
      {14, "expect started id=1", "unknown expectation 'expect started'"},
      {14, "expect running id=1", "'running' is a job state, checked at a time: write 'at T expect running id=N'"},
      {14, "expect wait id=1", "unknown expectation 'expect wait'"},
      {14, "expect start", "id=N is required"},
      {14, "expect start id=x", "id: 'x' is not an integer"},
      {14, "expect start id=0", "id must be positive"},
      {14, "expect start id=1 at<1000", "'at<1000' is not KEY=VALUE"},
      {14, "expect start id=1 at=5 at=6", "'at=' given twice"},
      {14, "expect start id=1 at>=10 at<=5", "the time filters leave no time"},
      {14, "expect start id=1 before=-9223372036854775808", "the time filters leave no time"},
      {14, "expect start id=1 on=leaf9", "on=leaf9: no such domain or node"},
      {14, "expect start id=1 for=2", "'for=' does not apply to 'start'"},
      {14, "expect kill id=1 gpus=8", "'gpus=' does not apply to 'kill'"},
      {14, "expect no-start id=1 times=1", "'times=' does not apply to 'no-start'"},
      {14, "expect start id=1 times=0", "times= must be at least 1 (write no-start for none)"},
      {14, "expect start id=1 wait=Held", "'wait=' does not apply to 'start'"},
      {14, "expect start id=1 colour=red", "unknown field 'colour'"},
      {6, "at 0 expect start id=1",
       "'start' is a decision, checked over the whole run: write 'expect start id=N at=T'"},
      {6, "at 0 expect no-kill id=1", "'no-kill' is a decision"},
      {6, "at 0 expect asleep id=1", "unknown expectation 'at T expect asleep'"},
      {6, "at 0 expect running id=1 at=0", "'at=' does not apply to 'running'"},
      {6, "at 0 expect pending id=1 on=leaf0", "'on=' does not apply to 'pending'"},
      {6, "at 0 expect pending id=1 wait=Sleepy", "wait=Sleepy: not a wait reason"},
      {6, "at 0 expect running id=1 start=5", "'start=' does not apply to 'running'"},
      {6, "at 0 expect refused id=1", "usage: at T expect refused (nothing after it)"},
      {6, "at 5 expect running id=1",
       "the last event was at 0; the check sees the state those lines left, so write 'at 0 expect'"},
      {2, "at 0 expect running id=1", "'at T expect' needs an event before it"},
      {0, "expect start id=1", "'topology' must come before the first 'expect'"},
  };
  for (const Case& c : cases) {
    auto r = c.after == 0 ? RunScenario(c.line + "\n" + kScript, "t.scn") : RunWith(c.after, c.line + "\n");
    ASSERT_FALSE(r) << c.line;
    EXPECT_EQ(r.error().where, "t.scn:" + std::to_string(c.after + 1)) << c.line;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << c.line << "\n" << r.error().message;
  }
}

// ---- PHALANX_UPDATE_GOLDEN -------------------------------------------------------------------

// Sets an environment variable for the scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A scenario in a scratch directory, with a stale .expected file. EXPECT_FATAL_FAILURE takes no
// local variables, hence the static path.
fs::path g_scn;
bool g_rewrote = false;

class GoldenUpdate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("phalanx-golden-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    g_scn = dir_ / "s.scn";
    expected_ = dir_ / "s.expected";
    std::ofstream(expected_) << "stale\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  void WriteScenario(const std::string& expect_line) {
    std::ofstream(g_scn) << "topology gen:demo\nat 0 submit id=1 gpus=8 time=100\nat 0 schedule\n"
                         << expect_line << "\n";
  }

  fs::path dir_, expected_;
};

TEST_F(GoldenUpdate, RewritesOutsideCiWhenTheExpectationsHold) {
  WriteScenario("expect start id=1 at=0");
  ScopedEnv ci("CI", nullptr), update("PHALANX_UPDATE_GOLDEN", "1");
  bool rewrote = false;
  CheckGolden(g_scn, &rewrote);
  EXPECT_TRUE(rewrote);
  EXPECT_EQ(Read(expected_), "t=0 start job=1 gpus=node0:0-7 (busbw 360.0 GB/s)\nfinal: 1=running[8]\n");
}

TEST_F(GoldenUpdate, FailsWithoutRewritingWhenAnExpectationFails) {
  WriteScenario("expect start id=1 at=5");
  ScopedEnv ci("CI", nullptr), update("PHALANX_UPDATE_GOLDEN", "1");
  EXPECT_FATAL_FAILURE(CheckGolden(g_scn, &g_rewrote), "s.scn:4: expectation failed: 'expect start id=1 at=5'");
  EXPECT_EQ(Read(expected_), "stale\n");
}

TEST_F(GoldenUpdate, FailsWithoutRewritingInCi) {
  WriteScenario("expect start id=1 at=0");
  ScopedEnv ci("CI", "true"), update("PHALANX_UPDATE_GOLDEN", "1");
  EXPECT_FATAL_FAILURE(CheckGolden(g_scn, &g_rewrote), "golden files are never rewritten in CI");
  EXPECT_EQ(Read(expected_), "stale\n");
}

TEST_F(GoldenUpdate, ComparesInCiWithoutTheVariable) {
  WriteScenario("expect start id=1 at=0");
  ScopedEnv ci("CI", "true"), update("PHALANX_UPDATE_GOLDEN", nullptr);
  EXPECT_NONFATAL_FAILURE(CheckGolden(g_scn, &g_rewrote), "scenario \"s.scn\"");
  EXPECT_EQ(Read(expected_), "stale\n");
}

}  // namespace
}  // namespace phalanx
