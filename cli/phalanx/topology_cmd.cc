// phalanx topology check|show FILE: load a topology in any supported format, build it, and print
// its summary (check) or its tree with free capacity (show), as text or JSON.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "adapters/topology/topology_loader.h"
#include "adapters/topology/topology_text.h"
#include "args.h"
#include "commands.h"
#include "core/topology/topology.h"
#include "util/json.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx::cli {
namespace {

constexpr FlagSpec kTopologyFlags[] = {
    {"format", "F", "auto (default), yaml, slurm, nvsmi or hwloc"},
    {"gpus-per-node", "N", "slurm: GPUs per node when no gres file says"},
    {"model", "M", "slurm: built-in node model (default dgx-h100); nvsmi/hwloc: model name"},
    {"gres", "FILE", "slurm: gres.conf (or slurm.conf with Gres=) giving GPUs per node"},
    {"node-name", "NAME", "nvsmi/hwloc: name of the one node (default: file stem)"},
    {"oversubscription", "L=R,...", "slurm: downlink:uplink per level, e.g. leaf=2,spine=1.5"},
    {"depth", "N", "show: levels below the root to print (default 3)"},
    {"collapse", "N", "show: collapse runs of at least N alike siblings (default 4)"},
    {"json", "", "machine-readable output"},
    {"help", "", "this help"},
};

constexpr const char* kTopologyUsage =
    "usage: phalanx topology check FILE [options]\n"
    "       phalanx topology show FILE [options]\n"
    "\n"
    "check: validate FILE and print a summary (exit 0), or print `phalanx: FILE:LINE: message`\n"
    "       and exit 1. show: print the tree with free GPUs, whole free nodes and the largest\n"
    "       free block per level. FILE may be gen:NAME (gen:superpod:4, gen:leafspine:64:16:2,\n"
    "       gen:nvl72:4, gen:mixed, gen:demo).\n"
    "\n"
    "options:\n";

std::string JsonNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string JsonSummary(const Topology& topo, TopologyFormat format) {
  std::string out = "{\"name\":" + JsonQuote(topo.name()) + ",\"format\":" + JsonQuote(TopologyFormatName(format)) +
                    ",\"nodes\":" + std::to_string(topo.node_count()) + ",\"gpus\":" + std::to_string(topo.gpu_count());
  out += ",\"switches\":{";
  bool first = true;
  for (Level l : {Level::kCore, Level::kSpine, Level::kLeaf, Level::kNvlDomain}) {
    out += std::string(first ? "" : ",") + JsonQuote(LevelName(l)) + ":" + std::to_string(topo.count_at_level(l));
    first = false;
  }
  out += "},\"models\":{";
  std::map<std::string, std::pair<int, uint32_t>> models;
  for (size_t n = 0; n < topo.node_count(); ++n) {
    const Domain& d = topo.domain(topo.node_domain(NodeId(static_cast<uint32_t>(n))));
    auto& m = models[d.kind];
    ++m.first;
    m.second = d.gpu_count;
  }
  first = true;
  for (const auto& [name, m] : models) {
    out += std::string(first ? "" : ",") + JsonQuote(name) + ":{\"nodes\":" + std::to_string(m.first) +
           ",\"gpus_per_node\":" + std::to_string(m.second) + "}";
    first = false;
  }
  out += "},\"free_gpus\":" + std::to_string(topo.free_gpus(topo.root())) +
         ",\"free_nodes\":" + std::to_string(topo.free_nodes(topo.root()));
  out += ",\"largest_free_block\":{";
  const auto best = LargestFreeBlocks(topo);
  first = true;
  for (int l = kLevelCount - 1; l >= static_cast<int>(Level::kGroup); --l) {
    if (topo.count_at_level(static_cast<Level>(l)) == 0) continue;
    out += std::string(first ? "" : ",") + JsonQuote(LevelName(static_cast<Level>(l))) + ":" +
           std::to_string(best[static_cast<size_t>(l)]);
    first = false;
  }
  return out + "}}";
}

// Domains down to `depth` levels below `id` (GPUs left out), uncollapsed.
std::string JsonTree(const Topology& topo, DomainId id, int depth) {
  const Domain& d = topo.domain(id);
  std::string out =
      "{\"name\":" + JsonQuote(d.name) + ",\"level\":" + JsonQuote(LevelName(d.level)) +
      ",\"kind\":" + JsonQuote(d.kind) + ",\"gpus\":" + std::to_string(d.gpu_count) +
      ",\"free_gpus\":" + std::to_string(topo.free_gpus(id)) + ",\"nodes\":" + std::to_string(d.node_count) +
      ",\"free_nodes\":" + std::to_string(topo.free_nodes(id)) + ",\"uplink_gbs\":" + JsonNumber(d.uplink.gbs) +
      ",\"oversubscription\":" + JsonNumber(d.oversubscription) +
      ",\"rail_optimized\":" + (d.rail_optimized ? "true" : "false");
  if (depth > 0 && d.level > Level::kNode) {
    out += ",\"children\":[";
    bool first = true;
    for (DomainId c : topo.children(id)) {
      out += std::string(first ? "" : ",") + JsonTree(topo, c, depth - 1);
      first = false;
    }
    out += "]";
  }
  return out + "}";
}

Status ParseOversubscription(const std::string& text, LoadOptions* options) {
  for (const std::string_view field : Split(text, ',')) {
    const std::string item(field);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return Fail("", "option '--oversubscription': '" + item + "' is not LEVEL=RATIO");
    const auto ratio = ParseNumber<double>(field.substr(eq + 1));
    if (!ratio) return Fail("", "option '--oversubscription': '" + item + "' has no numeric ratio");
    options->oversubscription_by_level.emplace_back(item.substr(0, eq), *ratio);
  }
  return {};
}

}  // namespace

void PrintError(const std::string& message) { std::fprintf(stderr, "phalanx: %s\n", message.c_str()); }

int RunTopology(std::span<const std::string> raw) {
  auto args = ParseArgs(raw, kTopologyFlags);
  if (!args) {
    PrintError(args.error().ToString());
    return 2;
  }
  if (args->Has("help")) {
    std::fputs((std::string(kTopologyUsage) + FlagsHelp(kTopologyFlags)).c_str(), stdout);
    return 0;
  }
  if (args->positional().size() != 2 || (args->positional()[0] != "check" && args->positional()[0] != "show")) {
    std::fputs((std::string(kTopologyUsage) + FlagsHelp(kTopologyFlags)).c_str(), stderr);
    return 2;
  }
  const bool show = args->positional()[0] == "show";
  const std::string& path = args->positional()[1];
  LoadOptions options;
  if (!ParseTopologyFormat(args->Get("format", "auto"), &options.format) ||
      options.format == TopologyFormat::kGenerator) {
    PrintError("option '--format': unknown format '" + args->Get("format") +
               "' (use auto, yaml, slurm, nvsmi or hwloc)");
    return 2;
  }
  auto gpus = IntFlag(*args, "gpus-per-node", 0, 1, 1024);
  auto depth = IntFlag(*args, "depth", 3, 0, 64);
  auto collapse = IntFlag(*args, "collapse", 4, 2, 1 << 20);
  Status over =
      args->Has("oversubscription") ? ParseOversubscription(args->Get("oversubscription"), &options) : Status{};
  for (const Error* e : {gpus ? nullptr : &gpus.error(), depth ? nullptr : &depth.error(),
                         collapse ? nullptr : &collapse.error(), over ? nullptr : &over.error()}) {
    if (e != nullptr) {
      PrintError(e->ToString());
      return 2;
    }
  }
  if (!show && (args->Has("depth") || args->Has("collapse"))) {
    PrintError("options '--depth' and '--collapse' are for `topology show`");
    return 2;
  }
  options.gpus_per_node = *gpus;
  options.node_model = args->Get("model");
  options.gres_path = args->Get("gres");
  options.node_name = args->Get("node-name");

  auto loaded = LoadTopology(path, options);
  if (!loaded) {
    PrintError(loaded.error().ToString());
    return 1;
  }
  auto topo = Topology::Build(loaded->spec);
  if (!topo) {
    PrintError(topo.error().where.empty() ? path + ": " + topo.error().message : topo.error().ToString());
    return 1;
  }
  const bool json = args->Has("json");
  std::string out;
  if (json) {
    out = show ? "{\"summary\":" + JsonSummary(*topo, loaded->format) +
                     ",\"tree\":" + JsonTree(*topo, topo->root(), *depth) + "}\n"
               : JsonSummary(*topo, loaded->format) + "\n";
  } else if (show) {
    TreeOptions tree;
    tree.max_depth = *depth;
    tree.collapse_runs = *collapse;
    out = TopologyTree(*topo, tree) + "largest free block per level: " + FreeBlocksLine(*topo) + "\n";
  } else {
    out = TopologySummary(*topo) + "  format:           " + std::string(TopologyFormatName(loaded->format)) +
          "\nOK: " + path + "\n";
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace phalanx::cli
