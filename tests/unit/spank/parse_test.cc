// The SPANK plugin's pure part (plugins/spank/parse.h): --phx-* values and plugstack.conf keys.
#include "parse.h"

#include <csignal>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

struct Err {
  char text[512] = "";
};

TEST(SpankTopology, LevelsAndModes) {
  const struct {
    const char* text;
    phx_level level;
    int prefer;
  } cases[] = {
      {"node", PHX_LEVEL_NODE, 0},        {"nvlink", PHX_LEVEL_NVLINK, 0},     {"nvl", PHX_LEVEL_NVLINK, 0},
      {"leaf", PHX_LEVEL_LEAF, 0},        {"spine", PHX_LEVEL_SPINE, 0},       {"any", PHX_LEVEL_ANY, 0},
      {"leaf:prefer", PHX_LEVEL_LEAF, 1}, {"node:require", PHX_LEVEL_NODE, 0},
  };
  for (const auto& c : cases) {
    phx_topology t{};
    Err e;
    ASSERT_EQ(phx_parse_topology(c.text, &t, e.text, sizeof e.text), 0) << c.text << ": " << e.text;
    EXPECT_EQ(t.level, c.level) << c.text;
    EXPECT_EQ(t.prefer, c.prefer) << c.text;
  }
}

TEST(SpankTopology, BadValuesNameTheOptionAndLeaveTheOutputAlone) {
  phx_topology t{PHX_LEVEL_LEAF, 1};
  Err e;
  EXPECT_EQ(phx_parse_topology("bogus", &t, e.text, sizeof e.text), -1);
  EXPECT_STREQ(e.text, "--phx-topology=bogus: 'bogus' is not a level (node, nvlink, leaf, spine or any, with :prefer)");
  EXPECT_EQ(t.level, PHX_LEVEL_LEAF);
  EXPECT_EQ(phx_parse_topology("leaf:maybe", &t, e.text, sizeof e.text), -1);
  EXPECT_STREQ(e.text, "--phx-topology=leaf:maybe: unknown mode 'maybe' (prefer or require)");
  EXPECT_EQ(phx_parse_topology("", &t, e.text, sizeof e.text), -1);
  EXPECT_EQ(phx_parse_topology(nullptr, &t, e.text, sizeof e.text), -1);
  EXPECT_EQ(phx_parse_topology("LEAF", &t, e.text, sizeof e.text), -1);  // as gsub: lower case only
}

TEST(SpankElastic, Ranges) {
  phx_elastic r{};
  Err e;
  ASSERT_EQ(phx_parse_elastic("8:64", &r, e.text, sizeof e.text), 0) << e.text;
  EXPECT_EQ(r.min_gpus, 8u);
  EXPECT_EQ(r.max_gpus, 64u);
  ASSERT_EQ(phx_parse_elastic("4:4", &r, e.text, sizeof e.text), 0) << e.text;
  EXPECT_EQ(phx_parse_elastic("4:2", &r, e.text, sizeof e.text), -1);
  EXPECT_STREQ(e.text, "--phx-elastic=4:2: the minimum is above the maximum");
  EXPECT_EQ(phx_parse_elastic("8", &r, e.text, sizeof e.text), -1);
  EXPECT_STREQ(e.text, "--phx-elastic=8: not MIN:MAX (GPUs, e.g. 8:64)");
  for (const char* bad : {"0:4", "a:4", "4:", ":4", "-1:4", "4:99999999", "1:2:3", " 1:2"}) {
    EXPECT_EQ(phx_parse_elastic(bad, &r, e.text, sizeof e.text), -1) << bad;
    EXPECT_EQ(std::string(e.text).rfind(std::string("--phx-elastic=") + bad + ": ", 0), 0u) << e.text;
  }
  EXPECT_EQ(phx_parse_elastic("0:4", &r, e.text, sizeof e.text), -1);
  EXPECT_STREQ(e.text, "--phx-elastic=0:4: '0' is out of range 1..1048576 (MIN:MAX GPUs)");
  EXPECT_EQ(r.min_gpus, 4u);  // unchanged by the failures
}

TEST(SpankCheckpoint, GsubGrammar) {
  const struct {
    const char* text;
    int signal;
    long long seconds;
  } cases[] = {
      {"USR1@120", SIGUSR1, 120},
      {"SIGUSR2@5m", SIGUSR2, 300},
      {"usr1", SIGUSR1, 0},
      {"TERM@90s", SIGTERM, 90},
      {"12@1", 12, 1},
      {"HUP@1h", SIGHUP, 3600},
  };
  for (const auto& c : cases) {
    phx_checkpoint k{};
    Err e;
    ASSERT_EQ(phx_parse_checkpoint(c.text, &k, e.text, sizeof e.text), 0) << c.text << ": " << e.text;
    EXPECT_EQ(k.signal, c.signal) << c.text;
    EXPECT_EQ(k.warning_s, c.seconds) << c.text;
  }
}

TEST(SpankCheckpoint, BadValues) {
  phx_checkpoint k{SIGUSR1, 60};
  Err e;
  EXPECT_EQ(phx_parse_checkpoint("USR1@x", &k, e.text, sizeof e.text), -1);
  EXPECT_EQ(std::string(e.text).rfind("--phx-checkpoint=USR1@x: 'x' is not a duration", 0), 0u) << e.text;
  EXPECT_EQ(phx_parse_checkpoint("USR9@60", &k, e.text, sizeof e.text), -1);
  EXPECT_EQ(std::string(e.text).rfind("--phx-checkpoint=USR9@60: 'USR9' is not a signal", 0), 0u) << e.text;
  EXPECT_EQ(phx_parse_checkpoint("USR1@0", &k, e.text, sizeof e.text), -1);
  EXPECT_STREQ(e.text, "--phx-checkpoint=USR1@0: '0' is not a number of seconds (1..86400)");
  for (const char* bad : {"", "@60", "USR1@", "65@1", "USR1@99999", "USR1@-5"}) {
    EXPECT_EQ(phx_parse_checkpoint(bad, &k, e.text, sizeof e.text), -1) << bad;
  }
  EXPECT_EQ(k.signal, SIGUSR1);
  EXPECT_EQ(k.warning_s, 60);
}

TEST(SpankMessages, ControlCharactersInAValueAreShownNotWritten) {
  Err e;
  char out[PHX_CLASS_MAX];
  const std::string hostile = "a\nphalanx_spank: forged\x1b[31m\x7f";
  EXPECT_EQ(phx_parse_class(hostile.c_str(), out, e.text, sizeof e.text), -1);
  const std::string text = e.text;
  EXPECT_EQ(text.find_first_of("\n\x1b\x7f"), std::string::npos) << text;
  EXPECT_NE(text.find("a\\x0aphalanx_spank: forged\\x1b[31m\\x7f"), std::string::npos) << text;
  const std::string huge(1 << 20, 'x');  // a megabyte: the message is cut to the caller's buffer
  phx_elastic r{};
  EXPECT_EQ(phx_parse_elastic(("1:" + huge).c_str(), &r, e.text, sizeof e.text), -1);
  EXPECT_LT(std::string(e.text).size(), sizeof e.text);
}

TEST(SpankClass, Names) {
  char out[PHX_CLASS_MAX] = "";
  Err e;
  ASSERT_EQ(phx_parse_class("high", out, e.text, sizeof e.text), 0);
  EXPECT_STREQ(out, "high");
  ASSERT_EQ(phx_parse_class("site_batch-2", out, e.text, sizeof e.text), 0);
  EXPECT_EQ(phx_parse_class("no spaces", out, e.text, sizeof e.text), -1);
  EXPECT_STREQ(e.text, "--phx-class=no spaces: not a class name (low, normal, high, urgent, ...)");
  EXPECT_EQ(phx_parse_class("", out, e.text, sizeof e.text), -1);
  EXPECT_EQ(phx_parse_class(std::string(PHX_CLASS_MAX, 'a').c_str(), out, e.text, sizeof e.text), -1);
  EXPECT_STREQ(out, "site_batch-2");
}

TEST(SpankParse, ErrorBufferIsAlwaysTerminatedAndMayBeSmall) {
  phx_topology t{};
  char tiny[8] = "xxxxxxx";
  EXPECT_EQ(phx_parse_topology("bogus", &t, tiny, sizeof tiny), -1);
  EXPECT_STREQ(tiny, "--phx-t");
  EXPECT_EQ(phx_parse_topology("bogus", &t, nullptr, 0), -1);
}

TEST(SpankParse, LevelNames) {
  EXPECT_STREQ(phx_level_name(PHX_LEVEL_LEAF), "leaf");
  EXPECT_STREQ(phx_level_name(PHX_LEVEL_NVLINK), "nvlink");
  EXPECT_STREQ(phx_level_name(PHX_LEVEL_UNSET), "");
}

int ParseConfig(const std::vector<const char*>& args, phx_config* c, Err* e) {
  return phx_config_parse(c, static_cast<int>(args.size()), args.data(), e->text, sizeof e->text);
}

TEST(SpankConfig, DefaultsFirst) {
  phx_config c;
  Err e;
  ASSERT_EQ(ParseConfig({}, &c, &e), 0) << e.text;
  EXPECT_STREQ(c.socket, PHX_DEFAULT_SOCKET);
  EXPECT_EQ(c.timeout_ms, PHX_DEFAULT_TIMEOUT_MS);
  EXPECT_EQ(c.default_topology.level, PHX_LEVEL_UNSET);
  EXPECT_EQ(c.fallback_delay_s, PHX_DEFAULT_FALLBACK_DELAY_S);
  EXPECT_LE(c.fallback_delay_s, 60);  // issue 11: a dead phalanxd delays managed jobs at most a minute
  EXPECT_STREQ(c.checkpoint_dir, PHX_DEFAULT_CHECKPOINT_DIR);
  EXPECT_EQ(c.report, 1);
  EXPECT_STREQ(c.munge_socket, "");  // libmunge's default
}

TEST(SpankConfig, EveryKey) {
  phx_config c;
  Err e;
  ASSERT_EQ(ParseConfig({"socket=/tmp/p.sock", "timeout_ms=50", "default_topology=leaf:prefer", "fallback_delay_s=0",
                         "checkpoint_dir=/scratch/ckpt", "report=no", "timeout_ms=75", "munge_socket=/run/m.sock"},
                        &c, &e),
            0)
      << e.text;
  EXPECT_STREQ(c.socket, "/tmp/p.sock");
  EXPECT_EQ(c.timeout_ms, 75);  // a later key overrides
  EXPECT_STREQ(c.munge_socket, "/run/m.sock");
  EXPECT_EQ(c.default_topology.level, PHX_LEVEL_LEAF);
  EXPECT_EQ(c.default_topology.prefer, 1);
  EXPECT_EQ(c.fallback_delay_s, 0);
  EXPECT_STREQ(c.checkpoint_dir, "/scratch/ckpt");
  EXPECT_EQ(c.report, 0);
}

TEST(SpankConfig, SocketIsAPathOrHostPort) {
  phx_config c;
  Err e;
  for (const char* arg : {"socket=head:6820", "socket=10.0.0.1:6820", "socket=[fe80::1]:6820", "socket=/run/r.sock"}) {
    ASSERT_EQ(ParseConfig({arg}, &c, &e), 0) << arg << ": " << e.text;
    EXPECT_STREQ(c.socket, arg + 7);
  }
}

TEST(SpankConfig, StrictErrorsNameTheKey) {
  const struct {
    std::vector<const char*> args;
    const char* message;
  } cases[] = {
      {{"bogus_key=1"},
       "plugstack.conf: unknown key 'bogus_key' (keys: socket, timeout_ms, default_topology, fallback_delay_s, "
       "checkpoint_dir, report, munge_socket, gpu_topology)"},
      {{"timeout_ms"},
       "plugstack.conf: 'timeout_ms' is not key=value (keys: socket, timeout_ms, default_topology, fallback_delay_s, "
       "checkpoint_dir, report, munge_socket, gpu_topology)"},
      {{"=5"}, nullptr},
      {{"timeout_ms=abc"}, "plugstack.conf: timeout_ms=abc: not a whole number in 1..10000"},
      {{"timeout_ms=0"}, "plugstack.conf: timeout_ms=0: not a whole number in 1..10000"},
      {{"timeout_ms=10001"}, nullptr},
      {{"fallback_delay_s=-1"}, "plugstack.conf: fallback_delay_s=-1: not a whole number in 0..3600"},
      {{"socket=relative.sock"}, "plugstack.conf: socket=relative.sock: not an absolute path or HOST:PORT"},
      {{"socket=head:0"}, "plugstack.conf: socket=head:0: not an absolute path or HOST:PORT"},
      {{"socket="}, "plugstack.conf: socket=: empty value"},
      {{"default_topology=rack"},
       "plugstack.conf: default_topology=rack: 'rack' is not a level (node, nvlink, leaf, spine or any, with :prefer)"},
      {{"report=maybe"}, "plugstack.conf: report=maybe: 'maybe' is not a boolean (true or false)"},
      {{"socket=/ok", "Timeout_ms=5"}, nullptr},  // keys are case-sensitive
  };
  for (const auto& c : cases) {
    phx_config cfg;
    cfg.timeout_ms = -7;
    Err e;
    EXPECT_EQ(ParseConfig(c.args, &cfg, &e), -1) << c.args[0];
    EXPECT_EQ(cfg.timeout_ms, -7) << "the output is only written on success";
    if (c.message != nullptr) {
      EXPECT_STREQ(e.text, c.message);
    }
    EXPECT_NE(e.text[0], '\0');
  }
  phx_config cfg;
  Err e;
  const std::string long_socket = "socket=/" + std::string(PHX_SOCKET_MAX, 's');
  EXPECT_EQ(ParseConfig({long_socket.c_str()}, &cfg, &e), -1);
  EXPECT_NE(std::string(e.text).find("longer than 107 bytes"), std::string::npos) << e.text;
}

}  // namespace

TEST(SpankHostlist, NthName) {
  char out[16];
  ASSERT_EQ(phx_hostlist_nth("n[3-4]", 0, out, sizeof out), 0);
  EXPECT_STREQ(out, "n3");
  ASSERT_EQ(phx_hostlist_nth("n[3-4],gpu[09-10]", 3, out, sizeof out), 0);
  EXPECT_STREQ(out, "gpu10");
  EXPECT_EQ(phx_hostlist_nth("n[3-4]", 2, out, sizeof out), -1);
  EXPECT_EQ(phx_hostlist_nth("n[3-", 0, out, sizeof out), -1);
  EXPECT_EQ(phx_hostlist_nth("averyveryverylongnodename", 0, out, sizeof out), -1);
}
