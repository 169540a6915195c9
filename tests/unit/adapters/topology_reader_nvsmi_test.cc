#include "adapters/topology/topology_reader_nvsmi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/topology/node_models.h"
#include "core/topology/topology.h"

namespace phalanx {
namespace {

using ::testing::HasSubstr;

std::string NvsmiFixture(const std::string& name) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/nvsmi/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

NodeModel ReadOk(const std::string& text, const NvsmiOptions& options = {}) {
  auto model = ReadNvidiaSmiTopo(text, "topo.txt", options);
  EXPECT_TRUE(model.has_value()) << model.error().ToString();
  return model.value_or(NodeModel{});
}

// A one-node cluster of `model` must build; returns the number of group domains.
int BuildsAsOneNode(const NodeModel& model) {
  TopologySpec spec;
  spec.name = "one-node";
  spec.models = {model};
  spec.nodes = {NodeSpec{"node0", "", 0, "test"}};
  auto t = Topology::Build(spec);
  EXPECT_TRUE(t.has_value()) << t.error().ToString();
  if (!t) return -1;
  EXPECT_EQ(t->gpu_count(), static_cast<size_t>(model.gpus));
  EXPECT_EQ(t->CheckInvariants(), "");
  return t->count_at_level(Level::kGroup);
}

// Both models describe the same inside of a node: group tree, links, NICs.
void ExpectSameGroups(const std::vector<GroupSpec>& a, const std::vector<GroupSpec>& b, const std::string& path) {
  ASSERT_EQ(a.size(), b.size()) << path;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string here = path + "/" + a[i].kind + std::to_string(i);
    EXPECT_EQ(a[i].kind, b[i].kind) << here;
    EXPECT_EQ(a[i].gpus, b[i].gpus) << here;
    if (!a[i].gpus.empty()) {  // the GPU link means nothing for a group without direct GPUs
      EXPECT_DOUBLE_EQ(a[i].gpu_link_gbs, b[i].gpu_link_gbs) << here;
      EXPECT_EQ(a[i].gpu_link_type, b[i].gpu_link_type) << here;
    }
    EXPECT_DOUBLE_EQ(a[i].uplink.gbs, b[i].uplink.gbs) << here;
    EXPECT_EQ(a[i].numa, b[i].numa) << here;
    ExpectSameGroups(a[i].children, b[i].children, here);
  }
}

TEST(NvsmiReader, DgxH100IsOneNvSwitchWithEightRailNics) {
  NvsmiOptions options;
  options.model_name = "dgx-h100";
  const NodeModel m = ReadOk(NvsmiFixture("dgx_h100.txt"), options);
  EXPECT_EQ(m.name, "dgx-h100");
  EXPECT_EQ(m.gpus, 8);
  ASSERT_EQ(m.groups.size(), 1u);
  EXPECT_EQ(m.groups[0].kind, "nvswitch");
  EXPECT_EQ(m.groups[0].gpus, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_DOUBLE_EQ(m.groups[0].gpu_link_gbs, 18 * 25.0);
  EXPECT_EQ(m.groups[0].gpu_link_type, LinkType::kNvlink);
  EXPECT_EQ(m.groups[0].numa, -1) << "GPUs span NUMA 0 and 1";
  EXPECT_EQ(m.nics, 8) << "10 NIC columns, 2 storage NICs are not PIX/PXB to any GPU";
  EXPECT_DOUBLE_EQ(m.nic_gbs, 50);
  const NodeModel builtin = *BuiltinNodeModel("dgx-h100");
  ExpectSameGroups(m.groups, builtin.groups, "dgx-h100");
  EXPECT_EQ(m.nics, builtin.nics);
  EXPECT_EQ(BuildsAsOneNode(m), 1);
}

TEST(NvsmiReader, HgxA100WithMlxColumnsAndPxbNics) {
  const NodeModel m = ReadOk(NvsmiFixture("hgx_a100.txt"));
  EXPECT_EQ(m.name, "nvsmi-node");
  ASSERT_EQ(m.groups.size(), 1u);
  EXPECT_EQ(m.groups[0].kind, "nvswitch");
  EXPECT_DOUBLE_EQ(m.groups[0].gpu_link_gbs, 12 * 25.0);
  EXPECT_EQ(m.nics, 8) << "mlx5_8/mlx5_9 are SYS to every GPU";
  ExpectSameGroups(m.groups, BuiltinNodeModel("hgx-a100")->groups, "hgx-a100");
  EXPECT_EQ(BuildsAsOneNode(m), 1);
}

TEST(NvsmiReader, PcieOnlyL40sNestsPcieSwitchesInsideNuma) {
  const NodeModel m = ReadOk(NvsmiFixture("l40s_pcie.txt"));
  ASSERT_EQ(m.groups.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const GroupSpec& numa = m.groups[static_cast<size_t>(s)];
    EXPECT_EQ(numa.kind, "numa");
    EXPECT_EQ(numa.numa, s);
    EXPECT_TRUE(numa.gpus.empty());
    EXPECT_DOUBLE_EQ(numa.uplink.gbs, 40);
    EXPECT_EQ(numa.uplink.type, LinkType::kSmp);
    ASSERT_EQ(numa.children.size(), 2u);
    for (int p = 0; p < 2; ++p) {
      const GroupSpec& sw = numa.children[static_cast<size_t>(p)];
      EXPECT_EQ(sw.kind, "pcie");
      EXPECT_EQ(sw.gpus, (std::vector<int>{s * 4 + p * 2, s * 4 + p * 2 + 1}));
      EXPECT_DOUBLE_EQ(sw.gpu_link_gbs, 32);
      EXPECT_EQ(sw.gpu_link_type, LinkType::kPcie);
      EXPECT_DOUBLE_EQ(sw.uplink.gbs, 32);
      EXPECT_EQ(sw.numa, s);
    }
  }
  EXPECT_EQ(m.nics, 2) << "no NIC is PIX/PXB to a GPU: every NIC column counts";
  ExpectSameGroups(m.groups, BuiltinNodeModel("l40s-pcie")->groups, "l40s-pcie");
  EXPECT_EQ(BuildsAsOneNode(m), 6);
}

TEST(NvsmiReader, NvlinkBridgePairsAcrossSockets) {
  NvsmiOptions options;
  options.link_gbs = 14;  // NVLink bridge of PCIe cards
  const NodeModel m = ReadOk(NvsmiFixture("nvlink_bridge_4.txt"), options);
  EXPECT_EQ(m.gpus, 4);
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].kind, "nvlink");
  EXPECT_EQ(m.groups[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(m.groups[0].numa, 0);
  EXPECT_EQ(m.groups[1].gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(m.groups[1].numa, 1);
  EXPECT_DOUBLE_EQ(m.groups[0].gpu_link_gbs, 4 * 14.0);
  EXPECT_DOUBLE_EQ(m.groups[0].uplink.gbs, 32);
  EXPECT_EQ(m.groups[0].uplink.type, LinkType::kPcie);
  EXPECT_EQ(m.nics, 1);
  NodeModel builtin = *BuiltinNodeModel("nvlink-bridge-4");
  for (GroupSpec& g : builtin.groups) g.numa = &g == &builtin.groups[0] ? 0 : 1;  // builtin has no NUMA labels
  ExpectSameGroups(m.groups, builtin.groups, "nvlink-bridge-4");
  EXPECT_EQ(BuildsAsOneNode(m), 2);
}

TEST(NvsmiReader, SpacesInsteadOfTabsReadTheSame) {
  const std::string tabs = NvsmiFixture("l40s_pcie.txt");
  std::string spaces;
  for (char c : tabs) spaces += c == '\t' ? std::string("    ") : std::string(1, c);
  ASSERT_EQ(spaces.find('\t'), std::string::npos);
  const NodeModel a = ReadOk(tabs), b = ReadOk(spaces);
  ExpectSameGroups(a.groups, b.groups, "spaces");
  EXPECT_EQ(a.nics, b.nics);
}

TEST(NvsmiReader, CrossSocketPairWithoutInfoColumnsHasNoGroups) {
  const NodeModel m = ReadOk("        GPU0    GPU1\nGPU0     X      SOC\nGPU1    SOC      X\n");
  EXPECT_EQ(m.gpus, 2);
  EXPECT_TRUE(m.groups.empty());
  EXPECT_DOUBLE_EQ(m.gpu_link_gbs, 32);
  EXPECT_EQ(m.nics, 0);
  EXPECT_EQ(BuildsAsOneNode(m), 0);
}

TEST(NvsmiReader, LoneGpuNextToAnNvlinkPairGetsItsOwnGroup) {
  const NodeModel m = ReadOk(
      "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV2\tPHB\t0-31\t0\n"
      "GPU1\tNV2\t X \tPHB\t0-31\t0\n"
      "GPU2\tPHB\tPHB\t X \t0-31\t0\n");
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].kind, "nvlink");
  EXPECT_DOUBLE_EQ(m.groups[0].gpu_link_gbs, 2 * 25.0);
  EXPECT_EQ(m.groups[1].kind, "pcie");
  EXPECT_EQ(m.groups[1].gpus, std::vector<int>{2});
  EXPECT_EQ(m.groups[1].numa, 0);
  EXPECT_EQ(BuildsAsOneNode(m), 2);
}

TEST(NvsmiReader, DirectNvlinkMeshIsNotAnNvSwitch) {
  // 4 GPUs, NV4 to every peer: 12 links per GPU fit on the GPU itself (no switch needed).
  const NodeModel m = ReadOk(
      "\tGPU0\tGPU1\tGPU2\tGPU3\n"
      "GPU0\t X \tNV4\tNV4\tNV4\n"
      "GPU1\tNV4\t X \tNV4\tNV4\n"
      "GPU2\tNV4\tNV4\t X \tNV4\n"
      "GPU3\tNV4\tNV4\tNV4\t X \n");
  ASSERT_EQ(m.groups.size(), 1u);
  EXPECT_EQ(m.groups[0].kind, "nvlink");
  EXPECT_DOUBLE_EQ(m.groups[0].gpu_link_gbs, 12 * 25.0);
  NvsmiOptions small;
  small.max_gpu_nvlinks = 6;  // a GPU with 6 links could not do this directly
  EXPECT_EQ(ReadOk("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\tNV4\nGPU1\tNV4\t X \tNV4\nGPU2\tNV4\tNV4\t X \n", small)
                .groups[0]
                .kind,
            "nvswitch");
}

TEST(NvsmiReader, NicCountOption) {
  NvsmiOptions options;
  options.nics = 4;
  options.nic_gbs = 25;
  const NodeModel m = ReadOk(NvsmiFixture("dgx_h100.txt"), options);
  EXPECT_EQ(m.nics, 4);
  EXPECT_DOUBLE_EQ(m.nic_gbs, 25);
}

// ---- errors ----------------------------------------------------------------------------------

struct NvsmiErrorCase {
  std::string name;
  std::string text;
  std::string where;
  std::string message;  // substring
};

void PrintTo(const NvsmiErrorCase& c, std::ostream* os) { *os << c.name; }

class NvsmiReaderErrors : public ::testing::TestWithParam<NvsmiErrorCase> {};

TEST_P(NvsmiReaderErrors, NamesFileLineAndProblem) {
  const NvsmiErrorCase& c = GetParam();
  auto model = ReadNvidiaSmiTopo(c.text, "topo.txt", {});
  ASSERT_FALSE(model.has_value()) << "read succeeded";
  EXPECT_EQ(model.error().where, c.where);
  EXPECT_THAT(model.error().message, HasSubstr(c.message));
}

const char kHeader[] = "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\n";

INSTANTIATE_TEST_SUITE_P(
    NvsmiInline, NvsmiReaderErrors,
    ::testing::Values(
        NvsmiErrorCase{"NoHeader", "Failed to initialize NVML: Driver/library version mismatch\n", "topo.txt",
                       "no header row starting with GPU0"},
        NvsmiErrorCase{"Empty", "", "topo.txt", "no header row"},
        NvsmiErrorCase{
            "NonSquareRow", std::string(kHeader) + "GPU0\t X \tNV4\n", "topo.txt:2",
            "row 'GPU0' has 2 cells, expected 3 matrix cells plus up to 2 informational ones (non-square matrix "
            "or truncated line)"},
        NvsmiErrorCase{"MissingCellShiftsInfoIntoMatrix", std::string(kHeader) + "GPU0\t X \tNV4\t0-7\t0\n",
                       "topo.txt:2", "unknown cell '0-7' in row 'GPU0', column 'NIC0'"},
        NvsmiErrorCase{"TooManyCells", std::string(kHeader) + "GPU0\t X \tNV4\tPIX\t0-7\t0\tPIX\n", "topo.txt:2",
                       "row 'GPU0' has 6 cells"},
        NvsmiErrorCase{"UnknownCell", std::string(kHeader) + "GPU0\t X \tNV4\tPCI\t0-7\t0\n", "topo.txt:2",
                       "unknown cell 'PCI' in row 'GPU0', column 'NIC0' (expected X, NV#, PIX, PXB, PHB, NODE or SYS)"},
        NvsmiErrorCase{"BadNvCount", std::string(kHeader) + "GPU0\t X \tNVx\tPIX\t0-7\t0\n", "topo.txt:2",
                       "unknown cell 'NVx'"},
        NvsmiErrorCase{
            "RowColumnGpuMismatch", std::string(kHeader) + "GPU0\t X \tNV4\tPIX\t0-7\t0\nNIC0\tPIX\tPIX\t X \n",
            "topo.txt:3",
            "row/column mismatch: row 2 is 'NIC0' but column 2 is 'GPU1' (header has 2 GPU and 1 NIC columns)"},
        NvsmiErrorCase{
            "Asymmetric",
            std::string(kHeader) + "GPU0\t X \tNV4\tPIX\t0-7\t0\nGPU1\tNV2\t X \tPIX\t0-7\t0\nNIC0\tPIX\tPIX\t X \n",
            "topo.txt:3", "asymmetric matrix: 'GPU0'->'GPU1' is 'NV4' (line 2) but 'GPU1'->'GPU0' is 'NV2'"},
        NvsmiErrorCase{"TruncatedRows", std::string(kHeader) + "GPU0\t X \tNV4\tPIX\t0-7\t0\n", "topo.txt:2",
                       "matrix ends after 1 of 3 device rows (missing row 'GPU1'): truncated file?"},
        NvsmiErrorCase{"TruncatedBeforeLegend",
                       std::string(kHeader) +
                           "GPU0\t X \tNV4\tPIX\t0-7\t0\nGPU1\tNV4\t X \tPIX\t0-7\t0\n\nLegend:\n\n  X    = Self\n",
                       "topo.txt:4", "matrix ends after 2 of 3 device rows (missing row 'NIC0')"},
        NvsmiErrorCase{"TruncatedMidRow",
                       std::string(kHeader) + "GPU0\t X \tNV4\tPIX\t0-7\t0\nGPU1\tNV4\t X \tPIX\t0-7\t0\nNIC0\tPIX\tPI",
                       "topo.txt:4", "row 'NIC0' has 2 cells, expected 3"},
        NvsmiErrorCase{"SelfOffDiagonal", "\tGPU0\tGPU1\nGPU0\t X \t X \nGPU1\t X \t X \n", "topo.txt:2",
                       "cell 'GPU0'/'GPU1' is X off the diagonal"},
        NvsmiErrorCase{"DiagonalNotSelf", "\tGPU0\tGPU1\nGPU0\tPIX\tPIX\nGPU1\tPIX\t X \n", "topo.txt:2",
                       "diagonal cell of 'GPU0' is 'PIX', expected X"},
        NvsmiErrorCase{"GpuColumnsOutOfOrder", "\tGPU0\tGPU2\nGPU0\t X \tPIX\nGPU2\tPIX\t X \n", "topo.txt:1",
                       "GPU column 'GPU2' out of order (expected GPU1)"},
        NvsmiErrorCase{"GpuAfterNic", "\tGPU0\tNIC0\tGPU1\n", "topo.txt:1",
                       "GPU column 'GPU1' after NIC column 'NIC0'"},
        NvsmiErrorCase{"ExtraRow", "\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV1\t X \nGPU2\tNV1\tNV1\t X \n", "topo.txt:4",
                       "unexpected 'GPU2' after the 2 device rows (non-square matrix?"},
        NvsmiErrorCase{"NvlinkToNic", "\tGPU0\tNIC0\nGPU0\t X \tNV2\nNIC0\tNV2\t X \n", "topo.txt:2",
                       "NVLink cell 'NV2' between 'GPU0' and 'NIC0'"}),
    [](const ::testing::TestParamInfo<NvsmiErrorCase>& info) { return info.param.name; });

TEST(NvsmiReader, RejectsBadOptions) {
  NvsmiOptions options;
  options.link_gbs = 0;
  auto m = ReadNvidiaSmiTopo(NvsmiFixture("dgx_h100.txt"), "dgx_h100.txt", options);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().where, "options.link_gbs");
  options = {};
  options.model_name = "";
  m = ReadNvidiaSmiTopo(NvsmiFixture("dgx_h100.txt"), "dgx_h100.txt", options);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().where, "options.model_name");
}

}  // namespace
}  // namespace phalanx
