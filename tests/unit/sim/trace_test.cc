// Trace readers: the shared CSV format and Slurm sacct --parsable2; errors name file:line.
#include "sim/trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace phalanx {
namespace {

std::string TraceFixture(const std::string& name) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/traces/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TraceCsv, ReadsColumnsByNameAndSortsBySubmit) {
  auto t = ReadTraceCsv("gpus,job_id,duration_s,submit_s\n4,b,10,50\n8,a,20,30\n", "x.csv");
  ASSERT_TRUE(t) << t.error().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, "a");
  EXPECT_EQ(t->jobs[0].submit, 0);  // rebased on the earliest submit
  EXPECT_EQ(t->jobs[1].submit, 20);
  EXPECT_EQ(t->jobs[1].gpus, 4u);
  EXPECT_EQ(t->jobs[0].user, "NA");
  EXPECT_EQ(t->jobs[0].line, 3);
}

TEST(TraceCsv, ReadsTheShippedFormatWithCrlf) {
  auto t = ReadTraceCsv("job_id,submit_s,gpus,duration_s,user,status\r\nx,0,1,5,u,completed\r\n", "x.csv");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->jobs[0].status, "COMPLETED");
  EXPECT_EQ(t->jobs[0].user, "u");
}

TEST(TraceCsv, ErrorsNameFileAndLine) {
  auto bad = ReadTraceCsv(TraceFixture("bad_gpus.csv"), "bad_gpus.csv");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(), "bad_gpus.csv:4: gpus: 'eight' is not a whole number");
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"job_id,submit_s,gpus\n", "t.csv:1: header has no 'duration_s' column (need job_id,submit_s,gpus,duration_s)"},
      {"job_id,submit_s,gpus,duration_s\na,0,1\n", "t.csv:2: 3 fields, the header has 4"},
      {"job_id,submit_s,gpus,duration_s\na,0,0,5\n", "t.csv:2: job 'a' asks for 0 GPUs"},
      {"job_id,submit_s,gpus,duration_s\na,0,1,-5\n", "t.csv:2: job 'a' has a negative duration"},
      {"job_id,submit_s,gpus,duration_s\na,-1,1,5\n", "t.csv:2: submit_s: '-1' is not a whole number >= 0"},
      {"job_id,submit_s,gpus,duration_s\na,0,1,5\na,1,1,5\n", "t.csv:3: duplicate job id 'a'"},
      {"job_id,submit_s,gpus,duration_s\n,0,1,5\n", "t.csv:2: empty job_id"},
      {"", "t.csv: empty trace (no header line)"},
  };
  for (const Case& c : cases) {
    auto r = ReadTraceCsv(c.text, "t.csv");
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().ToString(), c.error);
  }
}

TEST(Sacct, SkipsStepsAndJobsWithoutGpusOrRun) {
  auto t = ReadTrace(TraceFixture("sacct.txt"), "sacct.txt");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->skipped_steps, 2u);
  EXPECT_EQ(t->skipped_no_gpu, 2u);  // 1003 (also never ran) and 1004
  ASSERT_EQ(t->jobs.size(), 3u);
  // Sorted by submit: 1002_3 (09:59), 1001 (10:00), 1005 (10:03).
  EXPECT_EQ(t->jobs[0].id, "1002_3");
  EXPECT_EQ(t->jobs[0].gpus, 4u);  // typed gres summed
  EXPECT_EQ(t->jobs[0].duration, 86400);
  EXPECT_EQ(t->jobs[0].timelimit, 36 * 3600);
  EXPECT_EQ(t->jobs[0].status, "FAILED");
  EXPECT_EQ(t->jobs[1].id, "1001");
  EXPECT_EQ(t->jobs[1].submit, 60);
  EXPECT_EQ(t->jobs[1].gpus, 8u);
  EXPECT_EQ(t->jobs[1].duration, 3600);
  EXPECT_EQ(t->jobs[1].timelimit, 7200);
  EXPECT_EQ(t->jobs[1].user, "alice");
  EXPECT_EQ(t->jobs[2].timelimit, 600);
  EXPECT_EQ(t->jobs[2].line, 8);
}

TEST(Sacct, ElapsedInsteadOfEndAndReqTres) {
  auto t = ReadSacct(
      "JobID|Submit|Start|Elapsed|ReqTRES|State\n5|2024-01-01T00:00:00|2024-01-01T00:00:10|1-00:00:30|gres/"
      "gpu=2|COMPLETED\n",
      "s.txt");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->jobs[0].duration, 86430);
  EXPECT_EQ(t->jobs[0].gpus, 2u);
}

// Regression: D-HH with 0 days ("0-05") is 5 hours, as sbatch reads it, not 5 minutes.
TEST(Sacct, DayHourDurationsAreHours) {
  auto t = ReadSacct(
      "JobID|Submit|Start|Elapsed|AllocTRES|Timelimit\n"
      "7|2024-01-01T00:00:00|2024-01-01T00:00:00|0-05|gres/gpu=1|0-06:30\n",
      "s.txt");
  ASSERT_TRUE(t) << t.error().ToString();
  EXPECT_EQ(t->jobs[0].duration, 5 * 3600);
  EXPECT_EQ(t->jobs[0].timelimit, 6 * 3600 + 30 * 60);
  auto bad = ReadSacct(
      "JobID|Submit|Start|Elapsed|AllocTRES\n7|2024-01-01T00:00:00|2024-01-01T00:00:00|1-24|gres/gpu=1\n", "b.txt");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(),
            "b.txt:2: Elapsed: '1-24' is not a Slurm duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)");
}

TEST(Sacct, ErrorsNameFileAndLine) {
  auto t = ReadTrace(TraceFixture("bad_time.sacct"), "bad_time.sacct");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().ToString(), "bad_time.sacct:3: Submit: '2024-03-01 10:00' is not a time YYYY-MM-DDTHH:MM:SS");
  auto h = ReadSacct("JobID|Submit|End|AllocTRES\n", "h.txt");
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().where, "h.txt:1");
  auto f = ReadSacct("JobID|Submit|Start|End|AllocTRES\n1|2024-01-01T00:00:00|x\n", "f.txt");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().ToString(), "f.txt:2: 3 fields, the header has 5");
  auto g = ReadSacct(
      "JobID|Submit|Start|End|AllocTRES\n1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T00:00:09|gres/gpu=x\n",
      "g.txt");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().ToString(), "g.txt:2: AllocTRES: 'gres/gpu=x': GPU count is not a whole number");
}

TEST(Sacct, TimesAndDurations) {
  EXPECT_EQ(*ParseIsoTime("1970-01-01T00:00:00"), 0);
  EXPECT_EQ(*ParseIsoTime("2000-03-01T00:00:01"), 951868801);
  EXPECT_EQ(*ParseIsoTime("2024-02-29T23:59:59"), 1709251199);
  EXPECT_FALSE(ParseIsoTime("2024-13-01T00:00:00"));
  EXPECT_FALSE(ParseIsoTime("Unknown"));
  EXPECT_EQ(*ParseSacctDuration("01:02:03"), 3723);
  EXPECT_EQ(*ParseSacctDuration("2-01:00:00"), 2 * 86400 + 3600);
  EXPECT_EQ(*ParseSacctDuration("2-05"), 2 * 86400 + 5 * 3600);
  EXPECT_EQ(*ParseSacctDuration("0-05"), 5 * 3600);  // D-HH: hours, also with 0 days (was read as minutes)
  EXPECT_EQ(*ParseSacctDuration("30:00"), 1800);
  EXPECT_EQ(*ParseSacctDuration("45"), 45 * 60);
  EXPECT_EQ(*ParseSacctDuration(" 00:10:00 "), 600);
  EXPECT_EQ(*ParseSacctDuration("00:00:07.123"), 7);
  EXPECT_EQ(*ParseSacctDuration("UNLIMITED"), 0);
  EXPECT_EQ(*ParseSacctDuration("Partition_Limit"), 0);
  EXPECT_EQ(*ParseSacctDuration(""), 0);
  EXPECT_FALSE(ParseSacctDuration("1:2:3:4"));
  EXPECT_FALSE(ParseSacctDuration("ab:cd"));
}

TEST(TraceTransforms, WindowAndScale) {
  auto t = ReadTraceCsv("job_id,submit_s,gpus,duration_s\na,0,1,5\nb,100,1,5\nc,250,1,5\n", "t.csv");
  ASSERT_TRUE(t);
  const Trace w = WindowTrace(*t, 100, 250);
  ASSERT_EQ(w.jobs.size(), 1u);
  EXPECT_EQ(w.jobs[0].id, "b");
  EXPECT_EQ(w.jobs[0].submit, 0);
  const Trace s = ScaleArrivals(*t, 2.0);
  EXPECT_EQ(s.jobs[2].submit, 125);
  EXPECT_EQ(s.jobs[2].duration, 5);
}

TEST(TraceStatus, Failures) {
  EXPECT_TRUE(StatusIsFailure("FAILED"));
  EXPECT_TRUE(StatusIsFailure("cancelled"));
  EXPECT_TRUE(StatusIsFailure("NODE_FAIL"));
  EXPECT_FALSE(StatusIsFailure("COMPLETED"));
  EXPECT_FALSE(StatusIsFailure("NA"));
}

}  // namespace
}  // namespace phalanx
