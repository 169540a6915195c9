#include "agent/gpu_discovery.h"

#include "agent/nvml_reader.h"
#include "agent/pci_numa.h"

namespace phalanx::agent {

GpuInventory DiscoverGpus(const GpuDiscoveryOptions& options) {
  GpuInventory inv;
  if (!options.nvml_library.empty()) {
    auto gpus = ReadNvmlGpus(options.nvml_library);
    if (!gpus) {
      inv.notes.push_back("NVML not used: " + gpus.error().ToString());
    } else if (gpus->empty()) {
      inv.notes.push_back("NVML reports no GPUs");
    } else {
      inv.gpus = *std::move(gpus);
      inv.source = "nvml";
      if (!options.declared.empty() && options.declared.size() != inv.gpus.size()) {
        inv.notes.push_back("--gpus declares " + std::to_string(options.declared.size()) + " GPUs but NVML reports " +
                            std::to_string(inv.gpus.size()) + "; using NVML's");
      }
    }
  }
  if (inv.source.empty()) {
    inv.source = "config";
    for (uint32_t index : options.declared) {
      GpuDevice gpu;
      gpu.index = index;
      inv.gpus.push_back(std::move(gpu));
    }
  }
  if (!options.use_hwloc || inv.gpus.empty()) return inv;

  auto pci = ReadPciDevices(options.hwloc_xml);
  if (!pci) {
    inv.notes.push_back("no NUMA affinity: " + pci.error().ToString());
    return inv;
  }
  std::vector<const PciDevice*> nvidia;
  for (const PciDevice& dev : *pci) {
    if (dev.IsNvidiaGpu()) nvidia.push_back(&dev);
  }
  for (GpuDevice& gpu : inv.gpus) {
    if (gpu.has_pci) {
      for (const PciDevice& dev : *pci) {
        if (dev.address == gpu.pci) gpu.numa_node = dev.numa_node;
      }
    } else if (gpu.index < nvidia.size()) {
      gpu.numa_node = nvidia[gpu.index]->numa_node;
      gpu.pci = nvidia[gpu.index]->address;
      gpu.has_pci = true;
    }
  }
  return inv;
}

}  // namespace phalanx::agent
