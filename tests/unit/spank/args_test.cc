// The option table and callbacks of the SPANK plugin (plugins/spank/args.c), against a fake
// Slurm (fake_spank.h): registration, callbacks run more than once, environment fallbacks, the
// hints passed to slurmctld.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "fake_spank.h"

extern "C" {
#include "args.h"
}

namespace {

class SpankArgs : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_spank::Reset();
    phx_args_reset();
    for (const char* v :
         {"PHALANX_TOPOLOGY", "PHALANX_ELASTIC", "PHALANX_CHECKPOINT", "PHALANX_PREEMPTIBLE", "PHALANX_CLASS"}) {
      unsetenv(v);
    }
    ASSERT_EQ(phx_args_register(nullptr), 0);
    char err[256];
    ASSERT_EQ(phx_config_parse(&config_, 0, nullptr, err, sizeof err), 0);
  }
  void TearDown() override { phx_args_reset(); }

  static int Call(const std::string& name, const char* value, int val = 0) {
    spank_option* o = fake_spank::Option(name);
    EXPECT_NE(o, nullptr) << name;
    return o ? o->cb(val, value, 0) : -2;
  }
  static std::string Summary(const phx_topology* fallback = nullptr) {
    char buf[512];
    phx_args_summary(fallback, buf, sizeof buf);
    return buf;
  }
  phx_config config_;
};

TEST_F(SpankArgs, RegistersEveryOptionWithHelpNamingThePlugin) {
  const auto& opts = fake_spank::Get().options;
  ASSERT_EQ(opts.size(), 6u);
  for (const char* name :
       {"phx-topology", "phx-elastic", "phx-checkpoint", "phx-preemptible", "phx-no-preemptible", "phx-class"}) {
    spank_option* o = fake_spank::Option(name);
    ASSERT_NE(o, nullptr) << name;
    EXPECT_EQ(std::string(o->usage).rfind("[phalanx] ", 0), 0u) << name;
  }
  EXPECT_EQ(fake_spank::Option("phx-topology")->has_arg, 1);
  EXPECT_EQ(fake_spank::Option("phx-preemptible")->has_arg, 0);
}

TEST_F(SpankArgs, NothingGivenIsNotManagedAndPassesNothing) {
  EXPECT_FALSE(phx_args_managed());
  EXPECT_EQ(Summary(), "");
  EXPECT_EQ(phx_args_forward(nullptr, &config_), 0);
  EXPECT_TRUE(fake_spank::Get().job_control.empty());
}

TEST_F(SpankArgs, CallbacksMayRunAgainTheLastValueWins) {
  EXPECT_EQ(Call("phx-topology", "leaf"), 0);
  EXPECT_EQ(Call("phx-topology", "leaf"), 0);  // Slurm calls again with the same value
  EXPECT_EQ(Call("phx-topology", "node:prefer"), 0);
  EXPECT_EQ(Call("phx-class", "low"), 0);
  EXPECT_EQ(Call("phx-class", "high"), 0);
  EXPECT_EQ(Summary(), "topology=node:prefer,class=high");
  EXPECT_TRUE(fake_spank::Get().errors.empty());
}

TEST_F(SpankArgs, ABadValueIsOneErrorAndKeepsTheGoodOne) {
  ASSERT_EQ(Call("phx-elastic", "8:64"), 0);
  EXPECT_EQ(Call("phx-elastic", "64:8"), -1);
  ASSERT_EQ(fake_spank::Get().errors.size(), 1u);
  EXPECT_EQ(fake_spank::Get().errors[0], "phalanx: --phx-elastic=64:8: the minimum is above the maximum");
  EXPECT_EQ(Summary(), "elastic=8:64");
}

TEST_F(SpankArgs, EveryOptionInTheSummaryAndTheHints) {
  ASSERT_EQ(Call("phx-topology", "spine"), 0);
  ASSERT_EQ(Call("phx-elastic", "4:8"), 0);
  ASSERT_EQ(Call("phx-checkpoint", "USR2@2m"), 0);
  ASSERT_EQ(Call("phx-no-preemptible", nullptr, 0), 0);
  ASSERT_EQ(Call("phx-class", "urgent"), 0);
  EXPECT_TRUE(phx_args_managed());
  config_.fallback_delay_s = 7;
  ASSERT_EQ(phx_args_forward(nullptr, &config_), 0);
  EXPECT_EQ(fake_spank::Get().job_control["PHALANX_MANAGED"],
            "topology=spine,elastic=4:8,checkpoint=12@120,preemptible=0,class=urgent");
  EXPECT_EQ(fake_spank::Get().job_control["PHALANX_FALLBACK_DELAY_S"], "7");
}

TEST_F(SpankArgs, DefaultTopologyStandsInForAManagedJob) {
  ASSERT_EQ(Call("phx-preemptible", nullptr, 1), 0);
  const phx_topology leaf{PHX_LEVEL_LEAF, 0};
  EXPECT_EQ(Summary(&leaf), "topology=leaf,preemptible=1");
  ASSERT_EQ(Call("phx-topology", "node"), 0);
  EXPECT_EQ(Summary(&leaf), "topology=node,preemptible=1");
}

TEST_F(SpankArgs, EnvironmentFallbacksOnlyForOptionsNotGiven) {
  setenv("PHALANX_TOPOLOGY", "leaf", 1);
  setenv("PHALANX_CLASS", "low", 1);
  setenv("PHALANX_PREEMPTIBLE", "false", 1);
  ASSERT_EQ(Call("phx-class", "high"), 0);
  ASSERT_EQ(phx_args_check_environment(nullptr), 0);
  EXPECT_EQ(Summary(), "topology=leaf,preemptible=0,class=high");
}

TEST_F(SpankArgs, ABadEnvironmentValueIsRefused) {
  setenv("PHALANX_CHECKPOINT", "USR1@x", 1);
  EXPECT_EQ(phx_args_check_environment(nullptr), -1);
  ASSERT_EQ(fake_spank::Get().errors.size(), 1u);
  EXPECT_EQ(fake_spank::Get().errors[0].rfind("phalanx: --phx-checkpoint=USR1@x: 'x' is not a duration", 0), 0u);
  unsetenv("PHALANX_CHECKPOINT");
  setenv("PHALANX_PREEMPTIBLE", "perhaps", 1);
  EXPECT_EQ(phx_args_check_environment(nullptr), -1);
  EXPECT_EQ(fake_spank::Get().errors.back(),
            "phalanx: PHALANX_PREEMPTIBLE=perhaps: 'perhaps' is not a boolean (true or false)");
}

TEST_F(SpankArgs, InSlurmstepdTheJobsEnvironmentCounts) {
  fake_spank::Get().context = S_CTX_REMOTE;
  setenv("PHALANX_TOPOLOGY", "node", 1);  // the slurmstepd's own environment: not the job's
  fake_spank::Get().job_env["PHALANX_TOPOLOGY"] = "leaf:prefer";
  ASSERT_EQ(phx_args_check_environment(nullptr), 0);
  EXPECT_EQ(Summary(), "topology=leaf:prefer");
}

TEST_F(SpankArgs, ResetForgetsEverything) {
  ASSERT_EQ(Call("phx-topology", "leaf"), 0);
  phx_args_reset();
  EXPECT_FALSE(phx_args_managed());
  EXPECT_EQ(phx_args_get()->preemptible, -1);
}

}  // namespace
