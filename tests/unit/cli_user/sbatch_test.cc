// sbatch habits in gsub: #SBATCH lines (the leading block only, #PHX over #SBATCH, the command
// line over both, unsupported options warned about or refused naming file:line), and the
// Slurm options' values (--gres, -c, --mem, -n, --begin, -w, -x, -C, --signal, --requeue,
// --open-mode, --mail-*).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>

#include "job_spec_check.h"
#include "slurm_values.h"
#include "submit_options.h"

namespace phalanx::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 2026-12-01 17:30:00 UTC, a Tuesday.
constexpr int64_t kSbatchNow = 1796146200;

BeginClock UtcClock(int64_t now = kSbatchNow) {
  BeginClock c;
  c.now = now;
  c.to_local = [](int64_t t) {
    const std::time_t tt = static_cast<std::time_t>(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    return tm;
  };
  c.from_local = [](std::tm tm) { return static_cast<int64_t>(timegm(&tm)); };
  return c;
}

SubmitContext SbatchContext(std::map<std::string, std::string> files = {}) {
  SubmitContext c{"/home/ada/work", {{"HOME", "/home/ada"}}, [files](const std::string& path) -> Result<std::string> {
                    auto it = files.find(path);
                    if (it == files.end()) return Fail(path, "cannot open the script");
                    return it->second;
                  }};
  c.hostname = "login1";
  c.clock = UtcClock();
  return c;
}

Result<SubmitPlan> SbatchPlan(std::vector<std::string> args, std::map<std::string, std::string> files = {}) {
  PHX_ASSIGN_OR_RETURN(auto o, ParseSubmitArgs(args));
  return PlanSubmit(o, SbatchContext(std::move(files)));
}

std::string SbatchPlanError(std::vector<std::string> args, std::map<std::string, std::string> files = {}) {
  auto p = SbatchPlan(std::move(args), std::move(files));
  return p.has_value() ? "(no error)" : p.error().ToString();
}

// ---- #SBATCH --------------------------------------------------------------------------------

TEST(Sbatch, TheIssuesScriptRunsOnTwoGpusUnderItsNameAndOutput) {
  auto p = SbatchPlan({"job.sh"}, {{"job.sh", "#!/bin/bash\n#SBATCH --gpus=2 -J x -o x-%j.out\nsrun hostname\n"}});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->spec.gpus(), 2u);
  EXPECT_EQ(p->spec.name(), "x");
  EXPECT_EQ(p->spec.stdout_pattern(), "x-%j.out");
  EXPECT_TRUE(p->warnings.empty());
}

TEST(Sbatch, PhxOverSbatchWhateverTheOrderAndTheCommandLineOverBoth) {
  const std::string script =
      "#!/bin/sh\n"
      "#PHX -J phx -t 10\n"
      "#SBATCH -J sbatch -t 20 -o out-%j\n"
      "#SBATCH --gres=gpu:4\n"
      "echo go\n";
  auto p = SbatchPlan({"job.sh"}, {{"job.sh", script}});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->spec.name(), "phx");               // #PHX wins, though it comes first
  EXPECT_EQ(p->spec.walltime_s(), 600);           // #PHX -t 10
  EXPECT_EQ(p->spec.stdout_pattern(), "out-%j");  // only #SBATCH says it
  EXPECT_EQ(p->spec.gpus(), 4u);
  auto q = SbatchPlan({"-J", "cli", "-o", "cli.out", "job.sh"}, {{"job.sh", script}});
  ASSERT_TRUE(q) << q.error().ToString();
  EXPECT_EQ(q->spec.name(), "cli");
  EXPECT_EQ(q->spec.stdout_pattern(), "cli.out");
  EXPECT_EQ(q->spec.walltime_s(), 600);
}

TEST(Sbatch, OnlyTheLeadingCommentBlockIsRead) {
  const std::string script =
      "#!/bin/sh\n"
      "\n"
      "# a comment\n"
      "#SBATCH -G 2\n"
      "echo start\n"
      "#SBATCH -G 8\n"
      "#SBATCH --array=1-3\n";  // after a command: a comment, not refused
  auto p = SbatchPlan({"job.sh"}, {{"job.sh", script}});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->spec.gpus(), 2u);
  // "#SBATCHX" and "# SBATCH" are comments too (sbatch reads exactly "#SBATCH ").
  auto q = SbatchPlan({"job.sh"}, {{"job.sh", "#SBATCHX -G 4\n# SBATCH -G 4\ntrue\n"}});
  ASSERT_TRUE(q) << q.error().ToString();
  EXPECT_EQ(q->spec.gpus(), 1u);
}

TEST(Sbatch, UnsupportedOptionsWarnNamingTheLineOrAreRefused) {
  auto p = SbatchPlan({"job.sh"}, {{"job.sh",
                                    "#!/bin/sh\n#SBATCH -G 1\n#SBATCH --licenses=matlab:1 --qos high\n"
                                    "#SBATCH --frobnicate 3 -J ok\ntrue\n"}});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_THAT(p->warnings,
              ElementsAre("job.sh:3: #SBATCH --licenses: ignored: not supported by Phalanx: licenses are not counted",
                          "job.sh:4: #SBATCH --frobnicate: ignored: not an sbatch option gsub knows"));
  EXPECT_EQ(p->spec.name(), "ok");  // the value of an unknown option is skipped, what follows is read
  EXPECT_EQ(p->spec.priority_class(), "high") << "--qos is the class";
  // -p/--partition and -q are the partition and the class, as sbatch's.
  auto part = SbatchPlan({"job.sh"}, {{"job.sh", "#SBATCH -p debug,gpu -q low\ntrue\n"}});
  ASSERT_TRUE(part) << part.error().ToString();
  ASSERT_EQ(part->spec.partitions_size(), 2);
  EXPECT_EQ(part->spec.partitions(0), "debug");
  EXPECT_EQ(part->spec.partitions(1), "gpu");
  EXPECT_EQ(part->spec.priority_class(), "low");
  EXPECT_TRUE(part->warnings.empty());
  EXPECT_EQ(SbatchPlanError({"job.sh"}, {{"job.sh", "#!/bin/sh\n\n#SBATCH --deadline now+1hour\ntrue\n"}}),
            "job.sh:3: #SBATCH --deadline: not supported by Phalanx, and ignoring it would run the job wrongly: not "
            "enforced: the job could run after its deadline");
  auto array = SbatchPlan({"job.sh"}, {{"job.sh", "#!/bin/sh\n\n#SBATCH -a 0-9%2\ntrue\n"}});  // arrays are gsub's
  ASSERT_TRUE(array) << array.error().ToString();
  EXPECT_EQ(array->spec.array(), "0-9%2");
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH --reservation=maint\ntrue\n"}}),
              HasSubstr("job.sh:1: #SBATCH --reservation: not supported by Phalanx, and ignoring it"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH --gpus-per-task=1\ntrue\n"}}),
              HasSubstr("job.sh:1: #SBATCH --gpus-per-task: not supported"));
}

// On the command line an sbatch option gsub lacks is an error that says why. --test-only is
// gsub's (nothing is submitted), on the command line as in a script.
TEST(Sbatch, UnsupportedOptionsOnTheCommandLineSayWhy) {
  auto test_only = SbatchPlan({"--test-only", "job.sh"}, {{"job.sh", "true\n"}});
  ASSERT_TRUE(test_only) << test_only.error().ToString();
  EXPECT_TRUE(test_only->test_only);
  auto in_script = SbatchPlan({"job.sh"}, {{"job.sh", "#SBATCH --test-only\ntrue\n"}});
  ASSERT_TRUE(in_script) << in_script.error().ToString();
  EXPECT_TRUE(in_script->test_only);
  auto plain = SbatchPlan({"job.sh"}, {{"job.sh", "true\n"}});
  ASSERT_TRUE(plain) << plain.error().ToString();
  EXPECT_FALSE(plain->test_only);
  EXPECT_THAT(SbatchPlanError({"-M", "other", "job.sh"}),
              HasSubstr("-M: an sbatch option Phalanx does not support: Phalanx schedules one cluster"));
  EXPECT_EQ(SbatchPlanError({"--bogus", "job.sh"}), "unknown option '--bogus' (see --help)");
}

TEST(Sbatch, BadValuesNameTheFileAndLine) {
  EXPECT_EQ(SbatchPlanError({"job.sh"}, {{"job.sh", "#!/bin/sh\n#SBATCH --mem=lots\ntrue\n"}}),
            "job.sh:2: --mem: 'lots' is not a size (N[K|M|G|T], megabytes without a unit)");
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH -c\ntrue\n"}}),
              HasSubstr("job.sh:1: option '-c' needs a value"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH --begin=someday\ntrue\n"}}),
              HasSubstr("job.sh:1: --begin: 'someday' is not a time"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH -w node[1-\ntrue\n"}}), HasSubstr("job.sh:1: -w: "));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH -C 'h100 and a100'\ntrue\n"}}),
              HasSubstr("job.sh:1: -C: 'h100 and a100': a blank between two features"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH --gres=nic:1\ntrue\n"}}),
              HasSubstr("job.sh:1: --gres: 'nic:1': only gpu[:TYPE]:N is supported"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH 'unterminated\ntrue\n"}}),
              HasSubstr("job.sh:1: #SBATCH: unterminated ' quote"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH -G 2 stray\ntrue\n"}}),
              HasSubstr("job.sh:1: #SBATCH takes options only, not 'stray'"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH --open-mode=sometimes\ntrue\n"}}),
              HasSubstr("job.sh:1: --open-mode: 'sometimes' is not append or truncate"));
  EXPECT_THAT(SbatchPlanError({"job.sh"}, {{"job.sh", "#SBATCH --mail-type=WHENEVER\ntrue\n"}}),
              HasSubstr("--mail-type: 'WHENEVER' is not a mail type"));
}

// ---- the options' values -------------------------------------------------------------------

TEST(SlurmOptions, ResourcesAndRecordsGoIntoTheSpec) {
  auto p = SbatchPlan({"-c",
                       "6",
                       "--mem=64G",
                       "-n",
                       "16",
                       "--ntasks-per-node",
                       "8",
                       "-N",
                       "2",
                       "-G",
                       "16",
                       "-w",
                       "dgx[01-02]",
                       "-x",
                       "dgx03",
                       "-C",
                       "h100|a100",
                       "--signal=B:USR2@120",
                       "--no-requeue",
                       "--comment",
                       "tuning run",
                       "--open-mode=truncate",
                       "--mail-type=end,fail",
                       "--mail-user=ada@example.org",
                       "-W",
                       "--",
                       "train"});
  ASSERT_TRUE(p) << p.error().ToString();
  const v1::JobSpec& s = p->spec;
  EXPECT_EQ(s.cpus_per_task(), 6u);
  EXPECT_EQ(s.mem_per_node_mb(), 65536u);
  EXPECT_EQ(s.ntasks(), 16u);
  EXPECT_EQ(s.ntasks_per_node(), 8u);
  EXPECT_EQ(s.nodelist(), "dgx[01-02]");
  EXPECT_EQ(s.exclude(), "dgx03");
  EXPECT_EQ(s.constraint(), "h100|a100");
  EXPECT_EQ(s.checkpoint_signal(), SIGUSR2);
  EXPECT_EQ(s.checkpoint_warning_s(), 120);
  ASSERT_TRUE(s.has_requeue());
  EXPECT_FALSE(s.requeue());
  EXPECT_EQ(s.comment(), "tuning run");
  EXPECT_TRUE(s.submit_info().open_truncate());
  EXPECT_EQ(s.submit_info().mail_type(), "END,FAIL");
  EXPECT_EQ(s.submit_info().mail_user(), "ada@example.org");
  EXPECT_EQ(s.submit_info().submit_dir(), "/home/ada/work");
  EXPECT_EQ(s.submit_info().submit_host(), "login1");
  EXPECT_TRUE(p->wait);
}

TEST(SlurmOptions, GpuTypesBecomeConstraints) {
  auto gres = SbatchPlan({"--gres=gpu:a100:4", "--", "x"});
  ASSERT_TRUE(gres) << gres.error().ToString();
  EXPECT_EQ(gres->spec.gpus(), 4u);
  EXPECT_EQ(gres->spec.nodes(), 1u);
  EXPECT_EQ(gres->spec.constraint(), "a100");
  // Per node, as in Slurm: Accelerate's example asks for 4 nodes x --gres=gpu:4.
  auto nodes = SbatchPlan({"--nodes=4", "--gres=gpu:4", "--", "x"});
  ASSERT_TRUE(nodes) << nodes.error().ToString();
  EXPECT_EQ(nodes->spec.gpus(), 16u);
  EXPECT_EQ(nodes->spec.nodes(), 4u);
  EXPECT_EQ(nodes->spec.gpus_per_node(), 4u);
  auto total = SbatchPlan({"-G", "8", "--gres=gpu:4", "--", "x"});
  ASSERT_TRUE(total) << total.error().ToString();
  EXPECT_EQ(total->spec.nodes(), 2u);
  auto typed = SbatchPlan({"--gpus=h100:2", "-C", "nvlink|ib", "--", "x"});
  ASSERT_TRUE(typed) << typed.error().ToString();
  EXPECT_EQ(typed->spec.gpus(), 2u);
  EXPECT_EQ(typed->spec.constraint(), "nvlink&h100|ib&h100");
  EXPECT_EQ(SbatchPlan({"--gres=gpu:2", "--", "x"})->spec.gpus(), 2u);
  EXPECT_THAT(SbatchPlanError({"--gpus-per-node", "4", "--gres=gpu:2", "--", "x"}),
              HasSubstr("--gres: 'gpu:2' asks for other GPUs per node than --gpus-per-node 4"));
  EXPECT_EQ(SbatchPlanError({"--mem=1G", "--mem-per-gpu=1G", "--", "x"}),
            "--mem-per-gpu: give --mem or --mem-per-gpu, not both (as sbatch)");
}

TEST(SlurmValues, Memory) {
  EXPECT_EQ(*ParseMemoryMb("512"), 512u);
  EXPECT_EQ(*ParseMemoryMb("2G"), 2048u);
  EXPECT_EQ(*ParseMemoryMb("1t"), 1048576u);
  EXPECT_EQ(*ParseMemoryMb("1500K"), 2u);  // rounds up
  EXPECT_EQ(*ParseMemoryMb("0"), 0u);
  EXPECT_FALSE(ParseMemoryMb("G"));
  EXPECT_FALSE(ParseMemoryMb("1.5G"));
  EXPECT_FALSE(ParseMemoryMb("-1"));
  EXPECT_FALSE(ParseMemoryMb("99999999999999T"));
}

TEST(SlurmValues, BeginForms) {
  const BeginClock c = UtcClock();
  EXPECT_EQ(*ParseBeginTime("now", c), kSbatchNow);
  EXPECT_EQ(*ParseBeginTime("now+1hour", c), kSbatchNow + 3600);
  EXPECT_EQ(*ParseBeginTime("now+90", c), kSbatchNow + 90);
  EXPECT_EQ(*ParseBeginTime("now+2days", c), kSbatchNow + 2 * 86400);
  EXPECT_EQ(*ParseBeginTime("NOW+30minutes", c), kSbatchNow + 1800);
  EXPECT_EQ(*ParseBeginTime("18:00", c), kSbatchNow + 1800);                  // today
  EXPECT_EQ(*ParseBeginTime("16:00:30", c), kSbatchNow - 5400 + 86400 + 30);  // passed: tomorrow
  EXPECT_EQ(*ParseBeginTime("2026-12-24", c), 1798070400);
  EXPECT_EQ(*ParseBeginTime("2026-12-24T08:30", c), 1798070400 + 8 * 3600 + 1800);
  EXPECT_EQ(*ParseBeginTime("2026-12-24T08:30:15", c), 1798070400 + 8 * 3600 + 1800 + 15);
  EXPECT_EQ(*ParseBeginTime("midnight", c), kSbatchNow - 17 * 3600 - 1800 + 86400);
  EXPECT_EQ(*ParseBeginTime("teatime", c), kSbatchNow - 5400 + 86400);  // 16:00 has passed
  EXPECT_EQ(*ParseBeginTime("tomorrow", c), kSbatchNow - 17 * 3600 - 1800 + 86400);
  EXPECT_THAT(ParseBeginTime("now+1fortnight", c).error().message, HasSubstr("unknown unit 'fortnight'"));
  EXPECT_THAT(ParseBeginTime("2026-02-30", c).error().message, HasSubstr("no such date"));
  for (const char* bad : {"", "now+", "25:00", "12:60", "2026-13-01", "12/24", "2026-12-24T8", "soon"}) {
    EXPECT_FALSE(ParseBeginTime(bad, c)) << bad;
  }
}

TEST(SlurmValues, BeginGoesIntoTheSpec) {
  auto p = SbatchPlan({"--begin", "now+1hour", "--", "x"});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->spec.begin_time(), kSbatchNow + 3600);
}

TEST(SlurmValues, GresAndFeatures) {
  EXPECT_EQ(ParseGresGpus("gpu:8")->count, 8u);
  EXPECT_EQ(ParseGresGpus("gpu")->count, 1u);
  EXPECT_EQ(ParseGresGpus("gpu:a100")->type, "a100");
  EXPECT_EQ(ParseGresGpus("gpu:a100:2")->count, 2u);
  EXPECT_FALSE(ParseGresGpus("gpu:a100:2,gpu:1"));
  EXPECT_FALSE(ParseGresGpus("gpu:a/b:2"));
  EXPECT_FALSE(ParseGresGpus("gpu:0"));
  EXPECT_EQ(AddFeature("", "h100"), "h100");
  EXPECT_EQ(AddFeature("a|b&c", "h100"), "a&h100|b&c&h100");
}

// What a raw gRPC client sends is held to the same rules (phalanxd runs CheckJobSpec too).
TEST(SlurmFields, CheckJobSpecNamesTheField) {
  v1::JobSpec ok;
  ok.set_gpus(1);
  ok.add_command("true");
  ASSERT_TRUE(CheckJobSpec(ok));
  auto error = [&](auto change) {
    v1::JobSpec s = ok;
    change(s);
    auto st = CheckJobSpec(s);
    return st ? std::string("(no error)") : st.error().ToString();
  };
  EXPECT_THAT(error([](v1::JobSpec& s) { s.set_nodelist("node[1-"); }), HasSubstr("spec.nodelist: "));
  EXPECT_THAT(error([](v1::JobSpec& s) { s.set_exclude("a,,b"); }), HasSubstr("spec.exclude: "));
  EXPECT_THAT(error([](v1::JobSpec& s) { s.set_constraint("a&"); }),
              HasSubstr("spec.constraint: 'a&': an empty feature"));
  EXPECT_THAT(error([](v1::JobSpec& s) { s.set_begin_time(-1); }), HasSubstr("spec.begin_time: -1 is not a time"));
  EXPECT_THAT(error([](v1::JobSpec& s) { s.set_cpus_per_task(1u << 20); }), HasSubstr("spec.cpus_per_task: "));
  EXPECT_THAT(error([](v1::JobSpec& s) {
                s.set_mem_per_node_mb(1);
                s.set_mem_per_gpu_mb(1);
              }),
              HasSubstr("spec.mem_per_gpu_mb: give mem_per_node_mb or mem_per_gpu_mb, not both"));
  EXPECT_THAT(error([](v1::JobSpec& s) { s.mutable_submit_info()->set_mail_type("END,SOMETIMES"); }),
              HasSubstr("spec.submit_info.mail_type: 'SOMETIMES' is not a mail type"));
  EXPECT_THAT(error([](v1::JobSpec& s) { s.set_comment("bad\x1b[2J"); }), HasSubstr("spec.comment: "));
  EXPECT_THAT(error([](v1::JobSpec& s) { s.mutable_submit_info()->set_submit_dir("/a\nb"); }),
              HasSubstr("spec.submit_info.submit_dir: "));
}

}  // namespace
}  // namespace phalanx::cli
