#include "job_table.h"

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace phalanx::cli {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kTableNow = 1700000000;  // 2023-11-14T22:13:20Z

// A fixed queue: one running job, pending jobs with every kind of reason, a finished one.
constexpr const char* kJobs = R"pb(
  jobs {
    id: 41
    user: "ada"
    state: JOB_STATE_RUNNING
    nodelist: "dgx[01-02]"
    spec { name: "llama-70b" account: "ml" priority_class: "high" gpus: 8 walltime_s: 7200 }
    start_time: 1699996277
    walltime_s: 7200
    busbw_gbs: 360.46
    priority: 12345.6
    gpus { node: "dgx01" index: 0 }
    gpus { node: "dgx01" index: 1 }
    gpus { node: "dgx01" index: 2 }
    gpus { node: "dgx01" index: 3 }
    gpus { node: "dgx02" index: 4 }
    gpus { node: "dgx02" index: 5 }
    gpus { node: "dgx02" index: 6 }
    gpus { node: "dgx02" index: 7 }
  }
  jobs {
    id: 42
    user: "bob"
    state: JOB_STATE_PENDING
    reason: "Resources"
    predicted_start: 1700001800
    spec { name: "bert" gpus: 8 walltime_s: 3600 }
    walltime_s: 3600
    priority: 900
  }
  jobs {
    id: 43
    user: "cy"
    state: JOB_STATE_PENDING
    reason: "TopologyBlock"
    reason_detail: "leaf"
    spec { name: "moe" gpus: 32 nodes: 4 gpus_per_node: 8 topology: TOPOLOGY_LEVEL_LEAF }
  }
  jobs {
    id: 44
    user: "ada"
    state: JOB_STATE_PENDING
    reason: "ReservedFor"
    reason_detail: "job 41"
    spec { name: "elastic" gpus: 64 min_gpus: 8 walltime_s: 86400 after_ok: 41 }
    walltime_s: 86400
  }
  jobs {
    id: 45
    user: "bob"
    state: JOB_STATE_PENDING
    held: true
    spec { name: "held" gpus: 2 walltime_s: 600 }
    walltime_s: 600
  }
  jobs {
    id: 46
    user: "cy"
    state: JOB_STATE_PENDING
    reason: "Priority"
    spec { name: "small" gpus: 1 walltime_s: 90 }
    walltime_s: 90
  }
  jobs {
    id: 7
    user: "ada"
    state: JOB_STATE_COMPLETED
    nodelist: "dgx03"
    spec { name: "done" gpus: 8 }
    start_time: 1699990000
    end_time: 1699993600
    walltime_s: 7200
    gpus { node: "dgx03" index: 0 }
  }
)pb";

class JobTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void SetUp() override {
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kJobs, &response_));
    jobs_.assign(response_.jobs().begin(), response_.jobs().end());
  }
  std::string Table(std::string_view format, bool header = true) {
    auto f = ParseJobFormat(format);
    EXPECT_TRUE(f.has_value()) << f.error().ToString();
    return FormatJobTable(jobs_, f.value_or(std::vector<JobField>{}), kTableNow, header);
  }
  const v1::Job& Job(uint64_t id) {
    for (const v1::Job& j : jobs_) {
      if (j.id() == id) return j;
    }
    static v1::Job none;
    return none;
  }

  v1::ListJobsResponse response_;
  std::vector<v1::Job> jobs_;
};

TEST_F(JobTable, DefaultTableExactText) {
  EXPECT_EQ(
      Table(kDefaultJobFormat),
      "JOBID  PARTITION  NAME       USER  STATE      GPUS  NODES     TIME   TIME_LEFT  START                "
      "NODELIST(REASON)\n"
      "   41  -          llama-70b  ada   RUNNING       8      2  1:02:03       57:57  2023-11-14T21:11:17  "
      "dgx[01-02]\n"
      "   42  -          bert       bob   PENDING       8      -     0:00     1:00:00  2023-11-14T22:43:20  "
      "(Resources)\n"
      "   43  -          moe        cy    PENDING      32      4     0:00         N/A  N/A                  "
      "(TopologyBlock: "
      "leaf)\n"
      "   44  -          elastic    ada   PENDING    8:64      -     0:00  1-00:00:00  N/A                  "
      "(ReservedFor job 41)\n"
      "   45  -          held       bob   PENDING       2      -     0:00       10:00  N/A                  (Held)\n"
      "   46  -          small      cy    PENDING       1      -     0:00        1:30  N/A                  "
      "(Priority)\n"
      "    7  -          done       ada   COMPLETED     1      1  1:00:00           -  2023-11-14T19:26:40  dgx03\n");
}

TEST_F(JobTable, LongTableHasPlacementBandwidthAndPriority) {
  const std::string t = Table(kLongJobFormat);
  EXPECT_THAT(t, HasSubstr("JOBID  PARTITION  NAME       USER  ACCOUNT  CLASS  PRIORITY  STATE"));
  EXPECT_THAT(t, HasSubstr("BUSBW  NODELIST(REASON)       PLACEMENT\n"));
  EXPECT_THAT(t, HasSubstr("   41  -          llama-70b  ada   ml       high      12346  RUNNING"));
  EXPECT_THAT(t, HasSubstr("360.5  dgx[01-02]             dgx01:0-3,dgx02:4-7\n"));
  EXPECT_THAT(t, HasSubstr("    -  (TopologyBlock: leaf)  -\n"));
}

TEST_F(JobTable, SlurmFormatStrings) {
  // The brief's example format: fields as wide as their values, one blank apart.
  const std::string t = Table("%i %j %u %T %G %N %R %S", /*header=*/false);
  EXPECT_EQ(t.substr(0, t.find("42 bert")),
            "41 llama-70b ada RUNNING   8    dgx[01-02] dgx[01-02]            2023-11-14T21:11:17\n");
  EXPECT_THAT(t, HasSubstr("\n43 moe       cy  PENDING   32              (TopologyBlock: leaf) N/A\n"));
  // Widths pad and truncate; "." right-justifies; "%%" is a percent sign.
  // A cut value ends in '+' (squeue cuts silently; the mark says it goes on).
  EXPECT_EQ(Table("%.5i|%4j|%.6j|%t%%", false).substr(0, 44),
            "   41|lla+|llama+|R %\n"
            "   42|bert|  bert|PD%\n");
  // Without a width a field is as wide as its widest value; trailing blanks are dropped.
  EXPECT_EQ(Table("%i:%l", false).substr(0, 22), "41:2:00:00\n42:1:00:00\n");
  EXPECT_THAT(Table("%i %E", false), HasSubstr("44 afterok:41\n"));
  EXPECT_THAT(Table("%.i %r", false), HasSubstr("45 Held\n"));
}

// Issue 12 / 14: names from raw gRPC clients (older daemons accepted anything) and Unicode names.
// Golden text: every column starts at the same terminal column on every line; no control byte of
// a name reaches the terminal; a NUL does not end the output (it hid 12 pending jobs).
TEST(JobTableUnicode, WideCombiningAndHostileNamesStayAligned) {
  std::vector<v1::Job> jobs;
  const std::vector<std::string> names = {"训练-llama",   "cafe\xcc\x81",         "\xf0\x9f\x9a\x80rocket",
                                          "a\nb\x1b[31m", std::string("x\0y", 3), "bad\xff",
                                          "ｆｕｌｌ"};
  const std::vector<std::string> users = {"ada", "李", "bob", "eve", "eve", "eve", "ada"};
  for (size_t i = 0; i < names.size(); ++i) {
    v1::Job j;
    j.set_id(100 + i);
    j.set_user(users[i]);
    j.set_state(v1::JOB_STATE_PENDING);
    j.mutable_spec()->set_name(names[i]);
    j.mutable_spec()->set_gpus(8);
    jobs.push_back(j);
  }
  auto f = ParseJobFormat("%.i  %j  %u  %.G");
  ASSERT_TRUE(f);
  const std::string t = FormatJobTable(jobs, *f, kTableNow);
  EXPECT_EQ(t,
            "JOBID  NAME          USER  GPUS\n"
            "  100  训练-llama    ada      8\n"
            "  101  cafe\xcc\x81          李       8\n"
            "  102  \xf0\x9f\x9a\x80rocket      bob      8\n"
            "  103  a\\nb\\x1b[31m  eve      8\n"
            "  104  x\\x00y        eve      8\n"
            "  105  bad\xef\xbf\xbd          eve      8\n"
            "  106  ｆｕｌｌ      ada      8\n");
  for (char c : t) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f)) << "byte " << int(u);
  }
  // Truncation by columns, at character boundaries, with the mark.
  auto narrow = ParseJobFormat("%.i|%7j|");
  ASSERT_TRUE(narrow);
  const std::string cut = FormatJobTable(jobs, *narrow, kTableNow, false);
  EXPECT_EQ(cut.substr(0, cut.find("103|")),
            "100|训练-l+|\n"
            "101|cafe\xcc\x81   |\n"
            "102|\xf0\x9f\x9a\x80rock+|\n");
}

TEST_F(JobTable, FormatErrors) {
  EXPECT_EQ(ParseJobFormat("%i %y").error().message, "'%y' is not a field (see gq --help)");
  EXPECT_EQ(ParseJobFormat("%i %").error().message, "'%' at the end names no field");
  EXPECT_EQ(ParseJobFormat("%.10").error().message, "'%.10' at the end names no field");
  EXPECT_EQ(ParseJobFormat("%0i").error().message, "'%0': width '0' is out of range 1..1000");
}

TEST_F(JobTable, TimeColumns) {
  // Running: TIME counts up from the start, TIME_LEFT counts down to the walltime.
  EXPECT_EQ(JobFieldValue(Job(41), 'M', kTableNow), "1:02:03");
  EXPECT_EQ(JobFieldValue(Job(41), 'L', kTableNow), "57:57");
  EXPECT_EQ(JobFieldValue(Job(41), 'L', kTableNow + 7200), "0:00");  // overdue: never negative
  EXPECT_EQ(JobFieldValue(Job(41), 'S', kTableNow), "2023-11-14T21:11:17");
  // Pending: no run time, the limit as time left, the predicted start.
  EXPECT_EQ(JobFieldValue(Job(42), 'M', kTableNow), "0:00");
  EXPECT_EQ(JobFieldValue(Job(42), 'L', kTableNow), "1:00:00");
  EXPECT_EQ(JobFieldValue(Job(42), 'S', kTableNow), "2023-11-14T22:43:20");
  EXPECT_EQ(JobFieldValue(Job(43), 'S', kTableNow), "N/A");
  // Finished: the run time from start to end.
  EXPECT_EQ(JobFieldValue(Job(7), 'M', kTableNow), "1:00:00");
  EXPECT_EQ(JobFieldValue(Job(7), 'e', kTableNow), "2023-11-14T20:26:40");
}

TEST_F(JobTable, SortRunningThenPendingByPriorityThenFinished) {
  std::vector<v1::Job> jobs(jobs_.rbegin(), jobs_.rend());  // 7 46 45 44 43 42 41
  jobs[1].set_priority(5000);                               // 46 jumps the pending queue
  SortJobs(jobs);
  std::vector<uint64_t> ids;
  for (const v1::Job& j : jobs) ids.push_back(j.id());
  EXPECT_EQ(ids, (std::vector<uint64_t>{41, 46, 42, 43, 44, 45, 7}));
}

TEST(JobReason, SlurmStyle) {
  EXPECT_EQ(ReasonText("Resources", ""), "(Resources)");
  EXPECT_EQ(ReasonText("Priority", ""), "(Priority)");
  EXPECT_EQ(ReasonText("TopologyBlock", "leaf"), "(TopologyBlock: leaf)");
  EXPECT_EQ(ReasonText("ReservedFor", "job 12"), "(ReservedFor job 12)");
  EXPECT_EQ(ReasonText("Dependency", "afterok:7"), "(Dependency: afterok:7)");
  EXPECT_EQ(ReasonText("", "", /*held=*/true), "(Held)");
  EXPECT_EQ(ReasonText("", ""), "(None)");
}

TEST(JobState, NamesAndShortForms) {
  EXPECT_EQ(ParseState("pending").value(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(ParseState("PD").value(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(ParseState("r").value(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(ParseState("CK").value(), v1::JOB_STATE_CHECKPOINTING);
  EXPECT_EQ(ParseState("cancelled").value(), v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(ParseState("zombie").error().message, HasSubstr("'zombie' is not a job state"));
  EXPECT_TRUE(IsFinished(v1::JOB_STATE_KILLED));
  EXPECT_FALSE(IsFinished(v1::JOB_STATE_CHECKPOINTING));
}

TEST(GpuRefs, GroupedByNode) {
  v1::Job job;
  for (auto [node, index] : std::vector<std::pair<const char*, uint32_t>>{
           {"b", 5}, {"b", 4}, {"a", 0}, {"b", 0}, {"a", 1}, {"b", 1}, {"a", 3}}) {
    v1::GpuRef* g = job.add_gpus();
    g->set_node(node);
    g->set_index(index);
  }
  EXPECT_EQ(FormatGpuRefs(job.gpus()), "b:0-1+4-5,a:0-1+3");
  EXPECT_EQ(FormatGpuRefs(v1::Job().gpus()), "-");
}

}  // namespace
}  // namespace phalanx::cli

namespace phalanx::cli {
namespace {

// Slurm mode: a job Slurm schedules itself (Job.slurm set, id 0) reads slurm:ID, Slurm's state,
// its nodes and GPUs, and the time to Slurm's expected end.
TEST(SlurmJobRows, MarkedWithSlurmsStateNodesAndTimeLeft) {
  setenv("TZ", "UTC", 1);
  tzset();
  v1::ListJobsResponse r;
  ASSERT_TRUE(
      google::protobuf::TextFormat::ParseFromString(R"pb(
                                                      jobs {
                                                        user: "alice"
                                                        state: JOB_STATE_RUNNING
                                                        nodelist: "n[1-2]"
                                                        partition: "gpu"
                                                        spec { name: "plain" gpus: 12 nodes: 2 walltime_s: 3600 }
                                                        start_time: 1699999000
                                                        end_time: 1700002600
                                                        walltime_s: 3600
                                                        slurm_job_id: 17
                                                        slurm {
                                                          job_id: 17
                                                          state: "COMPLETING"
                                                          nodes { node: "n1" gpus: 8 }
                                                          nodes { node: "n2" gpus: 4 }
                                                        }
                                                      }
                                                      jobs {
                                                        id: 5
                                                        user: "bob"
                                                        state: JOB_STATE_PENDING
                                                        spec { name: "phx" gpus: 8 walltime_s: 600 }
                                                        walltime_s: 600
                                                        slurm_job_id: 18
                                                        reason: "Resources"
                                                      }
                                                    )pb",
                                                    &r));
  std::vector<v1::Job> jobs(r.jobs().begin(), r.jobs().end());
  auto f = ParseJobFormat(kDefaultJobFormat);
  ASSERT_TRUE(f);
  EXPECT_EQ(FormatJobTable(jobs, *f, kTableNow),
            "   JOBID  PARTITION  NAME   USER   STATE       GPUS  NODES   TIME  TIME_LEFT  START                "
            "NODELIST(REASON)\n"
            "slurm:17  gpu        plain  alice  COMPLETING    12      2  16:40      43:20  2023-11-14T21:56:40  "
            "n[1-2]\n"
            "       5  -          phx    bob    PENDING        8      -   0:00      10:00  N/A                  "
            "(Resources)\n");
}

}  // namespace
}  // namespace phalanx::cli
