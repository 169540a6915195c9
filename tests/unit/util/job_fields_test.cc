#include "util/job_fields.h"

#include <gtest/gtest.h>

#include <string>

namespace phalanx {
namespace {

using namespace std::string_literals;

std::string Why(const Status& st) { return st ? "ok" : st.error().ToString(); }

TEST(JobFields, LabelsRefuseControlCharactersNamingFieldAndValue) {
  EXPECT_TRUE(CheckLabel("spec.name", "train-7b"));
  EXPECT_TRUE(CheckLabel("spec.name", "训练 🚀 café"));
  EXPECT_TRUE(CheckLabel("spec.name", ""));
  EXPECT_EQ(Why(CheckLabel("spec.name", "a\nb")),
            "spec.name: 'a\\nb' contains a newline (byte 1); control characters are not allowed");
  EXPECT_EQ(Why(CheckLabel("spec.name", "x\0y"s)),
            "spec.name: 'x\\x00y' contains a NUL byte (byte 1); control characters are not allowed");
  EXPECT_EQ(Why(CheckLabel("spec.name", "\x1b]0;pwned\x07")),
            "spec.name: '\\x1b]0;pwned\\x07' contains an ESC (byte 0); control characters are not allowed");
  EXPECT_EQ(Why(CheckLabel("spec.account", "t\tab")),
            "spec.account: 't\\tab' contains a tab (byte 1); control characters are not allowed");
  EXPECT_EQ(Why(CheckLabel("spec.name", "del\x7f")),
            "spec.name: 'del\\x7f' contains a control character (\\x7f) (byte 3); control characters are not allowed");
}

TEST(JobFields, LabelsNeedValidUtf8WithoutC1OrBidi) {
  EXPECT_EQ(Why(CheckLabel("spec.name", "ab\xff")), "spec.name: 'ab\\xff' is not valid UTF-8 (byte 2)");
  EXPECT_EQ(Why(CheckLabel("spec.name",
                           "a\xc2\x9b"
                           "1m")),
            "spec.name: 'a\\u009b1m' contains a C1 control character (byte 1); control characters are not allowed");
  EXPECT_EQ(Why(CheckLabel("spec.name",
                           "gpt\xe2\x80\xae"
                           "txt.exe")),
            "spec.name: 'gpt\\u202etxt.exe' contains a bidirectional override (byte 3); control characters are not "
            "allowed");
  EXPECT_TRUE(CheckLabel("spec.name",
                         "a\xc2\xa0"
                         "b"));  // NO-BREAK SPACE is fine
}

TEST(JobFields, LabelsAreBoundedAndLongValuesQuotedShort) {
  EXPECT_TRUE(CheckLabel("spec.name", std::string(kMaxLabelBytes, 'x')));
  const std::string why = Why(CheckLabel("spec.name", std::string(kMaxLabelBytes + 1, 'x')));
  EXPECT_EQ(why, "spec.name: '" + std::string(80, 'x') + "...' has 257 bytes; at most 256 are allowed");
  // The cut never splits a UTF-8 sequence.
  EXPECT_EQ(QuoteValue(std::string(79, 'a') + "训"), "'" + std::string(79, 'a') + "...'");
}

TEST(JobFields, ClassNames) {
  EXPECT_TRUE(CheckClassName("spec.priority_class", "urgent"));
  EXPECT_TRUE(CheckClassName("spec.priority_class", "low-2_x"));
  EXPECT_EQ(Why(CheckClassName("spec.priority_class", "hi gh")),
            "spec.priority_class: 'hi gh' is not a class name (letters, digits, '_' and '-')");
}

TEST(JobFields, PathsRefuseControlCharactersButKeepOtherBytes) {
  EXPECT_TRUE(CheckPath("spec.stdout_pattern", "/home/ada/out-%j.log"));
  EXPECT_TRUE(CheckPath("spec.working_dir", "/data/ümlaut dir/\xff"));  // any non-control byte
  EXPECT_EQ(Why(CheckPath("spec.stdout_pattern", "out\n%j")),
            "spec.stdout_pattern: 'out\\n%j' contains a newline (byte 3); control characters are not allowed in paths");
  EXPECT_FALSE(CheckPath("spec.working_dir", "/tmp/a\0b"s));
  EXPECT_FALSE(CheckPath("spec.working_dir", "/" + std::string(kMaxPathBytes, 'a')));
}

TEST(JobFields, ArgumentsAndEnvironment) {
  EXPECT_TRUE(CheckArgument("spec.command[1]", "--lr=3e-4\n# newlines are fine in argv"));
  EXPECT_EQ(Why(CheckArgument("spec.command[1]", "a\0b"s)), "spec.command[1]: 'a\\x00b' contains a NUL byte (byte 1)");
  EXPECT_FALSE(CheckArgument("spec.command[0]", std::string(kMaxArgumentBytes + 1, 'a')));
  EXPECT_TRUE(CheckEnvName("spec.env", "WANDB_API_KEY"));
  EXPECT_TRUE(CheckEnvName("spec.env", "BASH_FUNC_module%%"));  // bash's exported functions
  EXPECT_EQ(Why(CheckEnvName("spec.env", "A=B")),
            "spec.env: 'A=B' is not a variable name (not empty, no '=', no control characters)");
  EXPECT_FALSE(CheckEnvName("spec.env", ""));
  EXPECT_FALSE(CheckEnvName("spec.env", "A\nB"));
  EXPECT_TRUE(CheckEnvValue("spec.env[X]", "multi\nline"));
  EXPECT_EQ(Why(CheckEnvValue("spec.env[X]", "\0"s)), "spec.env[X]: '\\x00' contains a NUL byte (byte 0)");
}

TEST(JobFields, Script) {
  EXPECT_TRUE(CheckScript("spec.script", "#!/bin/sh\ntrue\n"));
  EXPECT_EQ(Why(CheckScript("spec.script", "")), "spec.script: the script is empty");
  EXPECT_EQ(Why(CheckScript("spec.script",
                            "\x7f"
                            "ELF\0"s)),
            "spec.script: the script contains a NUL byte (byte 4): a binary file, not a script");
  EXPECT_FALSE(CheckScript("spec.script", std::string(kMaxScriptBytes + 1, '#')));
}

TEST(JobFields, GpuShape) {
  EXPECT_TRUE(CheckGpuShape("spec.", 8, 0, 0));
  EXPECT_TRUE(CheckGpuShape("spec.", 0, 2, 8));
  EXPECT_TRUE(CheckGpuShape("spec.", 16, 2, 8));
  EXPECT_EQ(Why(CheckGpuShape("spec.", 0, 0, 0)), "spec.gpus: must be at least 1 (got 0)");
  EXPECT_EQ(Why(CheckGpuShape("spec.", 4294967295u, 0, 0)), "spec.gpus: 4294967295 is too many GPUs (1..1048576)");
  EXPECT_EQ(Why(CheckGpuShape("spec.", 8, 0, 4)), "spec.gpus_per_node: 4 given without nodes");
  EXPECT_EQ(Why(CheckGpuShape("spec.", 8, 2, 0)), "spec.gpus_per_node: must be at least 1 when nodes is 2");
  EXPECT_EQ(Why(CheckGpuShape("spec.", 8, 2, 8)), "spec.gpus: 8 is not nodes=2 x gpus_per_node=8 = 16");
  EXPECT_EQ(Why(CheckGpuShape("spec.", 0, 65536, 65536)),
            "spec.nodes: nodes=65536 x gpus_per_node=65536 = 4294967296 is too many GPUs (1..1048576)");
}

TEST(JobFields, ElasticSizes) {
  using R = ElasticStepRule;
  EXPECT_TRUE(CheckElastic("spec.", 8, 0, 0, R::kAny, 0));
  EXPECT_TRUE(CheckElastic("spec.", 64, 8, 0, R::kMultiple, 8));
  EXPECT_TRUE(CheckElastic("spec.", 12, 3, 0, R::kPowerOfTwo, 0));
  // The raw gRPC submission of issue 12: -G 1:8 with a step of 2^32-1 ran on 8 GPUs.
  EXPECT_EQ(Why(CheckElastic("spec.", 8, 1, 0, R::kMultiple, 4294967295u)),
            "spec.elastic_step: 4294967295 is more than gpus 8 (1..8)");
  EXPECT_EQ(Why(CheckElastic("spec.", 8, 1, 0, R::kMultiple, 0)),
            "spec.elastic_step: must be at least 1 for multiples (got 0)");
  EXPECT_EQ(Why(CheckElastic("spec.", 15, 9, 0, R::kMultiple, 8)),
            "spec.elastic_step: no multiple of 8 between min_gpus 9 and gpus 15");
  EXPECT_EQ(Why(CheckElastic("spec.", 7, 5, 0, R::kPowerOfTwo, 0)),
            "spec.elastic_step_kind: no power of two between min_gpus 5 and gpus 7");
  EXPECT_EQ(Why(CheckElastic("spec.", 8, 0, 0, R::kMultiple, 2)),
            "spec.elastic_step_kind: needs an elastic job (0 < min_gpus < gpus; got min_gpus=0, gpus=8)");
  EXPECT_EQ(Why(CheckElastic("spec.", 8, 1, 0, R::kAny, 4)),
            "spec.elastic_step: 4 given without elastic_step_kind MULTIPLE (the step of multiples of N)");
  EXPECT_EQ(Why(CheckElastic("spec.", 8, 9, 0, R::kAny, 0)), "spec.min_gpus: 9 is more than gpus 8");
  EXPECT_EQ(Why(CheckElastic("spec.", 16, 8, 2, R::kAny, 0)),
            "spec.min_gpus: 8: a node-shaped job (nodes=2) cannot be elastic");
}

TEST(JobFields, SecondsAndSignals) {
  EXPECT_TRUE(CheckSeconds("spec.walltime_s", 0));
  EXPECT_TRUE(CheckSeconds("spec.walltime_s", kMaxJobSeconds));
  EXPECT_EQ(Why(CheckSeconds("spec.walltime_s", -1)), "spec.walltime_s: must not be negative (got -1)");
  EXPECT_EQ(Why(CheckSeconds("spec.walltime_s", INT64_MAX)),
            "spec.walltime_s: 9223372036854775807s is more than 31536000s (365 days)");
  EXPECT_TRUE(CheckSignalNumber("spec.checkpoint_signal", 0));
  EXPECT_TRUE(CheckSignalNumber("spec.checkpoint_signal", 10));
  EXPECT_EQ(Why(CheckSignalNumber("spec.checkpoint_signal", 65)),
            "spec.checkpoint_signal: not a signal number (got 65; 1..64, or 0 for the default)");
  EXPECT_FALSE(CheckSignalNumber("spec.checkpoint_signal", -9));
}

}  // namespace
}  // namespace phalanx
