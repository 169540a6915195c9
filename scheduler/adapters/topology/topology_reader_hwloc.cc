#include "adapters/topology/topology_reader_hwloc.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace phalanx {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct FoundGpu {
  std::tuple<unsigned, unsigned, unsigned, unsigned> busid;  // domain, bus, dev, func
  uint64_t root_port = 0;   // gp_index of the bridge right below the host bridge
  int numa = -1;
};

bool Contains(const std::vector<unsigned>& ids, unsigned id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

bool HasOsdev(hwloc_obj_t pci, hwloc_obj_osdev_type_t a, hwloc_obj_osdev_type_t b) {
  for (hwloc_obj_t c = pci->io_first_child; c != nullptr; c = c->next_sibling) {
    if (c->type == HWLOC_OBJ_OS_DEVICE && (c->attr->osdev.type == a || c->attr->osdev.type == b)) return true;
  }
  return false;
}

// The bridge right below the host bridge above `pci` (its root port); `pci` itself when it sits
// directly on the host bridge.
hwloc_obj_t RootPort(hwloc_obj_t pci) {
  hwloc_obj_t port = pci;
  for (hwloc_obj_t p = pci->parent; p != nullptr && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
    if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) break;
    port = p;
  }
  return port;
}

// NUMA node of the CPU-side object the device hangs off, -1 when that spans several.
int NumaOf(hwloc_topology_t topo, hwloc_obj_t pci) {
  hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topo, pci);
  if (cpu_side == nullptr || cpu_side->nodeset == nullptr || hwloc_bitmap_weight(cpu_side->nodeset) != 1) return -1;
  return hwloc_bitmap_first(cpu_side->nodeset);
}

std::string FileStem(std::string_view filename) {
  const size_t slash = filename.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? filename : filename.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string_view::npos && dot > 0) base = base.substr(0, dot);
  return std::string(base.empty() ? "node" : base);
}

// hwloc reports a failed XML import without a position. This finds the first place where the
// tags do not nest (or the text ends with tags open), to give the admin a line to look at.
// Returns 0 when the tags look balanced.
int FirstTagProblemLine(std::string_view text, std::string* what) {
  std::vector<std::pair<std::string_view, int>> open;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    if (text[i] != '<') continue;
    const int tag_line = line;
    auto skip_to = [&](std::string_view end) -> bool {
      const size_t pos = text.find(end, i);
      if (pos == std::string_view::npos) return false;
      line += static_cast<int>(std::count(text.begin() + static_cast<std::ptrdiff_t>(i), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
      i = pos + end.size() - 1;
      return true;
    };
    if (text.substr(i, 4) == "<!--") {
      if (!skip_to("-->")) return *what = "unterminated comment", tag_line;
      continue;
    }
    if (!skip_to(">")) return *what = "unterminated tag", tag_line;
    std::string_view tag = text.substr(0, i + 1);
    tag = tag.substr(tag.rfind('<', i));
    if (tag.size() < 3 || tag[1] == '?' || tag[1] == '!' || tag[tag.size() - 2] == '/') continue;
    const bool closing = tag[1] == '/';
    const size_t name_start = closing ? 2 : 1;
    const size_t name_end = tag.find_first_of(" \t\r\n/>", name_start);
    const std::string_view name = tag.substr(name_start, name_end - name_start);
    if (!closing) {
      open.emplace_back(name, tag_line);
    } else if (open.empty() || open.back().first != name) {
      *what = "closing tag </" + std::string(name) + "> does not match " +
              (open.empty() ? std::string("any open tag") : "<" + std::string(open.back().first) + "> opened at line " + std::to_string(open.back().second));
      return tag_line;
    } else {
      open.pop_back();
    }
  }
  if (!open.empty()) {
    *what = "<" + std::string(open.back().first) + "> is never closed";
    return open.back().second;
  }
  return 0;
}

Status CheckOptions(const HwlocOptions& o) {
  const std::pair<const char*, double> values[] = {{"gpu_link_gbs", o.gpu_link_gbs}, {"pcie_uplink_gbs", o.pcie_uplink_gbs},
                                                   {"numa_uplink_gbs", o.numa_uplink_gbs}, {"nvswitch_gbs", o.nvswitch_gbs},
                                                   {"nic_gbs", o.nic_gbs}};
  for (const auto& [name, value] : values) {
    if (!std::isfinite(value) || value <= 0) return Fail(std::string("hwloc options.") + name, "must be a positive bandwidth (got " + std::to_string(value) + ")");
  }
  return {};
}

}  // namespace

Result<NodeModel> ReadHwlocXml(std::string_view xml_text, std::string_view filename, const HwlocOptions& options) {
  const std::string file(filename);
  if (auto s = CheckOptions(options); !s) return std::unexpected(s.error());
  if (xml_text.find('\0') != std::string_view::npos) return Fail(file, "not an hwloc XML file: contains NUL bytes");
  if (xml_text.size() >= static_cast<size_t>(INT_MAX)) return Fail(file, "hwloc XML too large");

  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return Fail(file, "hwloc_topology_init failed");
  TopologyPtr topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  const std::string buffer(xml_text);  // hwloc wants the terminating NUL counted in the size
  if (hwloc_topology_set_xmlbuffer(raw, buffer.c_str(), static_cast<int>(buffer.size() + 1)) != 0 || hwloc_topology_load(raw) != 0) {
    const int err = errno;
    std::string what;
    if (const int line = FirstTagProblemLine(xml_text, &what); line > 0) return Fail(file + ":" + std::to_string(line), "malformed XML: " + what);
    return Fail(file, std::string("hwloc cannot load this XML (") + std::strerror(err) +
                          "); expected the output of `lstopo --of xml` from hwloc 2.x");
  }

  std::vector<FoundGpu> gpus;
  int nics = 0;
  bool nvswitch = false;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(raw, nullptr); pci != nullptr; pci = hwloc_get_next_pcidev(raw, pci)) {
    const hwloc_pcidev_attr_s& a = pci->attr->pcidev;
    const unsigned base_class = a.class_id >> 8;
    if (Contains(options.gpu_vendor_ids, a.vendor_id)) {
      if (a.vendor_id == 0x10de && a.class_id == 0x0680) {
        nvswitch = true;
      } else if (base_class == 0x03 || HasOsdev(pci, HWLOC_OBJ_OSDEV_GPU, HWLOC_OBJ_OSDEV_COPROC)) {
        FoundGpu g;
        g.busid = {a.domain, a.bus, a.dev, a.func};
        g.root_port = RootPort(pci)->gp_index;
        g.numa = NumaOf(raw, pci);
        gpus.push_back(g);
      }
    }
    if (base_class == 0x02 && (Contains(options.nic_vendor_ids, a.vendor_id) || HasOsdev(pci, HWLOC_OBJ_OSDEV_OPENFABRICS, HWLOC_OBJ_OSDEV_OPENFABRICS))) {
      ++nics;
    }
  }
  if (gpus.empty()) {
    return Fail(file, "no GPUs found (no PCI device of the GPU vendors with a display class or a cuda/nvml/opencl device; "
                      "was lstopo run with I/O discovery, i.e. without --no-io?)");
  }
  if (gpus.size() > 1024) return Fail(file, "too many GPUs (" + std::to_string(gpus.size()) + ")");
  std::sort(gpus.begin(), gpus.end(), [](const FoundGpu& x, const FoundGpu& y) { return x.busid < y.busid; });

  NodeModel m;
  m.name = options.model_name.empty() ? "hwloc-" + FileStem(filename) : options.model_name;
  m.gpus = static_cast<int>(gpus.size());
  m.gpu_link_gbs = options.gpu_link_gbs;
  m.gpu_link_type = LinkType::kPcie;
  m.nics = options.nics >= 0 ? options.nics : nics;
  m.nic_gbs = options.nic_gbs;
  m.nic_type = LinkType::kInfiniband;

  if (nvswitch) {
    GroupSpec g;
    g.kind = "nvswitch";
    g.gpu_link_gbs = options.nvswitch_gbs;
    g.gpu_link_type = LinkType::kNvlink;
    for (int i = 0; i < m.gpus; ++i) g.gpus.push_back(i);
    m.groups.push_back(std::move(g));
    return m;
  }

  // numa -> root port -> local GPU indices. Groups keep the order of their first GPU, so the
  // GPU ids Topology assigns follow the bus order wherever the hardware allows.
  std::vector<int> numa_order;
  std::map<int, std::vector<uint64_t>> ports_of_numa;
  std::map<uint64_t, std::vector<int>> gpus_of_port;
  for (int i = 0; i < m.gpus; ++i) {
    const FoundGpu& g = gpus[static_cast<size_t>(i)];
    if (std::find(numa_order.begin(), numa_order.end(), g.numa) == numa_order.end()) numa_order.push_back(g.numa);
    auto& ports = ports_of_numa[g.numa];
    if (std::find(ports.begin(), ports.end(), g.root_port) == ports.end()) ports.push_back(g.root_port);
    gpus_of_port[g.root_port].push_back(i);
  }
  for (int numa : numa_order) {
    GroupSpec numa_group;
    numa_group.kind = "numa";
    numa_group.numa = numa;
    numa_group.uplink = LinkSpec{options.numa_uplink_gbs, 0, 0, LinkType::kSmp};
    for (uint64_t port : ports_of_numa[numa]) {
      GroupSpec sw;
      sw.kind = "pcie";
      sw.numa = numa;
      sw.gpus = gpus_of_port[port];
      sw.gpu_link_gbs = options.gpu_link_gbs;
      sw.gpu_link_type = LinkType::kPcie;
      sw.uplink = LinkSpec{options.pcie_uplink_gbs, 0, 0, LinkType::kPcie};
      numa_group.children.push_back(std::move(sw));
    }
    m.groups.push_back(std::move(numa_group));
  }
  return m;
}

}  // namespace phalanx
