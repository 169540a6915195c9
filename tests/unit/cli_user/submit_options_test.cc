#include "submit_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

namespace phalanx::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

const std::map<std::string, std::string> kEnv = {{"HOME", "/home/ada"}, {"PATH", "/usr/bin"}, {"LANG", "C.UTF-8"}};

SubmitContext Context(std::map<std::string, std::string> files = {}) {
  return SubmitContext{"/home/ada/work", kEnv, [files](const std::string& path) -> Result<std::string> {
                         auto it = files.find(path);
                         if (it == files.end()) return Fail(path, "cannot open the script");
                         return it->second;
                       }};
}

Result<v1::JobSpec> Spec(std::vector<std::string> args) {
  PHX_ASSIGN_OR_RETURN(auto o, ParseSubmitArgs(args));
  return BuildJobSpec(o, Context());
}

std::string SpecError(std::vector<std::string> args) {
  auto s = Spec(std::move(args));
  return s.has_value() ? "(no error)" : s.error().ToString();
}

Result<SubmitPlan> Plan(std::vector<std::string> args, std::map<std::string, std::string> files = {}) {
  PHX_ASSIGN_OR_RETURN(auto o, ParseSubmitArgs(args));
  return PlanSubmit(o, Context(std::move(files)));
}

std::string PlanError(std::vector<std::string> args, std::map<std::string, std::string> files = {}) {
  auto p = Plan(std::move(args), std::move(files));
  return p.has_value() ? "(no error)" : p.error().ToString();
}

OptionValue Value(std::string v, std::string flag = "--x") { return OptionValue{std::move(v), std::move(flag), ""}; }

// ---- -G / -N / --gpus-per-node / --elastic-step --------------------------------------------

TEST(SubmitGpus, Forms) {
  EXPECT_EQ(ParseGpus(Value("8"))->max, 8u);
  EXPECT_EQ(ParseGpus(Value("8"))->min, 0u);
  EXPECT_EQ(ParseGpus(Value("4:16"))->min, 4u);
  EXPECT_EQ(ParseGpus(Value("4:16"))->max, 16u);
  EXPECT_EQ(ParseGpus(Value("8:8"))->min, 0u);  // not elastic
  EXPECT_THAT(ParseGpus(Value("eight", "-G")).error().ToString(),
              HasSubstr("-G: 'eight' is not a whole number (N, or MIN:MAX for an elastic job)"));
  EXPECT_THAT(ParseGpus(Value("0", "-G")).error().ToString(), HasSubstr("-G: '0' is out of range"));
  EXPECT_THAT(ParseGpus(Value("16:4", "-G")).error().ToString(),
              HasSubstr("-G: '16:4': the minimum is above the maximum"));
  EXPECT_THAT(ParseGpus(Value("4:", "-G")).error().ToString(), HasSubstr("'4:' is not a GPU count"));
  EXPECT_THAT(ParseGpus(Value("a:b", "-G")).error().ToString(), HasSubstr("'a:b' is not a GPU count"));
}

TEST(SubmitGpus, DefaultIsOneGpu) {
  auto s = Spec({});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->gpus(), 1u);
  EXPECT_EQ(s->min_gpus(), 0u);
  EXPECT_EQ(s->nodes(), 0u);
}

TEST(SubmitGpus, Elastic) {
  auto s = Spec({"-G", "8:64", "--elastic-step", "8"});
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->min_gpus(), 8u);
  EXPECT_EQ(s->gpus(), 64u);
  EXPECT_EQ(s->elastic_step_kind(), v1::ELASTIC_STEP_MULTIPLE);
  EXPECT_EQ(s->elastic_step(), 8u);
  auto p = Spec({"--gpus=3:20", "--elastic-step=pow2"});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->elastic_step_kind(), v1::ELASTIC_STEP_POWER_OF_TWO);
  EXPECT_EQ(Spec({"-G", "2:4"})->elastic_step_kind(), v1::ELASTIC_STEP_ANY);

  EXPECT_THAT(SpecError({"-G", "8", "--elastic-step", "8"}),
              HasSubstr("--elastic-step: needs an elastic job (-G MIN:MAX)"));
  EXPECT_THAT(SpecError({"-G", "3:7", "--elastic-step", "8"}),
              HasSubstr("--elastic-step: no multiple of 8 between 3 and 7 GPUs"));
  EXPECT_THAT(SpecError({"-G", "5:7", "--elastic-step", "pow2"}), HasSubstr("no power of two between 5 and 7 GPUs"));
  EXPECT_THAT(SpecError({"-G", "2:8", "--elastic-step", "two"}),
              HasSubstr("--elastic-step: 'two' is not a whole number (a step N, or pow2)"));
  EXPECT_THAT(SpecError({"-G", "8:16", "-N", "2"}),
              HasSubstr("-N: an elastic job (-G 8:16) cannot also ask for a node shape"));
}

TEST(SubmitGpus, NodeShapes) {
  auto a = Spec({"-N", "2", "--gpus-per-node", "8"});
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->gpus(), 16u);
  EXPECT_EQ(a->nodes(), 2u);
  EXPECT_EQ(a->gpus_per_node(), 8u);

  auto b = Spec({"-G", "16", "-N", "4"});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->gpus_per_node(), 4u);
  EXPECT_EQ(b->nodes(), 4u);

  auto c = Spec({"-G", "32", "--gpus-per-node", "8"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->nodes(), 4u);

  auto d = Spec({"--gpus-per-node", "4"});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->gpus(), 4u);
  EXPECT_EQ(d->nodes(), 1u);

  EXPECT_EQ(Spec({"-G", "16", "-N", "2", "--gpus-per-node", "8"})->gpus(), 16u);
}

TEST(SubmitGpus, NodeShapeErrorsNameTheFlagsAndValues) {
  EXPECT_EQ(SpecError({"-G", "8", "-N", "3"}), "-N: 8 GPUs (-G 8) do not divide over 3 nodes; give --gpus-per-node");
  EXPECT_EQ(SpecError({"-N", "3"}), "-N: needs -G/--gpus or --gpus-per-node");
  EXPECT_EQ(SpecError({"--gpus=10", "--gpus-per-node", "4"}),
            "--gpus-per-node: 10 GPUs (--gpus 10) are not a multiple of 4");
  EXPECT_EQ(SpecError({"-G", "12", "-N", "2", "--gpus-per-node", "8"}),
            "-G: '12' is not -N 2 x --gpus-per-node 8 = 16");
  EXPECT_THAT(SpecError({"-N", "zero"}), HasSubstr("-N: 'zero' is not a whole number (nodes)"));
  EXPECT_THAT(SpecError({"-N", "0", "-G", "8"}), HasSubstr("-N: '0' is out of range"));
}

// ---- --topology ------------------------------------------------------------------------------

TEST(SubmitTopology, LevelsAndPrefer) {
  struct Case {
    const char* text;
    v1::TopologyLevel level;
    bool prefer;
  };
  for (const Case& c : {Case{"node", v1::TOPOLOGY_LEVEL_NODE, false}, Case{"nvlink", v1::TOPOLOGY_LEVEL_NVLINK, false},
                        Case{"leaf", v1::TOPOLOGY_LEVEL_LEAF, false}, Case{"spine", v1::TOPOLOGY_LEVEL_SPINE, false},
                        Case{"any", v1::TOPOLOGY_LEVEL_ANY, false}, Case{"leaf:prefer", v1::TOPOLOGY_LEVEL_LEAF, true},
                        Case{"node:require", v1::TOPOLOGY_LEVEL_NODE, false}}) {
    auto t = ParseTopology(Value(c.text));
    ASSERT_TRUE(t.has_value()) << c.text;
    EXPECT_EQ(t->first, c.level) << c.text;
    EXPECT_EQ(t->second, c.prefer) << c.text;
  }
  auto s = Spec({"--topology", "spine:prefer"});
  EXPECT_EQ(s->topology(), v1::TOPOLOGY_LEVEL_SPINE);
  EXPECT_TRUE(s->topology_prefer());
  EXPECT_EQ(SpecError({"--topology", "rack"}),
            "--topology: 'rack' is not a level (node, nvlink, leaf, spine or any, with :prefer)");
  EXPECT_EQ(SpecError({"--topology=leaf:maybe"}), "--topology: 'leaf:maybe': unknown mode 'maybe' (prefer or require)");
}

// ---- --checkpoint-signal ---------------------------------------------------------------------

TEST(SubmitCheckpointSignal, NamesNumbersAndTimes) {
  EXPECT_EQ(ParseCheckpointSignal(Value("USR1")).value(), (std::pair<int, int64_t>{SIGUSR1, 0}));
  EXPECT_EQ(ParseCheckpointSignal(Value("SIGUSR2@120")).value(), (std::pair<int, int64_t>{SIGUSR2, 120}));
  EXPECT_EQ(ParseCheckpointSignal(Value("term@90")).value(), (std::pair<int, int64_t>{SIGTERM, 90}));
  EXPECT_EQ(ParseCheckpointSignal(Value("10@5m")).value(), (std::pair<int, int64_t>{10, 300}));
  auto s = Spec({"--checkpoint-signal", "USR1@300", "--checkpoint-interval", "30m"});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->checkpoint_signal(), SIGUSR1);
  EXPECT_EQ(s->checkpoint_warning_s(), 300);
  EXPECT_EQ(s->checkpoint_interval_s(), 1800);
}

TEST(SubmitCheckpointSignal, Errors) {
  EXPECT_EQ(SpecError({"--checkpoint-signal", "USR3@60"}),
            "--checkpoint-signal: 'USR3@60': 'USR3' is not a signal (USR1, SIGUSR1, TERM, ... or a number)");
  EXPECT_EQ(SpecError({"--checkpoint-signal", "99"}), "--checkpoint-signal: '99': '99' is not a signal number (1..64)");
  EXPECT_EQ(SpecError({"--checkpoint-signal", "USR1@soon"}),
            "--checkpoint-signal: 'USR1@soon': 'soon' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, "
            "D-HH:MM:SS, or 90s/30m/2h/1d)");
  EXPECT_EQ(SpecError({"--checkpoint-signal", "USR1@"}),
            "--checkpoint-signal: 'USR1@': '' is not a number of seconds (1..86400)");
  EXPECT_EQ(SpecError({"--checkpoint-interval", "often"}),
            "--checkpoint-interval: 'often' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or "
            "90s/30m/2h/1d)");
}

// ---- the other options -----------------------------------------------------------------------

TEST(SubmitOptions, EverythingElse) {
  auto s = Spec({"-t", "1-00:00", "-q", "high", "--exclusive", "--no-preemptible", "-J", "llama", "-o", "out-%j.log",
                 "-e", "err-%j.log", "-d", "afterok:12:13,afterok:14", "-A", "ml", "-H", "-D", "runs/a"});
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_EQ(s->walltime_s(), 86400);
  EXPECT_EQ(s->priority_class(), "high");
  EXPECT_TRUE(s->exclusive());
  ASSERT_TRUE(s->has_preemptible());
  EXPECT_FALSE(s->preemptible());
  EXPECT_EQ(s->name(), "llama");
  EXPECT_EQ(s->stdout_pattern(), "out-%j.log");
  EXPECT_EQ(s->stderr_pattern(), "err-%j.log");
  EXPECT_EQ(s->dependency(), "afterok:12:13:14");
  EXPECT_EQ(s->after_ok_size(), 0);
  EXPECT_EQ(s->account(), "ml");
  EXPECT_TRUE(s->hold());
  EXPECT_EQ(s->working_dir(), "/home/ada/work/runs/a");

  auto d = Spec({});
  EXPECT_FALSE(d->has_preemptible());
  EXPECT_EQ(d->working_dir(), "/home/ada/work");
  EXPECT_EQ(d->walltime_s(), 0);
  EXPECT_EQ(Spec({"-D", "/scratch"})->working_dir(), "/scratch");
  EXPECT_TRUE(Spec({"--preemptible"})->preemptible());
}

// --array (also -a and #PHX --array) is sent as written; its shape is checked here against
// Slurm's ceiling, the daemon's max_array_size there. Dependencies in every Slurm form.
TEST(SubmitOptions, ArraysAndDependencies) {
  EXPECT_EQ(Spec({"--array=0-99%8"})->array(), "0-99%8");
  EXPECT_EQ(Spec({"-a", "1,3,5-7"})->array(), "1,3,5-7");
  EXPECT_EQ(Spec({})->array(), "");
  EXPECT_EQ(Spec({"-d", "afterany:4?afternotok:5_2"})->dependency(), "afterany:4?afternotok:5_2");
  EXPECT_EQ(Spec({"--dependency=singleton"})->dependency(), "singleton");
  EXPECT_EQ(Spec({"-d", "after:7,afterok:1234"})->dependency(), "after:7,afterok:1234");
  auto d = ParseDirectives("#!/bin/sh\n#PHX --array=0-15:4%2\n", "a.sh");
  ASSERT_TRUE(d.has_value()) << d.error().ToString();
  EXPECT_EQ(d->Get("array"), "0-15:4%2");
  EXPECT_EQ(PlanError({"a.sh"}, {{"a.sh", "#PHX --array=9-1\nrun\n"}}),
            "a.sh:1: --array: '9-1': the range ends before it starts");
}

// The submitter's umask travels in the spec (the agent applies it to the job); without one in
// the context nothing is sent and the agent's default applies.
TEST(SubmitOptions, UmaskOfTheSubmitterIsSent) {
  auto o = ParseSubmitArgs(std::vector<std::string>{"--", "true"});
  ASSERT_TRUE(o.has_value());
  SubmitContext ctx = Context();
  EXPECT_FALSE(BuildJobSpec(*o, ctx)->has_umask());
  ctx.umask = 077;
  auto s = BuildJobSpec(*o, ctx);
  ASSERT_TRUE(s.has_value());
  ASSERT_TRUE(s->has_umask());
  EXPECT_EQ(s->umask(), 077u);
  ctx.umask = 0;
  EXPECT_TRUE(BuildJobSpec(*o, ctx)->has_umask());  // 0 is a umask too
  EXPECT_EQ(BuildJobSpec(*o, ctx)->umask(), 0u);
}

// -p is the partition (as sbatch), --qos/-q the priority class, --priority its older name;
// -t UNLIMITED and -t 0 ask for the partition's maximum (the daemon resolves it).
TEST(SubmitOptions, PartitionQosAndUnlimitedTime) {
  auto s = Spec({"-p", "gpu,debug", "--qos", "urgent", "-t", "UNLIMITED"});
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_THAT(s->partitions(), ElementsAre("gpu", "debug"));
  EXPECT_EQ(s->priority_class(), "urgent");
  EXPECT_TRUE(s->walltime_max());
  EXPECT_EQ(s->walltime_s(), 0);
  s = Spec({"--partition=gpu", "--priority", "low", "--time=0"});
  ASSERT_TRUE(s.has_value()) << s.error().ToString();
  EXPECT_THAT(s->partitions(), ElementsAre("gpu"));
  EXPECT_EQ(s->priority_class(), "low");
  EXPECT_TRUE(s->walltime_max());
  s = Spec({"-t", "2h"});
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->walltime_max());
  EXPECT_EQ(s->walltime_s(), 7200);
  EXPECT_TRUE(s->partitions().empty());
}

TEST(SubmitOptions, ValueErrors) {
  EXPECT_EQ(SpecError({"-t", "forever"}),
            "-t: 'forever' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or 90s/30m/2h/1d)");
  EXPECT_EQ(SpecError({"-q", "very high"}), "-q: 'very high' is not a class name (low, normal, high, urgent)");
  EXPECT_EQ(SpecError({"-p", "gpu,very high"}),
            "-p: 'very high' is not a partition name (letters, digits, _ and -; a,b for several)");
  EXPECT_EQ(SpecError({"-d", "before:12"}),
            "-d: 'before:12': unknown dependency type 'before' (after, afterany, afterok, afternotok, singleton)");
  EXPECT_EQ(SpecError({"--dependency", "afterok"}), "--dependency: 'afterok': afterok needs a job id");
  EXPECT_EQ(SpecError({"-d", "afterok:12:x"}), "-d: 'afterok:12:x': 'x' is not a job id (ID or ARRAYID_TASK)");
  EXPECT_EQ(SpecError({"-d", "afterok:1,afterany:2?singleton"}),
            "-d: 'afterok:1,afterany:2?singleton': use ',' (all of them) or '?' (any of them), not both");
  EXPECT_EQ(SpecError({"--array", "5-3"}), "--array: '5-3': the range ends before it starts");
  EXPECT_EQ(SpecError({"-a", "0-9%0"}),
            "-a: '0-9%0': the limit after '%' must be a whole number of at least 1, not '0'");
  EXPECT_EQ(SpecError({"-J", ""}), "-J: the name is empty");
  EXPECT_EQ(SpecError({"--exclusive=yes"}), "option '--exclusive' takes no value");
}

// ---- --export --------------------------------------------------------------------------------

TEST(SubmitExport, Forms) {
  EXPECT_EQ(Spec({})->env_size(), 3);  // default ALL
  auto all = ParseExport(Value("ALL"), kEnv).value();
  EXPECT_EQ(all, kEnv);
  EXPECT_TRUE(ParseExport(Value("NONE"), kEnv).value().empty());
  EXPECT_EQ(ParseExport(Value("all"), kEnv).value(), kEnv);  // lower case too
  EXPECT_TRUE(ParseExport(Value("none"), kEnv).value().empty());
  EXPECT_THAT(ParseExport(Value("HOME,FOO=bar,UNSET"), kEnv).value(),
              UnorderedElementsAre(Pair("HOME", "/home/ada"), Pair("FOO", "bar")));
  auto plus = ParseExport(Value("ALL,PATH=/opt/bin,X=1"), kEnv).value();
  EXPECT_EQ(plus.size(), 4u);
  EXPECT_EQ(plus["PATH"], "/opt/bin");  // an explicit value beats ALL, in either order
  EXPECT_EQ(ParseExport(Value("PATH=/opt/bin,ALL"), kEnv).value()["PATH"], "/opt/bin");
  EXPECT_THAT(ParseExport(Value("NONE,A=b=c"), kEnv).value(), UnorderedElementsAre(Pair("A", "b=c")));
  EXPECT_THAT(ParseExport(Value("X="), kEnv).value(), UnorderedElementsAre(Pair("X", "")));

  auto s = Spec({"--export", "NONE,CUDA_LAUNCH_BLOCKING=1"});
  ASSERT_TRUE(s.has_value());
  EXPECT_THAT(s->env(), UnorderedElementsAre(Pair("CUDA_LAUNCH_BLOCKING", "1")));
}

TEST(SubmitExport, Errors) {
  EXPECT_EQ(SpecError({"--export", "1X=2"}), "--export: '1X=2' is not VAR or VAR=value (or ALL, NONE)");
  EXPECT_EQ(SpecError({"--export", "A,,B"}), "--export: '' is not VAR or VAR=value (or ALL, NONE)");
  EXPECT_EQ(SpecError({"--export="}), "--export: '' names nothing (ALL, NONE or VAR[=value],...)");
  EXPECT_EQ(SpecError({"--export", "A-B"}), "--export: 'A-B' is not VAR or VAR=value (or ALL, NONE)");
}

// ---- #PHX directives -------------------------------------------------------------------------

TEST(Directives, ReadUntilTheFirstCommand) {
  const std::string script =
      "#!/bin/bash\n"
      "# a comment\n"
      "\n"
      "#PHX -G 16 --time=2:00:00\n"
      "   #PHX --topology leaf   # inline comment\n"
      "#PHXNOT -G 1\n"
      "#SBATCH --gpus 2\n"
      "#PHX -J 'two words'\n"
      "echo hi\n"
      "#PHX -G 1\n";
  auto d = ParseDirectives(script, "train.sh");
  ASSERT_TRUE(d.has_value()) << d.error().ToString();
  EXPECT_EQ(d->Get("gpus"), "16");
  EXPECT_EQ(d->Get("time"), "2:00:00");
  EXPECT_EQ(d->Get("topology"), "leaf");
  EXPECT_EQ(d->Get("job-name"), "two words");
  EXPECT_EQ(d->Find("gpus")->where, "train.sh:4");
  EXPECT_EQ(d->Find("topology")->where, "train.sh:5");
}

TEST(Directives, ErrorsNameScriptAndLine) {
  EXPECT_EQ(ParseDirectives("#!/bin/sh\n#PHX -G 8\n#PHX --gpus\n", "a.sh").error().ToString(),
            "a.sh:3: option '--gpus' needs a value (N|MIN:MAX)");
  EXPECT_EQ(ParseDirectives("#PHX --bogus\n", "a.sh").error().ToString(),
            "a.sh:1: unknown option '--bogus' (see --help)");
  EXPECT_EQ(ParseDirectives("\n\n#PHX -J 'x\n", "a.sh").error().ToString(), "a.sh:3: #PHX: unterminated ' quote");
  EXPECT_EQ(ParseDirectives("#PHX -G 8 train.py\n", "a.sh").error().ToString(),
            "a.sh:1: #PHX takes options only, not 'train.py'");
  EXPECT_EQ(ParseDirectives("#PHX -- x\n", "a.sh").error().ToString(), "a.sh:1: #PHX takes options only, not '--'");
  // A bad value is reported where it was written.
  EXPECT_EQ(PlanError({"a.sh"}, {{"a.sh", "#!/bin/sh\n\n#PHX -t soon\nrun\n"}}),
            "a.sh:3: -t: 'soon' is not a duration (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or 90s/30m/2h/1d)");
  EXPECT_EQ(PlanError({"a.sh"}, {{"a.sh", "#PHX -G 8\n#PHX -N 3\n"}}),
            "a.sh:2: -N: 8 GPUs (-G 8) do not divide over 3 nodes; give --gpus-per-node");
}

TEST(Directives, CrLfLinesAndLaterDirectivesWin) {
  auto d = ParseDirectives("#PHX -G 4\r\n#PHX -G 8\r\n", "w.sh");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->Get("gpus"), "8");
  EXPECT_EQ(d->Find("gpus")->where, "w.sh:2");
}

// ---- the whole submission --------------------------------------------------------------------

TEST(PlanSubmit, ScriptTextArgsAndPrecedence) {
  const std::string script =
      "#!/bin/bash\n#PHX -G 16 -t 1:00:00 -J from-script --topology leaf\nsrun python train.py \"$@\"\n";
  auto p = Plan({"-G", "8", "--json", "train.sh", "--lr", "3e-4"}, {{"train.sh", script}});
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(p->spec.gpus(), 8u);          // the command line wins
  EXPECT_EQ(p->spec.walltime_s(), 3600);  // the directive stays
  EXPECT_EQ(p->spec.name(), "from-script");
  EXPECT_EQ(p->spec.topology(), v1::TOPOLOGY_LEVEL_LEAF);
  EXPECT_EQ(p->spec.script(), script);
  EXPECT_THAT(p->spec.command(), ElementsAre("--lr", "3e-4"));  // the script's arguments
  EXPECT_TRUE(p->json);
  EXPECT_FALSE(p->parsable);
}

TEST(PlanSubmit, NameDefaults) {
  auto s = Plan({"jobs/train.sh"}, {{"jobs/train.sh", "#!/bin/sh\nrun\n"}});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->spec.name(), "train.sh");
  EXPECT_TRUE(s->spec.command().empty());  // no arguments: only `script` is set

  auto c = Plan({"--parsable", "--", "/usr/bin/python3", "-u", "train.py"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->spec.name(), "python3");
  EXPECT_THAT(c->spec.command(), ElementsAre("/usr/bin/python3", "-u", "train.py"));
  EXPECT_TRUE(c->spec.script().empty());
  EXPECT_TRUE(c->parsable);

  auto w = Plan({"--wrap", "nvidia-smi -L", "--socket", "/tmp/x.sock"});
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->spec.name(), "wrap");
  EXPECT_EQ(w->spec.script(), "#!/bin/sh\nnvidia-smi -L\n");
  EXPECT_EQ(w->socket, "/tmp/x.sock");
}

TEST(PlanSubmit, SocketAndOutputFlagsFromDirectives) {
  auto p = Plan({"a.sh"}, {{"a.sh", "#PHX --parsable --socket /tmp/d.sock\nrun\n"}});
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->parsable);
  EXPECT_EQ(p->socket, "/tmp/d.sock");
}

TEST(PlanSubmit, Errors) {
  EXPECT_EQ(PlanError({}), "nothing to run: give a script, --wrap CMD, or -- COMMAND [ARGS...] (see --help)");
  EXPECT_EQ(PlanError({"-G", "8", "--"}), "nothing to run after '--'");
  EXPECT_EQ(PlanError({"--wrap", "x", "--", "y"}), "give --wrap or a command after '--', not both");
  EXPECT_EQ(PlanError({"--wrap", "x", "a.sh"}, {{"a.sh", "x\n"}}), "give --wrap or a script, not both");
  EXPECT_EQ(PlanError({"missing.sh"}), "missing.sh: cannot open the script");
  EXPECT_EQ(PlanError({"empty.sh"}, {{"empty.sh", ""}}), "empty.sh: the script is empty");
  EXPECT_EQ(PlanError({"a.out"}, {{"a.out", std::string("\x7f"
                                                        "ELF\0\0",
                                                        6)}}),
            "a.out: is a binary file, not a script (to run a program: gsub [options] -- PROGRAM [ARGS...])");
  EXPECT_EQ(PlanError({"big.sh"}, {{"big.sh", std::string(2 << 20, '#')}}),
            "big.sh: the script has 2097152 bytes; at most 1048576 are accepted");
  EXPECT_EQ(PlanError({"-G", "x", "--", "true"}), "-G: 'x' is not a whole number (N, or MIN:MAX for an elastic job)");
}

// ---- hostile strings (issue 12): the daemon's rules, refused before sending ---------------

TEST(SubmitHostileStrings, FlagValuesNameTheFlag) {
  EXPECT_EQ(SpecError({"-J", "a\nb", "--", "true"}),
            "-J: 'a\\nb' contains a newline (byte 1); control characters are not allowed");
  EXPECT_EQ(SpecError({"--job-name=\x1b[2Jx", "--", "true"}),
            "--job-name: '\\x1b[2Jx' contains an ESC (byte 0); control characters are not allowed");
  EXPECT_EQ(SpecError({"-J", "ab\xff", "--", "true"}), "-J: 'ab\\xff' is not valid UTF-8 (byte 2)");
  EXPECT_EQ(SpecError({"-J", std::string(300, 'n'), "--", "true"}),
            "-J: '" + std::string(80, 'n') + "...' has 300 bytes; at most 256 are allowed");
  EXPECT_EQ(SpecError({"-A", "acct\r", "--", "true"}),
            "-A: 'acct\\r' contains a carriage return (byte 4); control characters are not allowed");
  EXPECT_EQ(SpecError({"-o", "out\n%j", "--", "true"}),
            "-o: 'out\\n%j' contains a newline (byte 3); control characters are not allowed in paths");
  EXPECT_EQ(SpecError({"--error=e\x1b", "--", "true"}),
            "--error: 'e\\x1b' contains an ESC (byte 1); control characters are not allowed in paths");
  EXPECT_EQ(SpecError({"-D", "d\tir", "--", "true"}),
            "-D: 'd\\tir' contains a tab (byte 1); control characters are not allowed in paths");
  // Unicode is a name like any other.
  EXPECT_EQ(Spec({"-J", "训练-🚀-café", "--", "true"})->name(), "训练-🚀-café");
}

TEST(SubmitHostileStrings, WhatNoFlagSetIsCheckedByTheDaemonsRules) {
  // The default name comes from the script's name.
  EXPECT_EQ(PlanError({"x\x1b]0;t\x07.sh"}, {{"x\x1b]0;t\x07.sh", "true\n"}}),
            "the job name (-J/--job-name, or the script's or command's name): 'x\\x1b]0;t\\x07.sh' contains an ESC "
            "(byte 1); control characters are not allowed");
  EXPECT_THAT(PlanError({"--", "true", std::string("a\0b", 3)}), HasSubstr("the command: 'a\\x00b' contains a NUL"));
  // A long argument list is refused as the daemon would.
  std::vector<std::string> many = {"--", "true"};
  many.resize(5001, "x");  // "--" and 5000 arguments
  EXPECT_EQ(PlanError(many), "the command: 5000 arguments; at most 4096 are allowed");
}

TEST(SubmitHostileStrings, EnvironmentFromTheSubmitter) {
  SubmitContext ctx = Context();
  ctx.environment["BAD\nNAME"] = "1";
  auto o = ParseSubmitArgs(std::vector<std::string>{"--", "true"});
  ASSERT_TRUE(o);
  auto plan = PlanSubmit(*o, ctx);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().ToString(),
            "the environment (--export): 'BAD\\nNAME' is not a variable name (not empty, no '=', no control "
            "characters)");
  // bash's exported functions pass (as in Slurm).
  ctx = Context();
  ctx.environment["BASH_FUNC_module%%"] = "() {  eval $(/usr/bin/modulecmd bash $*)\n}";
  auto ok = PlanSubmit(*o, ctx);
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->spec.env().at("BASH_FUNC_module%%"), "() {  eval $(/usr/bin/modulecmd bash $*)\n}");
}

}  // namespace
}  // namespace phalanx::cli
