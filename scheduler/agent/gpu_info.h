// What the agent knows about this node's GPUs, reported in RegisterRequest.gpus.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phalanx::agent {

// A PCI address; `function` is 0 for every GPU in practice.
struct PciAddress {
  uint32_t domain = 0, bus = 0, device = 0, function = 0;
  friend bool operator==(const PciAddress&, const PciAddress&) = default;
};

struct GpuDevice {
  uint32_t index = 0;  // local index = NVML index = CUDA index under PCI_BUS_ID order
  std::string uuid;    // "GPU-..." (empty for declared GPUs)
  std::string name;    // "NVIDIA H100 80GB HBM3" (empty for declared GPUs)
  uint64_t memory_bytes = 0;
  bool has_pci = false;
  PciAddress pci;
  int numa_node = -1;                  // -1: unknown
  std::vector<uint32_t> nvlink_peers;  // local indices, sorted
};

struct GpuInventory {
  std::vector<GpuDevice> gpus;
  std::string source;              // "nvml" or "config"
  std::vector<std::string> notes;  // why NVML was not used, mismatches: for the log
};

}  // namespace phalanx::agent
