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
#include <type_traits>
#include <vector>

#include "core/topology/limits.h"
#include "util/strings.h"

namespace phalanx {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct FoundGpu {
  std::tuple<unsigned, unsigned, unsigned, unsigned> busid;  // domain, bus, dev, func
  uint64_t root_port = 0;                                    // gp_index of the bridge right below the host bridge
  int numa = -1;
};

bool Contains(const std::vector<unsigned>& ids, unsigned id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// An enum attribute as the number stored in it. hwloc's XML importer copies the numbers of
// osdev_type and bridge_type from the file without checking them, so the field may hold a value
// that is no enumerator, and reading it as the enum is undefined (found by tests/fuzz: a bridge
// type of 2).
template <typename Enum>
std::underlying_type_t<Enum> Raw(const Enum& e) {
  std::underlying_type_t<Enum> v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

bool HasOsdev(hwloc_obj_t pci, hwloc_obj_osdev_type_t a, hwloc_obj_osdev_type_t b) {
  for (hwloc_obj_t c = pci->io_first_child; c != nullptr; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE) continue;
    const auto type = Raw(c->attr->osdev.type);
    if (type == Raw(a) || type == Raw(b)) return true;
  }
  return false;
}

// The bridge right below the host bridge above `pci` (its root port); `pci` itself when it sits
// directly on the host bridge.
hwloc_obj_t RootPort(hwloc_obj_t pci) {
  hwloc_obj_t port = pci;
  for (hwloc_obj_t p = pci->parent; p != nullptr && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
    if (Raw(p->attr->bridge.upstream_type) == Raw(HWLOC_OBJ_BRIDGE_HOST)) break;
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

// A set as hwloc writes it: "0x" and up to 16 hex digits, comma-separated chunks of them.
bool IsHexBitmap(std::string_view v) {
  if (v.empty()) return false;
  size_t i = 0;
  while (i < v.size()) {
    if (v.substr(i, 2) != "0x") return false;
    i += 2;
    const size_t digits = v.find_first_not_of("0123456789abcdefABCDEF", i);
    const size_t stop = digits == std::string_view::npos ? v.size() : digits;
    if (stop == i || stop - i > 16) return false;
    i = stop;
    if (i < v.size()) {
      if (v[i] != ',') return false;
      ++i;
      if (i == v.size()) return false;
    }
  }
  return true;
}

bool IsCpuSideType(std::string_view type) {
  static constexpr std::string_view kTypes[] = {
      "Machine", "Package", "Die",     "Core",     "PU",       "Group",    "NUMANode", "MemCache", "L1Cache", "L2Cache",
      "L3Cache", "L4Cache", "L5Cache", "L1iCache", "L2iCache", "L3iCache", "Socket",   "Cache",    "System",  "Node"};
  return std::find(std::begin(kTypes), std::end(kTypes), type) != std::end(kTypes);
}

// Parses the attributes of `tag` (the text between the name and the closing ">" or "/>").
bool ParseAttributes(std::string_view body, std::vector<std::pair<std::string_view, std::string_view>>* out,
                     std::string* what) {
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (true) {
    while (i < body.size() && space(body[i])) ++i;
    if (i == body.size() || body[i] == '/' || body[i] == '?') return true;
    const size_t name_start = i;
    while (i < body.size() && !space(body[i]) && body[i] != '=' && body[i] != '>' && body[i] != '/') ++i;
    const std::string_view name = body.substr(name_start, i - name_start);
    if (name.empty() || i == body.size() || body[i] != '=' || i + 1 >= body.size() ||
        (body[i + 1] != '"' && body[i + 1] != '\'')) {
      *what = "malformed attribute '" +
              std::string(body.substr(name_start, std::min<size_t>(40, body.size() - name_start))) + "'";
      return false;
    }
    const char quote = body[i + 1];
    const size_t value_start = i + 2;
    const size_t value_end = body.find(quote, value_start);
    if (value_end == std::string_view::npos)
      return *what = "unterminated attribute value of '" + std::string(name) + "'", false;
    out->emplace_back(name, body.substr(value_start, value_end - value_start));
    i = value_end + 1;
  }
}

// hwloc's XML importer trusts its input: hwloc 2.9 crashes (SIGSEGV) on a well-formed file
// whose CPU-side object lacks one of its sets, asserts on a malformed set and allocates what a
// huge count says. This pass checks what hwloc relies on, before hwloc sees the text, and gives
// the admin a line: tags nest, attributes are name="value", every CPU-side object carries
// cpuset, complete_cpuset, nodeset and complete_nodeset, every set on any tag is a hex bitmap,
// and no count is more than the file can hold. Returns 0 when the text passes, else the line
// and `*what`.
int PrecheckXml(std::string_view text, std::string* what) {
  std::vector<std::pair<std::string_view, int>> open;
  std::vector<std::pair<std::string_view, std::string_view>> attrs;
  int line = 1;
  bool saw_topology = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    if (text[i] != '<') continue;
    const size_t start = i;
    const int tag_line = line;
    const std::string_view end = text.substr(i, 4) == "<!--" ? "-->" : ">";
    const size_t pos = text.find(end, i + 1);
    if (pos == std::string_view::npos)
      return *what = end == ">" ? "unterminated tag" : "unterminated comment", tag_line;
    i = pos + end.size() - 1;
    const std::string_view tag = text.substr(start, i + 1 - start);
    line += static_cast<int>(std::count(tag.begin(), tag.end(), '\n'));
    if (tag.size() < 3 || tag[1] == '?' || tag[1] == '!') continue;
    const bool closing = tag[1] == '/';
    const bool self_closing = tag[tag.size() - 2] == '/';
    const size_t name_start = closing ? 2 : 1;
    const size_t name_end = std::min(tag.find_first_of(" \t\r\n/>", name_start), tag.size());
    const std::string_view name = tag.substr(name_start, name_end - name_start);
    if (name.empty()) return *what = "tag without a name", tag_line;
    if (closing) {
      if (open.empty() || open.back().first != name) {
        *what = "closing tag </" + std::string(name) + "> does not match " +
                (open.empty()
                     ? std::string("any open tag")
                     : "<" + std::string(open.back().first) + "> opened at line " + std::to_string(open.back().second));
        return tag_line;
      }
      open.pop_back();
      continue;
    }
    attrs.clear();
    const std::string_view body = tag.substr(name_end, tag.size() - name_end - (self_closing ? 2 : 1));
    if (!ParseAttributes(body, &attrs, what)) return tag_line;
    if (name == "topology") saw_topology = true;
    // hwloc parses every set it reads (an object's six, a cpukind's, a memattr initiator's) with
    // hwloc_bitmap_sscanf, which asserts on some malformed strings (",x1": found by tests/fuzz).
    for (const auto& [k, v] : attrs) {
      if ((k.ends_with("cpuset") || k.ends_with("nodeset")) && !IsHexBitmap(v))
        return *what = "<" + std::string(name) + ">: bad " + std::string(k) + " '" + std::string(v.substr(0, 40)) + "'",
               tag_line;
      // hwloc also allocates what a count says before reading what it counts: a distance matrix
      // of `nbobjs` squared values, a text of `length` characters. Neither can be more than the
      // file holds (each value takes a character at least), and a huge count was a huge
      // allocation (found by a sweep over hwloc's distance, memory-attribute and cpukind tags).
      if (k == "nbobjs" || k == "length") {
        const bool digits = !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string_view::npos;
        const uint64_t count = digits ? std::stoull(std::string(v)) : ~uint64_t{0};
        if ((k == "nbobjs" && digits ? count * count : count) > text.size())
          return *what = "<" + std::string(name) + ">: " + std::string(k) + " '" + std::string(v.substr(0, 40)) +
                         "' is not a count this " + std::to_string(text.size()) + "-byte file can hold",
                 tag_line;
      }
    }
    if (name == "object") {
      std::string_view type;
      for (const auto& [k, v] : attrs)
        if (k == "type") type = v;
      if (type.empty()) return *what = "<object> without a type", tag_line;
      if (IsCpuSideType(type)) {
        for (std::string_view set : {"cpuset", "complete_cpuset", "nodeset", "complete_nodeset"}) {
          auto it = std::find_if(attrs.begin(), attrs.end(), [&](const auto& a) { return a.first == set; });
          if (it == attrs.end()) return *what = std::string(type) + " object without " + std::string(set), tag_line;
        }
      }
    }
    if (!self_closing) open.emplace_back(name, tag_line);
  }
  if (!open.empty()) return *what = "<" + std::string(open.back().first) + "> is never closed", open.back().second;
  if (!saw_topology) return *what = "no <topology> element: not an hwloc XML export", line;
  return 0;
}

Status CheckOptions(const HwlocOptions& o) {
  const std::pair<const char*, double> values[] = {{"gpu_link_gbs", o.gpu_link_gbs},
                                                   {"pcie_uplink_gbs", o.pcie_uplink_gbs},
                                                   {"numa_uplink_gbs", o.numa_uplink_gbs},
                                                   {"nvswitch_gbs", o.nvswitch_gbs},
                                                   {"nic_gbs", o.nic_gbs}};
  for (const auto& [name, value] : values) {
    if (!std::isfinite(value) || value <= 0)
      return Fail(std::string("hwloc options.") + name,
                  "must be a positive bandwidth (got " + std::to_string(value) + ")");
  }
  return {};
}

}  // namespace

Result<NodeModel> ReadHwlocXml(std::string_view xml_text, std::string_view filename, const HwlocOptions& options) {
  const std::string file(filename);
  PHX_RETURN_IF_ERROR(CheckOptions(options));
  if (xml_text.find('\0') != std::string_view::npos) return Fail(file, "not an hwloc XML file: contains NUL bytes");
  if (xml_text.size() >= static_cast<size_t>(INT_MAX)) return Fail(file, "hwloc XML too large");

  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return Fail(file, "hwloc_topology_init failed");
  TopologyPtr topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  std::string what;
  if (const int line = PrecheckXml(xml_text, &what); line > 0)
    return Fail(file + ":" + std::to_string(line), "malformed hwloc XML: " + what);
  const std::string buffer(xml_text);  // hwloc wants the terminating NUL counted in the size
  if (hwloc_topology_set_xmlbuffer(raw, buffer.c_str(), static_cast<int>(buffer.size() + 1)) != 0 ||
      hwloc_topology_load(raw) != 0) {
    return Fail(file, std::string("hwloc cannot load this XML (") + std::strerror(errno) +
                          "); expected the output of `lstopo --of xml` from hwloc 2.x");
  }

  std::vector<FoundGpu> gpus;
  int nics = 0;
  bool nvswitch = false;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(raw, nullptr); pci != nullptr; pci = hwloc_get_next_pcidev(raw, pci)) {
    const auto& a = pci->attr->pcidev;
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
    if (base_class == 0x02 && (Contains(options.nic_vendor_ids, a.vendor_id) ||
                               HasOsdev(pci, HWLOC_OBJ_OSDEV_OPENFABRICS, HWLOC_OBJ_OSDEV_OPENFABRICS))) {
      ++nics;
    }
  }
  if (gpus.empty()) {
    return Fail(file,
                "no GPUs found (no PCI device of the GPU vendors with a display class or a cuda/nvml/opencl device; "
                "was lstopo run with I/O discovery, i.e. without --no-io?)");
  }
  if (gpus.size() > static_cast<size_t>(kMaxGpusPerNode))
    return Fail(file, OverLimit(static_cast<int64_t>(gpus.size()), "GPUs", kMaxGpusPerNode));
  std::sort(gpus.begin(), gpus.end(), [](const FoundGpu& x, const FoundGpu& y) { return x.busid < y.busid; });

  NodeModel m;
  m.name = options.model_name.empty() ? "hwloc-" + FileStem(filename, "node") : options.model_name;
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
