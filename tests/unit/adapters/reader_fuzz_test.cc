// Randomized-mutation fuzzing of the text readers (Slurm topology.conf + gres, nvidia-smi
// topo -m, hostlists, bandwidth units). Deterministic: a fixed seed per test, mutations chosen
// with rng() % n so every platform replays the same inputs. Each reader must either succeed or
// fail with a non-empty message whose `where` names the input; whatever a reader accepts,
// Topology::Build must either build (with consistent invariants) or fail cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "adapters/topology/bandwidth_units.h"
#include "adapters/topology/topology_reader_nvsmi.h"
#include "adapters/topology/topology_reader_slurm.h"
#include "core/topology/topology.h"
#include "util/hostlist.h"

namespace phalanx {
namespace {

std::string FuzzFixture(const std::string& path) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/" + path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Mutator {
 public:
  Mutator(uint32_t seed, std::vector<std::string> tokens) : rng_(seed), tokens_(std::move(tokens)) {}

  // One to three random edits of `text`.
  std::string Mutate(std::string text) {
    const int edits = 1 + static_cast<int>(Pick(3));
    for (int e = 0; e < edits; ++e) text = MutateOnce(std::move(text));
    return text;
  }

 private:
  size_t Pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }

  std::vector<std::string> Lines(const std::string& text) {
    std::vector<std::string> lines;
    std::string current;
    for (char c : text) {
      current += c;
      if (c == '\n') lines.push_back(std::move(current)), current.clear();
    }
    if (!current.empty()) lines.push_back(current);
    return lines;
  }

  static std::string Join(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& l : lines) out += l;
    return out;
  }

  std::string MutateOnce(std::string text) {
    switch (Pick(7)) {
      case 0: {  // byte flip
        if (text.empty()) return text;
        text[Pick(text.size())] = static_cast<char>(rng_() & 0xff);
        return text;
      }
      case 1: {  // flip one bit (keeps most text printable)
        if (text.empty()) return text;
        text[Pick(text.size())] ^= static_cast<char>(1 << Pick(7));
        return text;
      }
      case 2:  // truncation
        return text.substr(0, Pick(text.size() + 1));
      case 3: {  // delete a line
        auto lines = Lines(text);
        if (lines.empty()) return text;
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(Pick(lines.size())));
        return Join(lines);
      }
      case 4: {  // duplicate a line
        auto lines = Lines(text);
        if (lines.empty()) return text;
        const size_t i = Pick(lines.size());
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(Pick(lines.size() + 1)), lines[i]);
        return Join(lines);
      }
      case 5: {  // swap two lines
        auto lines = Lines(text);
        if (lines.size() < 2) return text;
        std::swap(lines[Pick(lines.size())], lines[Pick(lines.size())]);
        return Join(lines);
      }
      default: {  // insert a token
        const std::string& token = tokens_[Pick(tokens_.size())];
        text.insert(Pick(text.size() + 1), token);
        return text;
      }
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> tokens_;
};

// Whatever a reader accepted must build or fail with a message; a built topology is consistent.
void ExpectBuildsOrFailsCleanly(const TopologySpec& spec, const std::string& input) {
  size_t gpus = 0;
  for (const NodeSpec& n : spec.nodes) {
    if (n.model >= 0 && static_cast<size_t>(n.model) < spec.models.size())
      gpus += static_cast<size_t>(spec.models[static_cast<size_t>(n.model)].gpus);
  }
  if (gpus > 200'000) return;  // a mutated range can ask for a million nodes: valid, but too slow here
  auto t = Topology::Build(spec);
  if (t) {
    EXPECT_EQ(t->CheckInvariants(), "") << input;
  } else {
    EXPECT_FALSE(t.error().message.empty()) << input;
  }
}

struct Tally {
  int ok = 0, failed = 0;
};

const std::vector<std::string> kSlurmTokens = {"\n",
                                               " ",
                                               "\t",
                                               "\\\n",
                                               "\\",
                                               "#",
                                               "=",
                                               "[",
                                               "]",
                                               "-",
                                               ",",
                                               "SwitchName=",
                                               "Nodes=",
                                               "Switches=",
                                               "LinkSpeed=",
                                               "switchname=x ",
                                               "NODES=dgx[001-004] ",
                                               "Switches=ib-leaf01",
                                               "LinkSpeed=NDR",
                                               "LinkSpeed=400Gb",
                                               "999999",
                                               "0",
                                               "dgx[1-5]",
                                               "BlockName=b1 ",
                                               "ib-spine01",
                                               "ib-leaf[01-04]",
                                               "\r",
                                               "\xff",
                                               "SwitchName=ib-spine01 Switches=ib-spine01\n"};

TEST(ReaderFuzz, SlurmTopologyConf) {
  const std::vector<std::pair<std::string, std::string>> fixtures = {
      {"dgx_h100_2level.conf", FuzzFixture("slurm/dgx_h100_2level.conf")},
      {"tree_3level.conf", FuzzFixture("slurm/tree_3level.conf")},
      {"broken_cycle.conf", FuzzFixture("slurm/broken_cycle.conf")}};
  SlurmReadOptions with_gres;
  with_gres.gres_text = FuzzFixture("slurm/gres.conf");
  SlurmReadOptions partial;
  partial.gpus_per_node = 8;
  partial.gres_text = FuzzFixture("slurm/slurm_nodes.conf");
  partial.oversubscription_by_level = {{"leaf", 2}, {"spine", 1.5}};
  const SlurmReadOptions* options[] = {nullptr, &with_gres, &partial};
  Mutator mutator(20240318, kSlurmTokens);
  Tally tally;
  for (int i = 0; i < 3000; ++i) {
    const auto& [name, text] = fixtures[static_cast<size_t>(i) % fixtures.size()];
    const SlurmReadOptions& o =
        options[static_cast<size_t>(i / 3) % 3] ? *options[static_cast<size_t>(i / 3) % 3] : SlurmReadOptions{};
    const std::string input = mutator.Mutate(text);
    auto spec = ReadSlurmTopology(input, name, o);
    if (!spec) {
      ++tally.failed;
      ASSERT_FALSE(spec.error().message.empty()) << input;
      ASSERT_NE(spec.error().where.find(name), std::string::npos) << spec.error().ToString() << "\n--- input:\n"
                                                                  << input;
      continue;
    }
    ++tally.ok;
    ExpectBuildsOrFailsCleanly(*spec, input);
  }
  // The mix must exercise both paths, or the fuzzer is not testing much.
  EXPECT_GT(tally.ok, 100);
  EXPECT_GT(tally.failed, 100);
}

TEST(ReaderFuzz, SlurmGresText) {
  const std::string topology = FuzzFixture("slurm/dgx_h100_2level.conf");
  const std::vector<std::string> gres = {FuzzFixture("slurm/gres.conf"), FuzzFixture("slurm/slurm_nodes.conf")};
  Mutator mutator(7, {"\n", " ", "Name=gpu ", "Count=", "File=/dev/nvidia[0-", "Gres=gpu:h100:", "NodeName=DEFAULT ",
                      "NodeName=dgx001 ", "(S:0,1)", ",", ":", "4", "99999999", "#", "\\\n"});
  Tally tally;
  for (int i = 0; i < 1500; ++i) {
    SlurmReadOptions o;
    o.gres_text = mutator.Mutate(gres[static_cast<size_t>(i) % gres.size()]);
    o.gres_filename = "gres-fuzz.conf";
    o.gpus_per_node = i % 2 == 0 ? 0 : 8;
    auto spec = ReadSlurmTopology(topology, "dgx_h100_2level.conf", o);
    if (!spec) {
      ++tally.failed;
      ASSERT_FALSE(spec.error().message.empty()) << o.gres_text;
      const std::string& where = spec.error().where;
      ASSERT_TRUE(where.find("gres-fuzz.conf") != std::string::npos ||
                  where.find("dgx_h100_2level.conf") != std::string::npos)
          << spec.error().ToString() << "\n--- gres:\n"
          << o.gres_text;
      continue;
    }
    ++tally.ok;
    ExpectBuildsOrFailsCleanly(*spec, o.gres_text);
  }
  EXPECT_GT(tally.ok, 100);
  EXPECT_GT(tally.failed, 100);
}

TEST(ReaderFuzz, NvidiaSmiTopo) {
  const std::vector<std::string> names = {"dgx_h100.txt", "hgx_a100.txt", "l40s_pcie.txt", "nvlink_bridge_4.txt"};
  std::vector<std::string> texts;
  for (const std::string& n : names) texts.push_back(FuzzFixture("nvsmi/" + n));
  Mutator mutator(4242, {"\n",           " ",    "\t",      " X ",          "NV18",          "NV4", "NV0",
                         "PIX",          "PXB",  "PHB",     "NODE",         "SYS",           "SOC", "GPU8",
                         "GPU0",         "NIC0", "mlx5_3",  "CPU Affinity", "NUMA Affinity", "N/A", "Legend:",
                         "0-55,112-167", "\r",   "\xc3\xa9"});
  Tally tally;
  for (int i = 0; i < 3000; ++i) {
    const size_t f = static_cast<size_t>(i) % names.size();
    const std::string input = mutator.Mutate(texts[f]);
    auto model = ReadNvidiaSmiTopo(input, names[f], {});
    if (!model) {
      ++tally.failed;
      ASSERT_FALSE(model.error().message.empty()) << input;
      ASSERT_NE(model.error().where.find(names[f]), std::string::npos) << model.error().ToString() << "\n--- input:\n"
                                                                       << input;
      continue;
    }
    ++tally.ok;
    TopologySpec spec;
    spec.name = names[f];
    spec.models = {*model};
    spec.nodes = {NodeSpec{"node0", "", 0, names[f]}};
    ExpectBuildsOrFailsCleanly(spec, input);
    // A one-node model read from a valid matrix is always buildable.
    EXPECT_TRUE(Topology::Build(spec).has_value()) << input;
  }
  EXPECT_GT(tally.ok, 100);
  EXPECT_GT(tally.failed, 100);
}

TEST(ReaderFuzz, Hostlist) {
  const std::vector<std::string> seeds = {"dgx[001-032]", "n[1-3,7]", "a[01-02]-ib",
                                          "r[1-2]n[1-2]", "a,b[1-2]", "gpu-a[033-040],gpu-x[1-3,7]"};
  Mutator mutator(99, {"[", "]", "-", ",", "0", "9", "00", "999", "[1-3]", " ", "x"});
  Tally tally;
  for (int i = 0; i < 4000; ++i) {
    const std::string input = mutator.Mutate(seeds[static_cast<size_t>(i) % seeds.size()]);
    auto hosts = ExpandHostlist(input, "fuzz:1");
    if (!hosts) {
      ++tally.failed;
      ASSERT_FALSE(hosts.error().message.empty()) << input;
      ASSERT_EQ(hosts.error().where, "fuzz:1") << input;
      continue;
    }
    ++tally.ok;
    ASSERT_FALSE(hosts->empty()) << input;
    ASSERT_LE(hosts->size(), kMaxHostlistHosts) << input;
    for (const std::string& h : *hosts) ASSERT_FALSE(h.empty()) << input;
  }
  EXPECT_GT(tally.ok, 100);
  EXPECT_GT(tally.failed, 100);
}

TEST(ReaderFuzz, BandwidthUnits) {
  const std::vector<std::string> seeds = {"400Gb/s", "2xNDR", "50 GB/s", "1.6Tb/s", "100Mbps", "HDR", "400"};
  Mutator mutator(5, {"x", "X", "G", "b", "B", "/s", "ps", "e", "e308", "-", ".", " ", "NDR", "0", "9"});
  Tally tally;
  for (int i = 0; i < 4000; ++i) {
    const std::string input = mutator.Mutate(seeds[static_cast<size_t>(i) % seeds.size()]);
    auto gbs = ParseBandwidth(input, "fuzz:2", i % 2 == 0 ? "Gb/s" : "");
    if (!gbs) {
      ++tally.failed;
      ASSERT_FALSE(gbs.error().message.empty()) << input;
      ASSERT_EQ(gbs.error().where, "fuzz:2") << input;
      continue;
    }
    ++tally.ok;
    ASSERT_TRUE(std::isfinite(*gbs) && *gbs > 0) << input << " -> " << *gbs;
  }
  EXPECT_GT(tally.ok, 100);
  EXPECT_GT(tally.failed, 100);
}

}  // namespace
}  // namespace phalanx
