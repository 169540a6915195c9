#include "adapters/topology/topology_reader_hwloc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/topology/topology.h"

// libhwloc 2.9 leaks objects on some failed XML imports (error paths inside hwloc_topology_load
// that the caller cannot reach; the mutation test below hits them). Keep LeakSanitizer quiet
// about that library only; the reader itself always destroys its topology.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhwloc.so\n"; }

namespace phalanx {
namespace {

std::string HwlocFixture(const std::string& name) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/hwloc/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Builds a one-node cluster around `model` (what the loader does for single-node formats).
Result<Topology> OneNode(const NodeModel& model) {
  TopologySpec spec;
  spec.name = "test";
  spec.models.push_back(model);
  spec.nodes.push_back(NodeSpec{"n0", "", 0, "test"});
  return Topology::Build(spec);
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

TEST(HwlocReader, TwoSocketsFourSwitchesEightGpus) {
  auto m = ReadHwlocXml(HwlocFixture("2socket-8gpu-4sw.xml"), "fixtures/2socket-8gpu-4sw.xml", {});
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->name, "hwloc-2socket-8gpu-4sw");
  EXPECT_EQ(m->gpus, 8);  // the ASPEED BMC VGA is not a GPU
  EXPECT_EQ(m->nics, 2);  // the Intel I210 is not a rail NIC
  EXPECT_DOUBLE_EQ(m->nic_gbs, 50);
  ASSERT_EQ(m->groups.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const GroupSpec& numa = m->groups[static_cast<size_t>(s)];
    EXPECT_EQ(numa.kind, "numa");
    EXPECT_EQ(numa.numa, s);
    EXPECT_EQ(numa.uplink.type, LinkType::kSmp);
    EXPECT_DOUBLE_EQ(numa.uplink.gbs, 40);
    ASSERT_EQ(numa.children.size(), 2u);
    for (int p = 0; p < 2; ++p) {
      const GroupSpec& sw = numa.children[static_cast<size_t>(p)];
      EXPECT_EQ(sw.kind, "pcie");
      EXPECT_EQ(sw.numa, s);
      EXPECT_DOUBLE_EQ(sw.gpu_link_gbs, 32);
      EXPECT_EQ(sw.gpu_link_type, LinkType::kPcie);
      EXPECT_DOUBLE_EQ(sw.uplink.gbs, 32);
      const int base = s * 4 + p * 2;  // bus order: 18,19 | 3b,3c | 9b,9c | bb,bc
      EXPECT_EQ(sw.gpus, (std::vector<int>{base, base + 1}));
    }
  }
  auto topo = OneNode(*m);
  ASSERT_TRUE(topo) << topo.error().ToString();
  EXPECT_EQ(topo->gpu_count(), 8u);
  EXPECT_EQ(topo->count_at_level(Level::kGroup), 6);  // 2 numa + 4 pcie
}

TEST(HwlocReader, OptionsOverrideConstantsAndName) {
  HwlocOptions o;
  o.model_name = "pcie-h100";
  o.gpu_link_gbs = 64;
  o.pcie_uplink_gbs = 63;
  o.numa_uplink_gbs = 41;
  o.nic_gbs = 25;
  o.nics = 4;
  auto m = ReadHwlocXml(HwlocFixture("2socket-8gpu-4sw.xml"), "x.xml", o);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->name, "pcie-h100");
  EXPECT_EQ(m->nics, 4);
  EXPECT_DOUBLE_EQ(m->nic_gbs, 25);
  EXPECT_DOUBLE_EQ(m->groups[0].uplink.gbs, 41);
  EXPECT_DOUBLE_EQ(m->groups[1].children[1].uplink.gbs, 63);
  EXPECT_DOUBLE_EQ(m->groups[1].children[1].gpu_link_gbs, 64);
}

TEST(HwlocReader, RejectsBadOptions) {
  HwlocOptions o;
  o.numa_uplink_gbs = -1;
  auto m = ReadHwlocXml(HwlocFixture("2socket-8gpu-4sw.xml"), "x.xml", o);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().ToString().find("numa_uplink_gbs"), std::string::npos) << m.error().ToString();
}

TEST(HwlocReader, NvSwitchBaseboardBecomesOneNvSwitchGroup) {
  std::string xml = HwlocFixture("2socket-8gpu-4sw.xml");
  // An NVSwitch PCI function (10de:22a3, class 0680) next to the SATA controller.
  const std::string sata = "<object type=\"PCIDev\" gp_index=\"";
  const size_t at = xml.find(sata);
  ASSERT_NE(at, std::string::npos);
  xml.insert(at,
             "<object type=\"PCIDev\" gp_index=\"9001\" pci_busid=\"0000:00:10.0\" pci_type=\"0680 [10de:22a3] "
             "[10de:1796] a1\" pci_link_speed=\"0.000000\"/>\n");
  auto m = ReadHwlocXml(xml, "hgx.xml", {});
  ASSERT_TRUE(m) << m.error().ToString();
  ASSERT_EQ(m->groups.size(), 1u);
  EXPECT_EQ(m->groups[0].kind, "nvswitch");
  EXPECT_EQ(m->groups[0].gpu_link_type, LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(m->groups[0].gpu_link_gbs, 450);
  EXPECT_EQ(m->groups[0].gpus.size(), 8u);
  EXPECT_TRUE(OneNode(*m));
}

TEST(HwlocReader, OtherVendorsAreGpusOnlyWhenAsked) {
  std::string xml = HwlocFixture("2socket-8gpu-4sw.xml");
  HwlocOptions o;
  o.gpu_vendor_ids = {0x1a03};  // count the BMC's VGA instead
  auto m = ReadHwlocXml(xml, "x.xml", o);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->gpus, 1);
  EXPECT_EQ(m->groups.size(), 1u);
}

TEST(HwlocReader, NoGpusIsAnError) {
  std::string xml = HwlocFixture("2socket-8gpu-4sw.xml");
  ReplaceAll(xml, "[10de:2331]", "[8086:0b25]");  // turn the GPUs into Intel accelerators
  auto m = ReadHwlocXml(xml, "nogpu.xml", {});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where, "nogpu.xml");
  EXPECT_NE(m.error().message.find("no GPUs"), std::string::npos);
}

TEST(HwlocReader, GpusDirectlyOnRootPortsGetOneGroupEach) {
  // A machine without I/O locality information and GPUs right on the host bridge.
  const std::string xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" allowed_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2" local_memory="1000000"/>
    <object type="Core" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3">
      <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4"/>
      <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5"/>
    </object>
    <object type="Bridge" gp_index="6" bridge_type="0-1" depth="0" bridge_pci="0000:[00-02]">
      <object type="PCIDev" gp_index="8" pci_busid="0000:00:05.0" pci_type="0302 [10de:20b5] [10de:1533] a1" pci_link_speed="0.000000"/>
      <object type="PCIDev" gp_index="7" pci_busid="0000:00:04.0" pci_type="0302 [10de:20b5] [10de:1533] a1" pci_link_speed="0.000000"/>
    </object>
  </object>
</topology>
)";
  auto m = ReadHwlocXml(xml, "small.xml", {});
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->gpus, 2);
  EXPECT_EQ(m->nics, 0);
  ASSERT_EQ(m->groups.size(), 1u);
  ASSERT_EQ(m->groups[0].children.size(), 2u);
  EXPECT_EQ(m->groups[0].children[0].gpus, std::vector<int>{0});
  EXPECT_EQ(m->groups[0].children[1].gpus, std::vector<int>{1});
}

TEST(HwlocReader, BrokenFixtureNamesFileAndLine) {
  auto m = ReadHwlocXml(HwlocFixture("broken-truncated.xml"), "broken-truncated.xml", {});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where.rfind("broken-truncated.xml:", 0), 0u) << m.error().ToString();
  EXPECT_NE(m.error().message.find("malformed hwloc XML"), std::string::npos) << m.error().ToString();
}

// hwloc 2.9 itself crashes on this (a PU without its nodesets); the reader must refuse it first.
TEST(HwlocReader, ObjectWithoutSetsIsRejectedBeforeHwlocSeesIt) {
  std::string xml = HwlocFixture("2socket-8gpu-4sw.xml");
  const std::string pu =
      "<object type=\"PU\" os_index=\"5\" cpuset=\"0x00000020\" complete_cpuset=\"0x00000020\" nodeset=\"0x00000001\" "
      "complete_nodeset=\"0x00000001\"";
  const size_t at = xml.find(pu);
  ASSERT_NE(at, std::string::npos);
  xml.replace(at, pu.size(), "<object type=\"PU\" os_index=\"5\" cpuset=\"0x00000020\"");
  const int line = 1 + static_cast<int>(std::count(xml.begin(), xml.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  auto m = ReadHwlocXml(xml, "pu.xml", {});
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().where, "pu.xml:" + std::to_string(line));
  EXPECT_EQ(m.error().message, "malformed hwloc XML: PU object without complete_cpuset");
}

// hwloc 2.9 asserts (hwloc_bitmap_sscanf: count > 0) on some malformed sets, also the root's
// allowed ones, which are not among the four every CPU-side object must carry (found by
// tests/fuzz: allowed_nodeset=",x00000003"). Every set on any tag must be a hex bitmap.
TEST(HwlocReader, MalformedSetIsRejectedBeforeHwlocSeesIt) {
  const std::string good = HwlocFixture("2socket-8gpu-4sw.xml");
  for (const std::string set :
       {"allowed_nodeset=\"0x00000003\"", "allowed_cpuset=\"0x0000ffff\"", "complete_nodeset=\"0x00000003\""}) {
    for (const std::string bad : {",x00000003", "0x1,", "0xf...f", "3", "0x"}) {
      std::string xml = good;
      const size_t at = xml.find(set);
      ASSERT_NE(at, std::string::npos) << set;
      const std::string name = set.substr(0, set.find('='));
      xml.replace(at, set.size(), name + "=\"" + bad + "\"");
      auto m = ReadHwlocXml(xml, "sets.xml", {});
      ASSERT_FALSE(m) << name << "=" << bad;
      EXPECT_EQ(m.error().where, "sets.xml:4");
      EXPECT_EQ(m.error().message, "malformed hwloc XML: <object>: bad " + name + " '" + bad + "'");
    }
  }
}

// hwloc 2.9 allocates a distance matrix of nbobjs squared values (and a text of `length`
// characters) before reading them: a huge count is refused first, naming the element. A valid
// matrix, a memory attribute and a cpukind still load.
TEST(HwlocReader, CountsLargerThanTheFileAreRejected) {
  const std::string good = HwlocFixture("2socket-8gpu-4sw.xml");
  const size_t end = good.rfind("</topology>");
  ASSERT_NE(end, std::string::npos);
  auto with = [&](const std::string& nbobjs, const std::string& length) {
    std::string xml = good;
    xml.insert(end, "<distances2 type=\"NUMANode\" nbobjs=\"" + nbobjs +
                        "\" kind=\"5\" name=\"NUMALatency\" indexing=\"os\">\n<indexes length=\"" + length +
                        "\">0 1 </indexes>\n<u64values length=\"12\">10 21 21 10 </u64values>\n</distances2>\n"
                        "<memattr name=\"Bandwidth\" flags=\"5\">\n<memattr_value target_obj_gp_index=\"3\" "
                        "target_obj_type=\"NUMANode\" initiator_cpuset=\"0x000000ff\" value=\"100000\"/>\n</memattr>\n"
                        "<cpukind cpuset=\"0x0000ffff\" forced_efficiency=\"0\"/>\n");
    return xml;
  };
  const int line =
      1 + static_cast<int>(std::count(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
  auto m = ReadHwlocXml(with("2", "4"), "dist.xml", {});
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->gpus, 8);
  const std::string size = std::to_string(with("4294967295", "4").size());
  auto huge = ReadHwlocXml(with("4294967295", "4"), "dist.xml", {});
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().where, "dist.xml:" + std::to_string(line));
  EXPECT_EQ(huge.error().message, "malformed hwloc XML: <distances2>: nbobjs '4294967295' is not a count this " + size +
                                      "-byte file can hold");
  for (const std::string bad : {"-1", "x", "", "99999999999"}) {
    auto m2 = ReadHwlocXml(with("2", bad), "dist.xml", {});
    ASSERT_FALSE(m2) << bad;
    EXPECT_EQ(m2.error().where, "dist.xml:" + std::to_string(line + 1)) << bad;
    EXPECT_NE(m2.error().message.find("<indexes>: length '" + bad + "' is not a count"), std::string::npos)
        << m2.error().message;
  }
}

TEST(HwlocReader, NotXmlAtAll) {
  for (const std::string& text : {std::string(""), std::string("SwitchName=s1 Nodes=a[1-2]\n"),
                                  std::string("<topology>\n"), std::string("<a>\0</a>", 8)}) {
    auto m = ReadHwlocXml(text, "junk.txt", {});
    ASSERT_FALSE(m) << text;
    EXPECT_EQ(m.error().where.rfind("junk.txt", 0), 0u) << m.error().ToString();
    EXPECT_FALSE(m.error().message.empty());
  }
}

// Random byte- and line-level damage must never crash: every outcome is a usable model or an
// error that names the file.
TEST(HwlocReader, SurvivesRandomMutations) {
  const std::string good = HwlocFixture("2socket-8gpu-4sw.xml");
  std::mt19937 rng(20240611);
  const std::string alphabet = "<>/\"= x0f-[]:\n";
  int ok = 0, failed = 0;
  // PHALANX_MUTATIONS=100000 for a longer run by hand.
  const char* env = std::getenv("PHALANX_MUTATIONS");
  const int iterations = env != nullptr ? std::atoi(env) : 300;
  for (int iter = 0; iter < iterations; ++iter) {
    std::string s = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t pos = rng() % s.size();
      switch (rng() % 5) {
        case 0: s.erase(pos, 1 + rng() % 40); break;
        case 1: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        case 2: s[pos] = static_cast<char>(rng() % 256); break;
        case 3: s.resize(pos); break;
        case 4: {  // duplicate a chunk somewhere else
          const std::string chunk = s.substr(pos, rng() % 200);
          s.insert(rng() % s.size(), chunk);
          break;
        }
      }
    }
    auto m = ReadHwlocXml(s, "mutant.xml", {});
    if (m) {
      ++ok;
      ASSERT_GT(m->gpus, 0);
      ASSERT_TRUE(OneNode(*m)) << OneNode(*m).error().ToString();
    } else {
      ++failed;
      ASSERT_EQ(m.error().where.rfind("mutant.xml", 0), 0u) << m.error().ToString();
      ASSERT_FALSE(m.error().message.empty());
    }
  }
  // Both outcomes must occur, or the mutations test nothing.
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace phalanx
