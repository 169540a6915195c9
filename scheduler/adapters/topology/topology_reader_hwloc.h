// hwloc XML -> NodeModel: the inside of one GPU server as `lstopo --of xml` (hwloc 2.x) saw it.
//
// GPUs are the PCI functions of a GPU vendor (NVIDIA 0x10de by default) with a display/3D class
// (0x03xx) or carrying a GPU/CoProc OS device ("cuda*", "nvml*", "opencl*"). They are numbered
// by PCI bus id (the CUDA_DEVICE_ORDER=PCI_BUS_ID order) and grouped by PCIe root port (the
// bridge right below the host bridge: every GPU behind one root port shares its x16 link, whether
// a PCIe switch sits there or not), and those groups by NUMA node:
//   numa (uplink SMP) -> pcie (uplink PCIe) -> GPU (link PCIe)
// When the XML shows NVIDIA NVSwitch PCI functions (class 0x0680), the GPUs are on an NVSwitch
// baseboard (HGX): the model is one "nvswitch" group at `nvswitch_gbs` instead.
// NICs are the network-class PCI functions of Mellanox/NVIDIA networking (0x15b3) or carrying an
// OpenFabrics OS device. hwloc does not record NIC speeds or NVLink topology: those come from
// the options.
//
// Thread-safety: pure function (each call loads its own hwloc topology).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"
#include "core/topology/spec.h"

namespace phalanx {

struct HwlocOptions {
  std::string model_name;  // empty: "hwloc-<file stem>"
  std::vector<unsigned> gpu_vendor_ids = {0x10de};
  std::vector<unsigned> nic_vendor_ids = {0x15b3};
  // GB/s per direction; defaults match scheduler/core/topology/node_models.cc.
  double gpu_link_gbs = 32;     // PCIe Gen4 x16, GPU to its switch
  double pcie_uplink_gbs = 32;  // root port / switch uplink
  double numa_uplink_gbs = 40;  // socket-to-socket (UPI/xGMI)
  double nvswitch_gbs = 450;    // per GPU, when NVSwitches are present
  double nic_gbs = 50;          // per NIC (NDR 400 Gb/s)
  int nics = -1;                // >= 0: override the NIC count found in the XML
};

// Fails on: XML that hwloc cannot load (the message names `filename`), a topology without GPUs,
// more than 1024 GPUs, bad option values.
Result<NodeModel> ReadHwlocXml(std::string_view xml_text, std::string_view filename, const HwlocOptions& options);

}  // namespace phalanx
