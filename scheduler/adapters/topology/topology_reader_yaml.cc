#include "adapters/topology/topology_reader_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "adapters/topology/bandwidth_units.h"
#include "core/topology/limits.h"
#include "core/topology/node_models.h"
#include "core/topology/topology.h"
#include "util/hostlist.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

constexpr int kMaxGroupDepth = 16;
constexpr int kMaxSwitchDepth = 32;

class YamlReader {
 public:
  explicit YamlReader(std::string_view filename) : file_(filename) {}

  Result<TopologySpec> Read(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return Fail(At(e.mark), "YAML syntax error: " + e.msg);
    }
    try {
      auto spec = ReadRoot(root);
      if (!spec) return spec;
      return Validate(std::move(*spec));
    } catch (const YAML::Exception& e) {  // yaml-cpp access errors: not expected, but never escape
      return Fail(At(e.mark), e.msg);
    }
  }

 private:
  // ---- positions and errors ------------------------------------------------------------------
  std::string At(const YAML::Mark& mark) const {
    if (mark.is_null() || mark.line < 0) return file_;
    return file_ + ":" + std::to_string(mark.line + 1);
  }
  std::string At(const YAML::Node& node) const { return node.IsDefined() ? At(node.Mark()) : file_; }
  std::unexpected<Error> Err(const YAML::Node& node, const std::string& path, const std::string& message) const {
    return Fail(At(node), path + ": " + message);
  }
  static std::string Describe(const YAML::Node& node) {
    if (node.IsScalar()) return Quote(node.Scalar());
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a mapping";
    return "nothing";
  }

  // ---- typed scalars -------------------------------------------------------------------------
  Status ExpectMap(const YAML::Node& node, const std::string& path) const {
    if (!node.IsMap()) return Err(node, path, "expected a mapping (key: value lines), got " + Describe(node));
    return {};
  }

  // Checks that `map` only has `allowed` keys, each once.
  Status CheckKeys(const YAML::Node& map, const std::string& path,
                   std::initializer_list<std::string_view> allowed) const {
    if (auto s = ExpectMap(map, path); !s) return s;
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) return Err(key, path, "keys must be plain words, got " + Describe(key));
      const std::string& k = key.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return Err(key, path, "unknown key " + Quote(k) + " (expected one of: " + list + ")");
      }
      if (!seen.insert(k).second) return Err(key, path, "duplicate key " + Quote(k));
    }
    return {};
  }

  Result<std::string> Str(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar() || node.Scalar().empty())
      return Err(node, path, "expected a non-empty text value, got " + Describe(node));
    return node.Scalar();
  }

  Result<double> Num(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) return Err(node, path, "expected a number, got " + Describe(node));
    const std::string& s = node.Scalar();
    const auto v = ParseNumber<double>(s);
    if (!v || !std::isfinite(*v)) return Err(node, path, Quote(s) + " is not a number");
    return *v;
  }

  Result<int> Int(const YAML::Node& node, const std::string& path, int lo, int hi) const {
    if (!node.IsScalar()) return Err(node, path, "expected a whole number, got " + Describe(node));
    const std::string& s = node.Scalar();
    const auto v = ParseNumber<long long>(s);
    if (!v) return Err(node, path, Quote(s) + " is not a whole number");
    if (*v < lo || *v > hi)
      return Err(node, path, s + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return static_cast<int>(*v);
  }

  Result<bool> Bool(const YAML::Node& node, const std::string& path) const {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      if (s == "true" || s == "yes" || s == "on" || s == "True") return true;
      if (s == "false" || s == "no" || s == "off" || s == "False") return false;
    }
    return Err(node, path, "expected true or false, got " + Describe(node));
  }

  Result<double> Bandwidth(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar())
      return Err(node, path, "expected a bandwidth like \"400Gb/s\" or \"50GB/s\", got " + Describe(node));
    auto v = ParseBandwidth(node.Scalar(), At(node));
    if (!v) return Fail(At(node), path + ": " + v.error().message);
    if (*v <= 0) return Err(node, path, "bandwidth must be positive, got " + Quote(node.Scalar()));
    return *v;
  }

  Result<LinkType> Link(const YAML::Node& node, const std::string& path) const {
    PHX_ASSIGN_OR_RETURN(auto s, Str(node, path));
    auto t = ParseLinkType(s);
    if (!t || *t == LinkType::kNone)
      return Err(node, path, "unknown link type " + Quote(s) + " (use nvlink, pcie, smp, infiniband, ethernet)");
    return *t;
  }

  // "2", "2.0" or "2:1".
  Result<double> Oversubscription(const YAML::Node& node, const std::string& path) const {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      if (const size_t colon = s.find(':'); colon != std::string::npos) {
        const auto a = ParseNumber<double>(std::string_view(s).substr(0, colon));
        const auto b = ParseNumber<double>(std::string_view(s).substr(colon + 1));
        if (a && b && *b > 0 && std::isfinite(*a / *b) && *a / *b >= 1) return *a / *b;
        return Err(node, path, Quote(s) + " is not a ratio like 2:1 (downlink:uplink, at least 1:1)");
      }
    }
    auto v = Num(node, path);
    if (!v) return v;
    if (*v < 1) return Err(node, path, "must be at least 1 (downlink:uplink), got " + node.Scalar());
    return v;
  }

  // ---- the document --------------------------------------------------------------------------
  Result<TopologySpec> ReadRoot(const YAML::Node& root) {
    if (!root.IsDefined() || root.IsNull())
      return Fail(file_, "empty file: expected 'cluster:' and 'fabric:' or 'generate:'");
    PHX_RETURN_IF_ERROR(CheckKeys(root, "top level", {"version", "cluster", "models", "fabric", "generate"}));
    if (const YAML::Node v = root["version"]) {
      PHX_RETURN_IF_ERROR(Int(v, "version", 1, 1));
    }
    if (const YAML::Node name = root["cluster"]) {
      PHX_ASSIGN_OR_RETURN(auto s, Str(name, "cluster"));
      spec_.name = s;
    }
    if (const YAML::Node gen = root["generate"]) {
      for (const char* other : {"models", "fabric"}) {
        if (root[other])
          return Err(root[other], other,
                     "cannot be combined with 'generate:' (the generator builds the whole cluster)");
      }
      PHX_ASSIGN_OR_RETURN(auto what, Str(gen, "generate"));
      auto spec = GenerateByName(what);
      if (!spec) return Err(gen, "generate", spec.error().message);
      for (SwitchSpec& s : spec->switches) s.where = At(gen);
      for (NodeSpec& n : spec->nodes) n.where = At(gen);
      if (!spec_.name.empty()) spec->name = spec_.name;
      return spec;
    }
    if (spec_.name.empty()) spec_.name = DefaultName();
    if (const YAML::Node models = root["models"]) {
      PHX_RETURN_IF_ERROR(ReadModels(models));
    }
    const YAML::Node fabric = root["fabric"];
    if (!fabric) return Fail(At(root), "top level: missing 'fabric:' (a tree of switches) or 'generate:'");
    if (fabric.IsSequence()) {
      if (fabric.size() == 0) return Err(fabric, "fabric", "is empty");
      for (size_t i = 0; i < fabric.size(); ++i) {
        PHX_RETURN_IF_ERROR(ReadSwitch(fabric[i], "", "fabric[" + std::to_string(i) + "]", 0));
      }
    } else {
      PHX_RETURN_IF_ERROR(ReadSwitch(fabric, "", "fabric", 0));
    }
    return std::move(spec_);
  }

  std::string DefaultName() const {
    std::string_view base = file_;
    if (const size_t slash = base.find_last_of('/'); slash != std::string_view::npos) base.remove_prefix(slash + 1);
    if (const size_t dot = base.find_last_of('.'); dot != std::string_view::npos && dot > 0) base = base.substr(0, dot);
    return std::string(base.empty() ? "cluster" : base);
  }

  Status ReadModels(const YAML::Node& models) {
    if (auto s = ExpectMap(models, "models"); !s) return s;
    std::set<std::string> seen;
    for (auto it = models.begin(); it != models.end(); ++it) {
      PHX_ASSIGN_OR_RETURN(auto name, Str(it->first, "models"));
      if (!seen.insert(name).second) return Err(it->first, "models", "duplicate model " + Quote(name));
      PHX_ASSIGN_OR_RETURN(auto model, ReadModel(name, it->second, "models." + name));
      model_index_[name] = static_cast<int>(spec_.models.size());
      model_where_[name] = At(it->first);
      spec_.models.push_back(std::move(model));
    }
    defined_models_ = spec_.models.size();
    return {};
  }

  Result<NodeModel> ReadModel(const std::string& name, const YAML::Node& node, const std::string& path) {
    PHX_RETURN_IF_ERROR(CheckKeys(
        node, path,
        {"builtin", "gpus", "gpu_link", "gpu_link_type", "groups", "nics", "nic_speed", "nic_type", "nvl_speed"}));
    NodeModel m;
    if (const YAML::Node b = node["builtin"]) {
      for (const char* k : {"gpus", "gpu_link", "gpu_link_type", "groups"}) {
        if (node[k])
          return Err(node[k], path + "." + k,
                     "cannot be combined with 'builtin:' (only nics, nic_speed, nic_type, nvl_speed)");
      }
      PHX_ASSIGN_OR_RETURN(auto builtin_name, Str(b, path + ".builtin"));
      auto builtin = BuiltinNodeModel(builtin_name);
      if (!builtin) return Err(b, path + ".builtin", builtin.error().message);
      m = std::move(*builtin);
    } else {
      const YAML::Node gpus = node["gpus"];
      if (!gpus) return Err(node, path, "needs 'gpus:' (the GPU count) or 'builtin:' (one of the built-in models)");
      PHX_ASSIGN_OR_RETURN(auto n, Int(gpus, path + ".gpus", 1, static_cast<int>(kMaxGpusPerNode)));
      m.gpus = n;
      if (const YAML::Node v = node["gpu_link"]) {
        PHX_ASSIGN_OR_RETURN(auto bw, Bandwidth(v, path + ".gpu_link"));
        m.gpu_link_gbs = bw;
      }
      if (const YAML::Node v = node["gpu_link_type"]) {
        PHX_ASSIGN_OR_RETURN(auto t, Link(v, path + ".gpu_link_type"));
        m.gpu_link_type = t;
      }
      if (const YAML::Node groups = node["groups"]) {
        PHX_ASSIGN_OR_RETURN(auto g, ReadGroups(groups, path + ".groups", 0));
        m.groups = std::move(g);
      }
    }
    m.name = name;
    if (const YAML::Node v = node["nics"]) {
      PHX_ASSIGN_OR_RETURN(auto n, Int(v, path + ".nics", 0, 1024));
      m.nics = n;
    }
    if (const YAML::Node v = node["nic_speed"]) {
      PHX_ASSIGN_OR_RETURN(auto bw, Bandwidth(v, path + ".nic_speed"));
      m.nic_gbs = bw;
    }
    if (const YAML::Node v = node["nic_type"]) {
      PHX_ASSIGN_OR_RETURN(auto t, Link(v, path + ".nic_type"));
      m.nic_type = t;
    }
    if (const YAML::Node v = node["nvl_speed"]) {
      PHX_ASSIGN_OR_RETURN(auto bw, Bandwidth(v, path + ".nvl_speed"));
      m.nvl_gbs_per_gpu = bw;
    }
    if (m.nics > 0 && m.nic_gbs <= 0) return Err(node, path, "has nics but no 'nic_speed:' (e.g. 400Gb/s)");
    return m;
  }

  Result<std::vector<GroupSpec>> ReadGroups(const YAML::Node& list, const std::string& path, int depth) const {
    if (!list.IsSequence())
      return Err(list, path, "expected a list of groups (lines starting with '-'), got " + Describe(list));
    if (depth > kMaxGroupDepth) return Err(list, path, "groups nested deeper than " + std::to_string(kMaxGroupDepth));
    std::vector<GroupSpec> out;
    for (size_t i = 0; i < list.size(); ++i) {
      PHX_ASSIGN_OR_RETURN(auto g, ReadGroup(list[i], path + "[" + std::to_string(i) + "]", depth));
      out.push_back(std::move(g));
    }
    return out;
  }

  Result<GroupSpec> ReadGroup(const YAML::Node& node, const std::string& path, int depth) const {
    PHX_RETURN_IF_ERROR(CheckKeys(
        node, path, {"kind", "gpus", "gpu_link", "gpu_link_type", "uplink", "uplink_type", "children", "numa"}));
    GroupSpec g;
    const YAML::Node kind = node["kind"];
    if (!kind) return Err(node, path, "needs 'kind:' (nvswitch, nvlink, pcie, numa, ...)");
    PHX_ASSIGN_OR_RETURN(auto k, Str(kind, path + ".kind"));
    g.kind = k;
    // Defaults follow the kind: NVLink inside nvswitch/nvlink groups, SMP above a NUMA socket.
    g.gpu_link_type = (g.kind == "nvswitch" || g.kind == "nvlink") ? LinkType::kNvlink : LinkType::kPcie;
    g.uplink.type = g.kind == "numa" ? LinkType::kSmp : LinkType::kPcie;
    if (const YAML::Node gpus = node["gpus"]) {
      if (!gpus.IsSequence())
        return Err(gpus, path + ".gpus", "expected a list of GPU indices like [0, 1], got " + Describe(gpus));
      for (size_t i = 0; i < gpus.size(); ++i) {
        PHX_ASSIGN_OR_RETURN(auto n, Int(gpus[i], path + ".gpus[" + std::to_string(i) + "]", 0, 1023));
        g.gpus.push_back(n);
      }
      if (!g.gpus.empty() && !node["gpu_link"])
        return Err(node, path, "has gpus but no 'gpu_link:' bandwidth (e.g. 450GB/s)");
    }
    if (const YAML::Node v = node["gpu_link"]) {
      PHX_ASSIGN_OR_RETURN(auto bw, Bandwidth(v, path + ".gpu_link"));
      g.gpu_link_gbs = bw;
    }
    if (const YAML::Node v = node["gpu_link_type"]) {
      PHX_ASSIGN_OR_RETURN(auto t, Link(v, path + ".gpu_link_type"));
      g.gpu_link_type = t;
    }
    if (const YAML::Node v = node["uplink"]) {
      PHX_ASSIGN_OR_RETURN(auto bw, Bandwidth(v, path + ".uplink"));
      g.uplink.gbs = bw;
    }
    if (const YAML::Node v = node["uplink_type"]) {
      PHX_ASSIGN_OR_RETURN(auto t, Link(v, path + ".uplink_type"));
      g.uplink.type = t;
    }
    if (const YAML::Node v = node["numa"]) {
      PHX_ASSIGN_OR_RETURN(auto n, Int(v, path + ".numa", 0, 4095));
      g.numa = n;
    }
    if (const YAML::Node children = node["children"]) {
      PHX_ASSIGN_OR_RETURN(auto c, ReadGroups(children, path + ".children", depth + 1));
      g.children = std::move(c);
    }
    if (g.gpus.empty() && g.children.empty()) return Err(node, path, "has neither 'gpus:' nor 'children:'");
    return g;
  }

  // Index of model `name` in spec_.models; built-in names may be used without a models: entry.
  Result<int> ModelIndex(const YAML::Node& node, const std::string& path) {
    PHX_ASSIGN_OR_RETURN(auto name, Str(node, path));
    if (auto it = model_index_.find(name); it != model_index_.end()) return it->second;
    auto builtin = BuiltinNodeModel(name);
    if (!builtin) {
      std::string defined;
      for (const auto& [n, i] : model_index_) defined += (defined.empty() ? "" : ", ") + n;
      return Err(node, path,
                 "unknown model " + Quote(name) + " (defined under models: " + (defined.empty() ? "none" : defined) +
                     "; built-in: " + BuiltinList() + ")");
    }
    model_index_[name] = static_cast<int>(spec_.models.size());
    model_where_[name] = At(node);
    spec_.models.push_back(std::move(*builtin));
    return model_index_[name];
  }

  static std::string BuiltinList() {
    std::string out;
    for (std::string_view n : BuiltinNodeModelNames()) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
  }

  Status ReadSwitch(const YAML::Node& node, const std::string& parent, const std::string& path, int depth) {
    if (auto s = CheckKeys(node, path,
                           {"name", "level", "oversubscription", "uplink", "uplink_type", "rail_optimized", "children",
                            "nodes", "model"});
        !s) {
      return s;
    }
    if (depth > kMaxSwitchDepth)
      return Err(node, path, "switches nested deeper than " + std::to_string(kMaxSwitchDepth));
    SwitchSpec sw;
    const YAML::Node name = node["name"];
    if (!name) return Err(node, path, "needs 'name:'");
    PHX_ASSIGN_OR_RETURN(auto n, Str(name, path + ".name"));
    sw.name = n;
    sw.where = At(name);
    sw.parent = parent;
    const std::string here = path + " (" + sw.name + ")";
    const YAML::Node level = node["level"];
    if (!level) return Err(node, here, "needs 'level:' (leaf, spine, core or nvl)");
    PHX_ASSIGN_OR_RETURN(auto level_name, Str(level, here + ".level"));
    auto l = ParseLevel(level_name);
    if (!l || *l < Level::kNvlDomain)
      return Err(level, here + ".level",
                 "unknown switch level " + Quote(level_name) + " (use nvl, leaf, spine or core)");
    sw.level = *l;
    if (const YAML::Node v = node["oversubscription"]) {
      PHX_ASSIGN_OR_RETURN(auto o, Oversubscription(v, here + ".oversubscription"));
      sw.oversubscription = o;
    }
    if (const YAML::Node v = node["uplink"]) {
      PHX_ASSIGN_OR_RETURN(auto bw, Bandwidth(v, here + ".uplink"));
      sw.uplink.gbs = bw;
    }
    if (const YAML::Node v = node["uplink_type"]) {
      PHX_ASSIGN_OR_RETURN(auto t, Link(v, here + ".uplink_type"));
      sw.uplink.type = t;
    }
    if (const YAML::Node v = node["rail_optimized"]) {
      PHX_ASSIGN_OR_RETURN(auto b, Bool(v, here + ".rail_optimized"));
      sw.rail_optimized = b;
    }
    const YAML::Node children = node["children"], nodes = node["nodes"], model = node["model"];
    if (!children && !nodes)
      return Err(node, here, "needs 'children:' (switches below it) or 'nodes:' (a hostlist like dgx[001-032])");
    if (model && !nodes) return Err(model, here + ".model", "only makes sense together with 'nodes:'");
    spec_.switches.push_back(sw);
    if (nodes) {
      if (auto s = ReadNodes(nodes, model, sw.name, here); !s) return s;
    }
    if (children) {
      if (!children.IsSequence())
        return Err(children, here + ".children",
                   "expected a list of switches (lines starting with '-'), got " + Describe(children));
      for (size_t i = 0; i < children.size(); ++i) {
        if (auto s = ReadSwitch(children[i], sw.name, path + ".children[" + std::to_string(i) + "]", depth + 1); !s)
          return s;
      }
    }
    return {};
  }

  // nodes: "dgx[001-032]"  |  ["a[1-4]", "b[1-4]"]  |  [{hosts: "a[1-4]", model: x}, ...]
  Status ReadNodes(const YAML::Node& nodes, const YAML::Node& model, const std::string& parent,
                   const std::string& path) {
    auto add = [&](const YAML::Node& hosts, const YAML::Node& model_node, const std::string& p) -> Status {
      if (!model_node && defined_models_ != 1) {
        return Err(hosts, p,
                   "needs 'model:' (which node model these hosts are; the default is the only model under models:)");
      }
      int index = 0;  // the only defined model
      if (model_node) {
        PHX_ASSIGN_OR_RETURN(auto m, ModelIndex(model_node, p + ".model"));
        index = m;
      }
      PHX_ASSIGN_OR_RETURN(auto h, Str(hosts, p));
      auto names = ExpandHostlist(h, At(hosts));
      if (!names) return Fail(At(hosts), p + ": " + names.error().message);
      if (const size_t total = spec_.nodes.size() + names->size(); total > static_cast<size_t>(kMaxTopologyNodes))
        return Err(hosts, p,
                   "the cluster reaches " + OverLimit(static_cast<int64_t>(total), "nodes", kMaxTopologyNodes));
      for (std::string& name : *names) spec_.nodes.push_back(NodeSpec{std::move(name), parent, index, At(hosts)});
      return {};
    };
    if (nodes.IsScalar()) return add(nodes, model, path + ".nodes");
    if (!nodes.IsSequence())
      return Err(nodes, path + ".nodes",
                 "expected a hostlist like \"dgx[001-032]\" or a list of them, got " + Describe(nodes));
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string p = path + ".nodes[" + std::to_string(i) + "]";
      const YAML::Node item = nodes[i];
      if (item.IsMap()) {
        if (auto s = CheckKeys(item, p, {"hosts", "model"}); !s) return s;
        if (!item["hosts"]) return Err(item, p, "needs 'hosts:' (a hostlist)");
        if (auto s = add(item["hosts"], item["model"] ? item["model"] : model, p + ".hosts"); !s) return s;
      } else if (auto s = add(item, model, p); !s) {
        return s;
      }
    }
    return {};
  }

  // Runs Topology::Build so that every structural error surfaces here, with a position.
  Result<TopologySpec> Validate(TopologySpec spec) const {
    auto topo = Topology::Build(spec);
    if (topo) return spec;
    Error e = topo.error();
    const std::string prefix = "node model '";
    if (e.where.rfind(prefix, 0) == 0 && e.where.size() > prefix.size() + 1) {
      const std::string model = e.where.substr(prefix.size(), e.where.size() - prefix.size() - 1);
      if (auto it = model_where_.find(model); it != model_where_.end())
        return Fail(it->second, "models." + model + ": " + e.message);
    }
    if (e.where.empty() || e.where == spec.name) e.where = file_;
    return std::unexpected(std::move(e));
  }

  std::string file_;
  TopologySpec spec_;
  std::map<std::string, int> model_index_;
  std::map<std::string, std::string> model_where_;
  size_t defined_models_ = 0;  // models under models: (built-ins used by name come after them)
};

}  // namespace

Result<TopologySpec> ReadTopologyYaml(std::string_view text, std::string_view filename) {
  return YamlReader(filename).Read(text);
}

}  // namespace phalanx
