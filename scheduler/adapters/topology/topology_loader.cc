#include "adapters/topology/topology_loader.h"

#include "adapters/topology/topology_reader_hwloc.h"
#include "adapters/topology/topology_reader_nvsmi.h"
#include "adapters/topology/topology_reader_slurm.h"
#include "adapters/topology/topology_reader_yaml.h"
#include "core/topology/node_models.h"
#include "util/file_read.h"
#include "util/strings.h"

namespace phalanx {
namespace {

constexpr std::string_view kGenPrefix = "gen:";
Result<std::string> ReadFile(const std::string& path) { return ReadFileBounded(path, kMaxTopologyFileBytes); }

// A one-node cluster around `model`.
TopologySpec OneNode(NodeModel model, const std::string& path, const LoadOptions& options) {
  TopologySpec spec;
  const std::string node = options.node_name.empty() ? FileStem(path, "node") : options.node_name;
  spec.name = node;
  spec.models.push_back(std::move(model));
  spec.nodes.push_back(NodeSpec{node, "", 0, path});
  return spec;
}

}  // namespace

std::string_view TopologyFormatName(TopologyFormat format) {
  switch (format) {
    case TopologyFormat::kAuto: return "auto";
    case TopologyFormat::kYaml: return "yaml";
    case TopologyFormat::kSlurm: return "slurm";
    case TopologyFormat::kNvsmi: return "nvsmi";
    case TopologyFormat::kHwloc: return "hwloc";
    case TopologyFormat::kGenerator: return "gen";
  }
  return "auto";
}

bool ParseTopologyFormat(std::string_view name, TopologyFormat* format) {
  for (TopologyFormat f : {TopologyFormat::kAuto, TopologyFormat::kYaml, TopologyFormat::kSlurm, TopologyFormat::kNvsmi,
                           TopologyFormat::kHwloc, TopologyFormat::kGenerator}) {
    if (name == TopologyFormatName(f)) {
      *format = f;
      return true;
    }
  }
  return false;
}

Result<TopologyFormat> SniffTopologyFormat(std::string_view path, std::string_view text) {
  const std::string_view head = TrimLeft(text);
  if (head.starts_with("<?xml") || head.starts_with("<topology") ||
      head.substr(0, 4096).find("<topology") != std::string_view::npos) {
    return TopologyFormat::kHwloc;
  }
  bool yaml_key = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(start, end - start);
    const std::string_view line = TrimLeft(raw);
    start = end + 1;
    if (line.empty() || line.front() == '#') continue;
    if (StartsWithIgnoreCase(line, "SwitchName=")) return TopologyFormat::kSlurm;
    // nvidia-smi: the header row's first column is GPU0 (tab-indented in real output; an
    // unindented one must show another column to be told from prose).
    if (line.starts_with("GPU0") && (line.size() == 4 || line[4] == ' ' || line[4] == '\t')) {
      if (raw != line || line.find("GPU1") != std::string_view::npos || line.find("NIC0") != std::string_view::npos ||
          line.find("CPU Affinity") != std::string_view::npos) {
        return TopologyFormat::kNvsmi;
      }
    }
    for (std::string_view key : {"cluster:", "fabric:", "models:", "generate:", "version:"}) {
      if (raw.starts_with(key)) yaml_key = true;
    }
  }
  if (yaml_key || path.ends_with(".yaml") || path.ends_with(".yml")) return TopologyFormat::kYaml;
  return Fail(std::string(path),
              "cannot tell the topology format (expected Phalanx YAML, a Slurm topology.conf with SwitchName= lines, "
              "`nvidia-smi topo -m` output or `lstopo --of xml` output); give --format");
}

Result<LoadedTopology> LoadTopology(const std::string& path, const LoadOptions& options) {
  LoadedTopology out;
  if (path.starts_with(kGenPrefix) || options.format == TopologyFormat::kGenerator) {
    const std::string_view name =
        path.starts_with(kGenPrefix) ? std::string_view(path).substr(kGenPrefix.size()) : std::string_view(path);
    auto spec = GenerateByName(name);
    if (!spec) return Fail(path, spec.error().message);
    out.spec = std::move(*spec);
    out.format = TopologyFormat::kGenerator;
    return out;
  }
  PHX_ASSIGN_OR_RETURN(auto text, ReadFile(path));
  TopologyFormat format = options.format;
  if (format == TopologyFormat::kAuto) {
    PHX_ASSIGN_OR_RETURN(auto sniffed, SniffTopologyFormat(path, text));
    format = sniffed;
  }
  out.format = format;
  switch (format) {
    case TopologyFormat::kYaml: {
      PHX_ASSIGN_OR_RETURN(auto spec, ReadTopologyYaml(text, path));
      out.spec = std::move(spec);
      return out;
    }
    case TopologyFormat::kSlurm: {
      SlurmReadOptions so;
      so.gpus_per_node = options.gpus_per_node;
      if (!options.node_model.empty()) so.node_model = options.node_model;
      so.oversubscription_by_level = options.oversubscription_by_level;
      if (!options.gres_path.empty()) {
        PHX_ASSIGN_OR_RETURN(auto gres, ReadFile(options.gres_path));
        so.gres_text = std::move(gres);
        so.gres_filename = options.gres_path;
      }
      PHX_ASSIGN_OR_RETURN(auto spec, ReadSlurmTopology(text, path, so));
      out.spec = std::move(spec);
      return out;
    }
    case TopologyFormat::kNvsmi: {
      NvsmiOptions no;
      if (!options.node_model.empty()) no.model_name = options.node_model;
      PHX_ASSIGN_OR_RETURN(auto model, ReadNvidiaSmiTopo(text, path, no));
      out.spec = OneNode(std::move(model), path, options);
      return out;
    }
    case TopologyFormat::kHwloc: {
      HwlocOptions ho;
      ho.model_name = options.node_model;
      PHX_ASSIGN_OR_RETURN(auto model, ReadHwlocXml(text, path, ho));
      out.spec = OneNode(std::move(model), path, options);
      return out;
    }
    case TopologyFormat::kAuto:
    case TopologyFormat::kGenerator: break;
  }
  return Fail(path, "unsupported format");
}

Result<TopologySpec> LoadTopologyFile(const std::string& path, const LoadOptions& options) {
  PHX_ASSIGN_OR_RETURN(auto loaded, LoadTopology(path, options));
  return std::move(loaded.spec);
}

}  // namespace phalanx
