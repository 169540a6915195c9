#include "agent/pci_numa.h"

#include <hwloc.h>

#include <memory>

namespace phalanx::agent {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};

int NumaOf(hwloc_topology_t topo, hwloc_obj_t pci) {
  hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topo, pci);
  if (cpu_side == nullptr || cpu_side->nodeset == nullptr || hwloc_bitmap_weight(cpu_side->nodeset) != 1) return -1;
  return hwloc_bitmap_first(cpu_side->nodeset);
}

}  // namespace

Result<std::vector<PciDevice>> ReadPciDevices(const std::string& xml_file) {
  const std::string where = xml_file.empty() ? "hwloc" : xml_file;
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return Fail(where, "hwloc_topology_init failed");
  std::unique_ptr<hwloc_topology, TopologyDeleter> topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (!xml_file.empty() && hwloc_topology_set_xml(raw, xml_file.c_str()) != 0) {
    return Fail(where, "cannot read hwloc XML");
  }
  if (hwloc_topology_load(raw) != 0) return Fail(where, "hwloc_topology_load failed");
  std::vector<PciDevice> out;
  for (hwloc_obj_t obj = hwloc_get_next_pcidev(raw, nullptr); obj != nullptr; obj = hwloc_get_next_pcidev(raw, obj)) {
    const auto& p = obj->attr->pcidev;
    PciDevice dev;
    dev.address = PciAddress{p.domain, p.bus, p.dev, p.func};
    dev.vendor_id = p.vendor_id;
    dev.class_id = p.class_id;
    dev.numa_node = NumaOf(raw, obj);
    out.push_back(dev);
  }
  return out;
}

}  // namespace phalanx::agent
