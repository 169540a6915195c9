// DiscoverGpus: this node's GPUs for RegisterRequest. NVML first (source "nvml"); when NVML is
// absent or fails, the GPUs the admin declared with --gpus (source "config"). NUMA affinity
// from hwloc: by PCI address for NVML GPUs; for declared GPUs, declared index i takes the i-th
// NVIDIA GPU in PCI order (NVML's order) when hwloc sees enough of them, else -1.
// Never fails: what went wrong is in GpuInventory::notes (for the log).
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/gpu_info.h"

namespace phalanx::agent {

struct GpuDiscoveryOptions {
  std::string nvml_library = "libnvidia-ml.so.1";  // "" skips NVML; a test may name a fake
  std::vector<uint32_t> declared;                  // --gpus: local indices
  std::string hwloc_xml;                           // "" this machine
  bool use_hwloc = true;
};

GpuInventory DiscoverGpus(const GpuDiscoveryOptions& options);

}  // namespace phalanx::agent
