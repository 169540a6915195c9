// PCI devices and the NUMA node each hangs off, from hwloc: the live machine, or an exported
// hwloc XML file (tests, or an admin's override).
// Thread-safety: thread-safe (each call builds and frees its own hwloc topology).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/gpu_info.h"
#include "core/common/result.h"

namespace phalanx::agent {

struct PciDevice {
  PciAddress address;
  uint16_t vendor_id = 0;
  uint16_t class_id = 0;  // 0x0300 VGA, 0x0302 3D controller, ...
  int numa_node = -1;     // -1: unknown or more than one

  bool IsNvidiaGpu() const { return vendor_id == 0x10de && (class_id == 0x0300 || class_id == 0x0302); }
};

// In hwloc's (PCI) order. `xml_file` empty: this machine. Fails naming the file on a bad XML.
Result<std::vector<PciDevice>> ReadPciDevices(const std::string& xml_file);

}  // namespace phalanx::agent
