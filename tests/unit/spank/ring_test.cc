// phx_ring_order (plugins/spank/ring.h): CUDA_VISIBLE_DEVICES along the ring of best predicted
// bandwidth for the GPUs Slurm gave, from `nvidia-smi topo -m` of the node.
#include "ring.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(PHALANX_FIXTURES) + "/nvsmi/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

// "" on failure, with the error in *err.
std::string Order(const std::string& matrix, const char* visible, const char* gpus = nullptr,
                  std::string* err = nullptr) {
  char out[256], why[256] = "";
  if (phx_ring_order(matrix.c_str(), visible, gpus, out, sizeof out, why, sizeof why) < 0) {
    if (err) *err = why;
    return "";
  }
  return out;
}

// 8 GPUs, 0-3 on CPU 0 and 4-7 on CPU 1; NVLink bridges pair 0-2, 1-3, 4-6, 5-7; PIX within a CPU.
const std::string kPairs =
    "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tCPU Affinity\n"
    "GPU0\t X \tPIX\tNV4\tPIX\tSYS\tSYS\tSYS\tSYS\t0-15\n"
    "GPU1\tPIX\t X \tPIX\tNV4\tSYS\tSYS\tSYS\tSYS\t0-15\n"
    "GPU2\tNV4\tPIX\t X \tPIX\tSYS\tSYS\tSYS\tSYS\t0-15\n"
    "GPU3\tPIX\tNV4\tPIX\t X \tSYS\tSYS\tSYS\tSYS\t0-15\n"
    "GPU4\tSYS\tSYS\tSYS\tSYS\t X \tPIX\tNV4\tPIX\t16-31\n"
    "GPU5\tSYS\tSYS\tSYS\tSYS\tPIX\t X \tPIX\tNV4\t16-31\n"
    "GPU6\tSYS\tSYS\tSYS\tSYS\tNV4\tPIX\t X \tPIX\t16-31\n"
    "GPU7\tSYS\tSYS\tSYS\tSYS\tPIX\tNV4\tPIX\t X \t16-31\n";

TEST(SpankRing, NvlinkPairsBecomeNeighbours) {
  // Slurm's 0,1,2,3 has four PCIe hops; 0,1,3,2 has two NVLink hops (1-3, 2-0) and two PCIe.
  EXPECT_EQ(Order(kPairs, "0,1,2,3"), "0,1,3,2");
  // Across the CPUs the ring crosses the SMP link twice, not four times, and pairs stay together
  // (0-4 SYS, 4-6 NV, 6-2 SYS, 2-0 NV; a ring read either way is the same ring).
  EXPECT_EQ(Order(kPairs, "0,4,2,6"), "0,4,6,2");
  // All 8: four NVLink hops (1-3, 4-6, 5-7, 2-0), the SMP link crossed twice (3-4, 7-2).
  EXPECT_EQ(Order(kPairs, "0,1,2,3,4,5,6,7"), "0,1,3,4,6,5,7,2");
}

TEST(SpankRing, RenumberedDevicesFollowTheirNodeGpus) {
  // With device cgroups CUDA numbers the step's GPUs 0..n-1: the order comes from the node's
  // indices (SLURM_STEP_GPUS), the names written are CUDA_VISIBLE_DEVICES's.
  EXPECT_EQ(Order(kPairs, "0,1,2,3", "4,5,6,7"), "0,1,3,2");
  EXPECT_EQ(Order(kPairs, "0,1,2,3", "0,4,2,6"), "0,1,3,2");  // node GPUs 0,4,6,2
}

TEST(SpankRing, NothingMovesWithoutAReason) {
  const std::string h100 = Fixture("dgx_h100.txt");  // NVSwitch: every pair NV18
  EXPECT_EQ(Order(h100, "3,1,2,0"), "3,1,2,0");
  EXPECT_EQ(Order(h100, "0,1,2,3,4,5,6,7"), "0,1,2,3,4,5,6,7");
  EXPECT_EQ(Order(kPairs, "0,2"), "0,2");  // two GPUs: one ring
  EXPECT_EQ(Order(kPairs, "5"), "5");
}

TEST(SpankRing, RealBridgeBoxAndPcieBox) {
  // nvlink_bridge_4: NV4 pairs 0-1 and 2-3 on different CPUs: 0-2 SYS, 2-3 NV, 3-1 SYS, 1-0 NV.
  EXPECT_EQ(Order(Fixture("nvlink_bridge_4.txt"), "0,2,1,3"), "0,2,3,1");
  // l40s_pcie: PIX pairs 0-1, 2-3 (NODE between them) on CPU 0; 4-7 on CPU 1.
  EXPECT_EQ(Order(Fixture("l40s_pcie.txt"), "0,2,1,3"), "0,2,3,1");  // PIX hops 2-3, 1-0
  EXPECT_EQ(Order(Fixture("l40s_pcie.txt"), "0,4,1,5"), "0,4,5,1");  // SYS crossed twice, not four times
}

TEST(SpankRing, ErrorsSayWhat) {
  std::string err;
  EXPECT_EQ(Order("nothing here\n", "0,1", nullptr, &err), "");
  EXPECT_EQ(err, "gpu_topology: no header line with GPU0 ...");
  EXPECT_EQ(Order("\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tQQ\t X \n", "0,1", nullptr, &err), "");
  EXPECT_EQ(err, "gpu_topology line 3: unknown link 'QQ'");
  EXPECT_EQ(Order("\tGPU0\tGPU1\nGPU0\t X \tNV4\n", "0,1", nullptr, &err), "");
  EXPECT_EQ(err, "gpu_topology: 1 GPU rows missing");
  EXPECT_EQ(Order(kPairs, "0,9", nullptr, &err), "");
  EXPECT_EQ(err, "GPU 9 is not in gpu_topology");
  EXPECT_EQ(Order(kPairs, "0,1", "0", &err), "");
  EXPECT_EQ(err, "CUDA_VISIBLE_DEVICES has 2 GPUs, the GPU list 1");
  EXPECT_EQ(Order(kPairs, "0,,1", nullptr, &err), "");
  EXPECT_EQ(err, "CUDA_VISIBLE_DEVICES '0,,1' is not a list");
  EXPECT_EQ(Order(kPairs, "1,1", nullptr, &err), "");
  EXPECT_EQ(err, "GPU 1 is listed twice");
}

}  // namespace
