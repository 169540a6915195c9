// GPU discovery without a GPU: the NVML path through a fake libnvidia-ml (fake_nvml.cc), the
// missing-library and failing-init fallbacks to declared GPUs, and NUMA affinity from an hwloc
// XML fixture and from this machine.
#include "agent/gpu_discovery.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "agent/agent_flags.h"
#include "agent/nvml_reader.h"
#include "agent/pci_numa.h"

namespace phalanx::agent {
namespace {

const std::string kFixtureXml = std::string(PHALANX_FIXTURES) + "/hwloc/2socket-8gpu-4sw.xml";

bool NoteContains(const GpuInventory& inv, const std::string& text) {
  for (const std::string& note : inv.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(GpuDiscovery, FakeNvmlGivesGpusPeersAndNuma) {
  GpuDiscoveryOptions options;
  options.nvml_library = FAKE_NVML_LIBRARY;
  options.hwloc_xml = kFixtureXml;
  const GpuInventory inv = DiscoverGpus(options);
  ASSERT_EQ(inv.source, "nvml");
  ASSERT_EQ(inv.gpus.size(), 4u);
  EXPECT_EQ(inv.gpus[0].uuid, "GPU-fake-0");
  EXPECT_EQ(inv.gpus[3].uuid, "GPU-fake-3");
  EXPECT_EQ(inv.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(inv.gpus[0].memory_bytes, 85899345920ULL);
  EXPECT_EQ(inv.gpus[2].pci.bus, 0x9bu);
  EXPECT_EQ(inv.gpus[0].nvlink_peers, std::vector<uint32_t>{1});
  EXPECT_EQ(inv.gpus[1].nvlink_peers, std::vector<uint32_t>{0});
  EXPECT_EQ(inv.gpus[2].nvlink_peers, std::vector<uint32_t>{3});  // through the NVSwitch
  EXPECT_EQ(inv.gpus[3].nvlink_peers, std::vector<uint32_t>{2});
  EXPECT_EQ(inv.gpus[0].numa_node, 0);
  EXPECT_EQ(inv.gpus[1].numa_node, 0);
  EXPECT_EQ(inv.gpus[2].numa_node, 1);
  EXPECT_EQ(inv.gpus[3].numa_node, 1);
}

TEST(GpuDiscovery, NvmlWinsOverADeclaredCountButSaysSo) {
  GpuDiscoveryOptions options;
  options.nvml_library = FAKE_NVML_LIBRARY;
  options.declared = {0, 1};
  options.use_hwloc = false;
  const GpuInventory inv = DiscoverGpus(options);
  EXPECT_EQ(inv.source, "nvml");
  EXPECT_EQ(inv.gpus.size(), 4u);
  EXPECT_TRUE(NoteContains(inv, "--gpus declares 2 GPUs but NVML reports 4"));
}

TEST(GpuDiscovery, MissingNvmlFallsBackToDeclaredGpus) {
  GpuDiscoveryOptions options;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  options.declared = {0, 1, 3};
  const GpuInventory inv = DiscoverGpus(options);
  EXPECT_EQ(inv.source, "config");
  ASSERT_EQ(inv.gpus.size(), 3u);
  EXPECT_EQ(inv.gpus[2].index, 3u);
  EXPECT_TRUE(inv.gpus[0].uuid.empty());
  EXPECT_TRUE(NoteContains(inv, "/nonexistent/libnvidia-ml.so.1: cannot open shared object file")) << inv.notes[0];
}

TEST(GpuDiscovery, FailingNvmlInitFallsBack) {
  setenv("FAKE_NVML_INIT", "9", 1);
  auto gpus = ReadNvmlGpus(FAKE_NVML_LIBRARY);
  unsetenv("FAKE_NVML_INIT");
  ASSERT_FALSE(gpus);
  EXPECT_EQ(gpus.error().message, "nvmlInit_v2: Driver Not Loaded");
}

TEST(GpuDiscovery, DeclaredGpusTakeNumaFromHwlocInPciOrder) {
  GpuDiscoveryOptions options;
  options.nvml_library = "";
  options.declared = {0, 1, 2, 3, 4, 5, 6, 7};
  options.hwloc_xml = kFixtureXml;
  const GpuInventory inv = DiscoverGpus(options);
  ASSERT_EQ(inv.gpus.size(), 8u);
  EXPECT_EQ(inv.gpus[0].numa_node, 0);
  EXPECT_EQ(inv.gpus[3].numa_node, 0);
  EXPECT_EQ(inv.gpus[4].numa_node, 1);
  EXPECT_EQ(inv.gpus[7].numa_node, 1);
  EXPECT_EQ(inv.gpus[4].pci.bus, 0x9bu);
}

// This machine's hwloc (no XML): declared GPU i takes the i-th NVIDIA GPU hwloc sees here, its
// PCI address and NUMA node, or stays unknown (-1) where there is none (a machine without
// NVIDIA GPUs). The expectation is what hwloc reports here, so it holds on any machine.
TEST(GpuDiscovery, DeclaredGpusOnThisMachineFollowItsNvidiaDevices) {
  auto pci = ReadPciDevices("");
  ASSERT_TRUE(pci) << pci.error().ToString();
  std::vector<PciDevice> nvidia;
  for (const PciDevice& dev : *pci) {
    if (dev.IsNvidiaGpu()) nvidia.push_back(dev);
  }
  GpuDiscoveryOptions options;
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  options.declared = {0, 1};
  const GpuInventory inv = DiscoverGpus(options);
  ASSERT_EQ(inv.gpus.size(), 2u);
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    SCOPED_TRACE("declared GPU " + std::to_string(i) + ", " + std::to_string(nvidia.size()) + " NVIDIA GPUs here");
    if (i < nvidia.size()) {
      EXPECT_TRUE(inv.gpus[i].has_pci);
      EXPECT_EQ(inv.gpus[i].pci, nvidia[i].address);
      EXPECT_EQ(inv.gpus[i].numa_node, nvidia[i].numa_node);
    } else {
      EXPECT_FALSE(inv.gpus[i].has_pci);
      EXPECT_EQ(inv.gpus[i].numa_node, -1);
    }
  }
}

TEST(GpuDiscovery, NothingDeclaredNoNvmlIsACpuNode) {
  GpuDiscoveryOptions options;
  options.nvml_library = "";
  const GpuInventory inv = DiscoverGpus(options);
  EXPECT_EQ(inv.source, "config");
  EXPECT_TRUE(inv.gpus.empty());
}

TEST(GpuList, CountOrIndices) {
  EXPECT_EQ(*ParseGpuList("4"), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(*ParseGpuList("0,2,5"), (std::vector<uint32_t>{0, 2, 5}));
  EXPECT_EQ(ParseGpuList("0,,1").error().ToString(), "--gpus: '' is not a whole number");
  EXPECT_EQ(ParseGpuList("1,1").error().ToString(), "--gpus: GPU 1 is listed twice");
  EXPECT_EQ(ParseGpuList("eight").error().ToString(), "--gpus: 'eight' is not a whole number");
}

}  // namespace
}  // namespace phalanx::agent
