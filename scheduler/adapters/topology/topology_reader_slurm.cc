#include "adapters/topology/topology_reader_slurm.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "adapters/topology/bandwidth_units.h"
#include "core/topology/limits.h"
#include "core/topology/node_models.h"
#include "util/hostlist.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

// ---- lexing: logical lines of Key=Value words ----------------------------------------------

struct Word {
  std::string key;    // as written ("" when the word has no '=')
  std::string lower;  // key in lower case
  std::string value;  // text after the first '=' (the whole word when there is no '=')
  bool has_eq = false;
  int line = 0;  // physical line of the word
};

struct LogicalLine {
  int line = 0;  // physical line where it starts
  std::vector<Word> words;
};

std::string At(std::string_view file, int line) { return std::string(file) + ":" + std::to_string(line); }

// Comments (#) are dropped, a trailing backslash joins the next physical line. Fails only on a
// continuation at the very end of the text (a truncated file).
Result<std::vector<LogicalLine>> Lex(std::string_view text, std::string_view file) {
  std::vector<LogicalLine> out;
  LogicalLine current;
  bool continued = false;
  int continued_from = 0;
  int number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    const bool continues = !line.empty() && line.back() == '\\';
    if (continues) line.remove_suffix(1);
    if (!continued) current = LogicalLine{number, {}};
    for (const std::string_view w : SplitWhitespace(line)) {
      Word word;
      word.line = number;
      if (const size_t eq = w.find('='); eq != std::string_view::npos) {
        word.has_eq = true;
        word.key = std::string(w.substr(0, eq));
        word.value = std::string(w.substr(eq + 1));
      } else {
        word.value = std::string(w);
      }
      word.lower = ToLower(word.key);
      current.words.push_back(std::move(word));
    }
    continued = continues;
    if (continues) continued_from = number;
    if (!continued && !current.words.empty()) out.push_back(std::move(current));
  }
  if (continued) {
    return Fail(At(file, continued_from), "file ends right after a line continuation '\\' (truncated file?)");
  }
  return out;
}

// ---- gres: GPUs per node from gres.conf / slurm.conf lines ---------------------------------

struct GresCount {
  int64_t gpus = 0;
  std::string where;  // first line that mentioned the node
};

struct GresTable {
  std::unordered_map<std::string, GresCount> gres_conf;   // Name=gpu lines, summed
  std::unordered_map<std::string, GresCount> slurm_conf;  // Gres=gpu:N on NodeName lines
  std::optional<GresCount> every_node;                    // Name=gpu lines without NodeName=
};

constexpr int64_t kMaxGresGpus = 1 << 20;

Result<int64_t> ParseCount(std::string_view text, const std::string& where, std::string_view what) {
  const auto v = ParseNumber<int64_t>(text);
  if (!v || *v < 0 || *v > kMaxGresGpus)
    return Fail(where, "bad GPU count " + Quote(text) + " in " + std::string(what));
  return *v;
}

// "gpu:8", "gpu:h100:8", "gpu:h100:4(S:0-1),mps:100", "gpu" (one GPU): the GPUs of a Gres= value.
Result<int64_t> SlurmConfGpus(std::string_view value, const std::string& where) {
  int64_t total = 0;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= value.size(); ++i) {
    if (i < value.size() && value[i] == '(') ++depth;
    if (i < value.size() && value[i] == ')') --depth;
    if (i < value.size() && (value[i] != ',' || depth > 0)) continue;
    std::string_view entry = value.substr(start, i - start);
    start = i + 1;
    if (const size_t paren = entry.find('('); paren != std::string_view::npos) entry = entry.substr(0, paren);
    const size_t colon = entry.find(':');
    if (ToLower(entry.substr(0, colon)) != "gpu") continue;
    if (colon == std::string_view::npos) {
      total += 1;
      continue;
    }
    const std::string_view last = entry.substr(entry.rfind(':') + 1);
    const bool numeric = !last.empty() && std::all_of(last.begin(), last.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (!numeric && entry.find(':') != entry.rfind(':')) {
      return Fail(where, "bad GPU count " + Quote(last) + " in Gres=" + std::string(value));
    }
    if (!numeric) {
      total += 1;  // "gpu:h100": a type, one GPU
      continue;
    }
    PHX_ASSIGN_OR_RETURN(auto n, ParseCount(last, where, "Gres=" + std::string(value)));
    total += n;
    if (total > kMaxGresGpus) return Fail(where, "too many GPUs in Gres=" + std::string(value));
  }
  return total;
}

// Node names the NodeName= lists of one gres.conf/slurm.conf may expand to, all lines together:
// each list is bounded by ExpandHostlist, this bounds a file repeating long lists (64 MiB of
// "NodeName=n[0-999999]" lines would otherwise expand to 10^12 names).
constexpr size_t kMaxGresNodeNames = 4 * static_cast<size_t>(kMaxTopologyNodes);

Result<GresTable> ReadGres(std::string_view text, std::string_view file) {
  GresTable table;
  size_t names = 0;  // node names expanded so far
  PHX_ASSIGN_OR_RETURN(auto lines, Lex(text, file));
  std::optional<int64_t> default_gres;  // NodeName=DEFAULT Gres=...
  for (const LogicalLine& line : lines) {
    if (!line.words.front().has_eq) continue;  // "include ...", not ours
    std::map<std::string, const Word*> keys;
    for (const Word& w : line.words) {
      if (!w.has_eq) return Fail(At(file, w.line), "expected Key=Value, got " + Quote(w.value));
      keys.emplace(w.lower, &w);
    }
    const std::string where = At(file, line.line);
    const auto node_it = keys.find("nodename");
    const auto name_it = keys.find("name");
    const auto gres_it = keys.find("gres");
    int64_t count = -1;
    bool gres_conf = false;
    if (name_it != keys.end()) {  // gres.conf
      if (ToLower(name_it->second->value) != "gpu") continue;
      gres_conf = true;
      if (auto c = keys.find("count"); c != keys.end()) {
        PHX_ASSIGN_OR_RETURN(auto n, ParseCount(c->second->value, At(file, c->second->line), "Count="));
        count = n;
      } else if (auto f = keys.find("file"); f != keys.end()) {
        auto files = ExpandHostlist(f->second->value, At(file, f->second->line));
        if (!files) return Fail(files.error().where, "bad File= list: " + files.error().message);
        count = static_cast<int64_t>(files->size());
      } else if (keys.contains("multiplefiles")) {
        count = 1;
      } else if (keys.contains("autodetect")) {
        continue;  // counts come from NVML at run time: nothing to learn here
      } else {
        count = 1;  // Slurm's default Count
      }
    } else if (node_it != keys.end()) {  // slurm.conf node line
      if (gres_it != keys.end()) {
        PHX_ASSIGN_OR_RETURN(auto n, SlurmConfGpus(gres_it->second->value, At(file, gres_it->second->line)));
        count = n;
      } else if (default_gres) {
        count = *default_gres;
      }
      if (ToLower(node_it->second->value) == "default") {
        if (gres_it != keys.end()) default_gres = count;
        continue;
      }
      if (count < 0) continue;
    } else {
      continue;  // other slurm.conf lines
    }
    if (node_it == keys.end()) {
      if (!table.every_node) table.every_node = GresCount{0, where};
      table.every_node->gpus = std::min(table.every_node->gpus + count, kMaxGresGpus);
      continue;
    }
    auto nodes = ExpandHostlist(node_it->second->value, At(file, node_it->second->line));
    if (!nodes) return Fail(nodes.error().where, "bad NodeName= hostlist: " + nodes.error().message);
    names += nodes->size();
    if (names > kMaxGresNodeNames) {
      return Fail(At(file, node_it->second->line),
                  "NodeName= lists name more than " + std::to_string(kMaxGresNodeNames) + " nodes in all");
    }
    for (const std::string& node : *nodes) {
      if (gres_conf) {
        auto [it, fresh] = table.gres_conf.try_emplace(node, GresCount{0, where});
        it->second.gpus = std::min(it->second.gpus + count, kMaxGresGpus);
      } else if (auto [it, fresh] = table.slurm_conf.try_emplace(node, GresCount{count, where}); !fresh) {
        return Fail(where, "node " + Quote(node) + " is defined twice (first at " + it->second.where + ")");
      }
    }
  }
  return table;
}

// ---- node models ---------------------------------------------------------------------------

std::optional<GroupSpec> PruneGroup(const GroupSpec& g, int gpus) {
  GroupSpec out = g;
  out.gpus.clear();
  out.children.clear();
  for (int gpu : g.gpus) {
    if (gpu < gpus) out.gpus.push_back(gpu);
  }
  for (const GroupSpec& c : g.children) {
    if (auto pruned = PruneGroup(c, gpus)) out.children.push_back(std::move(*pruned));
  }
  if (out.gpus.empty() && out.children.empty()) return std::nullopt;
  return out;
}

// `model` restricted to local GPUs 0..gpus-1 (see the header).
NodeModel PartialModel(const NodeModel& model, int gpus) {
  NodeModel out = model;
  out.name = model.name + "-" + std::to_string(gpus) + "gpu";
  out.gpus = gpus;
  out.groups.clear();
  for (const GroupSpec& g : model.groups) {
    if (auto pruned = PruneGroup(g, gpus)) out.groups.push_back(std::move(*pruned));
  }
  if (model.nics > 0) out.nics = (model.nics * gpus + model.gpus - 1) / model.gpus;
  return out;
}

// ---- topology.conf -------------------------------------------------------------------------

struct SwitchLine {
  std::string name;
  int line = 0;
  const Word* nodes = nullptr;
  const Word* switches = nullptr;
  const Word* link_speed = nullptr;
  std::vector<size_t> child_switches;
  int parent = -1;
  std::string parent_where;  // the Switches= word that lists this switch
  int height = -1;           // switch levels below it; 0 for leaves
};

class SlurmReader {
 public:
  SlurmReader(std::string_view text, std::string_view file, const SlurmReadOptions& options)
      : text_(text), file_(file), options_(options) {}

  Result<TopologySpec> Read() {
    PHX_RETURN_IF_ERROR(CheckOptions());
    PHX_ASSIGN_OR_RETURN(auto lines, Lex(text_, file_));
    lines_ = std::move(lines);
    if (lines_.empty()) return Fail(file_, "no switches defined (empty topology.conf?)");
    PHX_RETURN_IF_ERROR(ParseSwitches());
    PHX_RETURN_IF_ERROR(LinkSwitches());
    PHX_RETURN_IF_ERROR(AssignLevels());
    PHX_RETURN_IF_ERROR(AddNodes());
    PHX_RETURN_IF_ERROR(AssignModels());
    spec_.name = file_;
    return std::move(spec_);
  }

 private:
  Status CheckOptions() {
    auto model = BuiltinNodeModel(options_.node_model);
    if (!model) return Fail("options.node_model", model.error().message);
    base_model_ = std::move(*model);
    if (options_.gpus_per_node < 0 || options_.gpus_per_node > base_model_.gpus) {
      return Fail("options.gpus_per_node", "gpus_per_node " + std::to_string(options_.gpus_per_node) +
                                               " is outside 0.." + std::to_string(base_model_.gpus) +
                                               " (the GPUs of model " + Quote(base_model_.name) + ")");
    }
    PHX_RETURN_IF_ERROR(ParseBandwidth("1", "options.link_speed_unit", options_.link_speed_unit));
    for (const auto& [name, ratio] : options_.oversubscription_by_level) {
      const auto level = ParseLevel(ToLower(name));
      if (!level || *level < Level::kLeaf) {
        return Fail("options.oversubscription_by_level",
                    "unknown switch level " + Quote(name) + " (expected leaf, spine or core)");
      }
      if (!std::isfinite(ratio) || ratio < 1) {
        return Fail("options.oversubscription_by_level",
                    "oversubscription of " + Quote(name) + " must be >= 1, got " + std::to_string(ratio));
      }
      oversubscription_[static_cast<size_t>(*level)] = ratio;
    }
    return {};
  }

  Status ParseSwitches() {
    for (const LogicalLine& line : lines_) {
      SwitchLine sw;
      sw.line = line.line;
      const Word* name = nullptr;
      std::map<std::string, const Word*> seen;
      for (const Word& w : line.words) {
        const std::string where = At(file_, w.line);
        if (!w.has_eq) return Fail(where, "expected Key=Value, got " + Quote(w.value));
        if (w.key.empty()) return Fail(where, "missing key before '=' in " + Quote("=" + w.value));
        if (auto [it, fresh] = seen.emplace(w.lower, &w); !fresh)
          return Fail(where, "key " + w.key + "= given twice on one line");
        if (w.lower == "blockname" || w.lower == "blocksizes") {
          return Fail(where, "key " + w.key +
                                 "= belongs to topology/block, which is not supported (expected topology/tree lines)");
        }
        const Word** slot = w.lower == "switchname"  ? &name
                            : w.lower == "nodes"     ? &sw.nodes
                            : w.lower == "switches"  ? &sw.switches
                            : w.lower == "linkspeed" ? &sw.link_speed
                                                     : nullptr;
        if (slot == nullptr)
          return Fail(where, "unknown key " + Quote(w.key) + " (known: SwitchName, Switches, Nodes, LinkSpeed)");
        if (w.value.empty()) return Fail(where, "empty value for " + w.key + "=");
        *slot = &w;
      }
      const std::string where = At(file_, line.line);
      if (name == nullptr) return Fail(where, "line has no SwitchName= (every topology.conf line defines one switch)");
      sw.name = name->value;
      if (sw.nodes && sw.switches)
        return Fail(where, "switch " + Quote(sw.name) + " has both Nodes= and Switches= (Slurm allows one of them)");
      if (!sw.nodes && !sw.switches)
        return Fail(where, "switch " + Quote(sw.name) + " has neither Nodes= nor Switches=");
      if (auto [it, fresh] = index_.emplace(sw.name, switches_.size()); !fresh) {
        return Fail(where, "duplicate switch " + Quote(sw.name) + " (first defined at " +
                               At(file_, switches_[it->second].line) + ")");
      }
      SwitchSpec spec;
      spec.name = sw.name;
      spec.where = where;
      spec.uplink.type = LinkType::kInfiniband;
      if (sw.link_speed) {
        const std::string at = At(file_, sw.link_speed->line);
        auto gbs = ParseBandwidth(sw.link_speed->value, at, options_.link_speed_unit);
        if (!gbs) return Fail(at, "bad LinkSpeed: " + gbs.error().message);
        spec.uplink.lane_gbs = *gbs;  // recorded, not a lane limit (lanes stays 0)
      }
      switches_.push_back(std::move(sw));
      spec_.switches.push_back(std::move(spec));
    }
    return {};
  }

  Status LinkSwitches() {
    for (size_t i = 0; i < switches_.size(); ++i) {
      SwitchLine& sw = switches_[i];
      if (!sw.switches) continue;
      const std::string where = At(file_, sw.switches->line);
      auto children = ExpandHostlist(sw.switches->value, where);
      if (!children) return Fail(where, "bad Switches= list: " + children.error().message);
      for (const std::string& child : *children) {
        const auto it = index_.find(child);
        if (it == index_.end())
          return Fail(where, "unknown switch " + Quote(child) + " in Switches= of " + Quote(sw.name));
        if (it->second == i) return Fail(where, "switch " + Quote(sw.name) + " lists itself in Switches=");
        SwitchLine& c = switches_[it->second];
        if (c.parent >= 0) {
          return Fail(where, "switch " + Quote(child) +
                                 " has two parents: " + Quote(switches_[static_cast<size_t>(c.parent)].name) + " (" +
                                 c.parent_where + ") and " + Quote(sw.name) + " (" + where + ")");
        }
        c.parent = static_cast<int>(i);
        c.parent_where = where;
        sw.child_switches.push_back(it->second);
        spec_.switches[it->second].parent = sw.name;
      }
    }
    return {};
  }

  // Heights bottom-up (Kahn's order); switches never reached are on a parent cycle.
  Status AssignLevels() {
    std::vector<size_t> pending(switches_.size());
    std::deque<size_t> ready;
    for (size_t i = 0; i < switches_.size(); ++i) {
      pending[i] = switches_[i].child_switches.size();
      if (pending[i] == 0) ready.push_back(i);
    }
    while (!ready.empty()) {
      const size_t i = ready.front();
      ready.pop_front();
      SwitchLine& sw = switches_[i];
      sw.height = 0;
      for (size_t c : sw.child_switches) sw.height = std::max(sw.height, switches_[c].height + 1);
      if (sw.height >= 3) {
        return Fail(At(file_, sw.line),
                    "switch " + Quote(sw.name) +
                        " is a 4th switch level above the nodes; Phalanx models at most 3 (leaf, spine, core)");
      }
      if (sw.parent >= 0 && --pending[static_cast<size_t>(sw.parent)] == 0)
        ready.push_back(static_cast<size_t>(sw.parent));
    }
    for (size_t i = 0; i < switches_.size(); ++i) {
      if (switches_[i].height >= 0) continue;
      std::string cycle = switches_[i].name;
      for (int s = switches_[i].parent; s >= 0 && static_cast<size_t>(s) != i;
           s = switches_[static_cast<size_t>(s)].parent) {
        cycle += " -> " + switches_[static_cast<size_t>(s)].name;
        if (cycle.size() > 400) break;
      }
      return Fail(At(file_, switches_[i].line), "switches form a parent cycle: " + cycle + " -> " + switches_[i].name);
    }
    static constexpr Level kByHeight[] = {Level::kLeaf, Level::kSpine, Level::kCore};
    for (size_t i = 0; i < switches_.size(); ++i) {
      const Level level = kByHeight[switches_[i].height];
      spec_.switches[i].level = level;
      spec_.switches[i].oversubscription = oversubscription_[static_cast<size_t>(level)];
    }
    return {};
  }

  Status AddNodes() {
    std::unordered_map<std::string, std::pair<size_t, std::string>> seen;  // node -> switch, where
    for (size_t i = 0; i < switches_.size(); ++i) {
      const SwitchLine& sw = switches_[i];
      if (!sw.nodes) continue;
      const std::string where = At(file_, sw.nodes->line);
      auto nodes = ExpandHostlist(sw.nodes->value, where);
      if (!nodes) return Fail(where, "bad Nodes= list: " + nodes.error().message);
      if (const size_t total = spec_.nodes.size() + nodes->size(); total > static_cast<size_t>(kMaxTopologyNodes)) {
        return Fail(where, "Nodes= lists reach " + OverLimit(static_cast<int64_t>(total), "nodes", kMaxTopologyNodes));
      }
      for (std::string& node : *nodes) {
        if (auto [it, fresh] = seen.try_emplace(node, i, where); !fresh) {
          if (it->second.first == i)
            return Fail(where, "node " + Quote(node) + " is listed twice in Nodes= of " + Quote(sw.name));
          return Fail(where, "node " + Quote(node) +
                                 " is under two switches: " + Quote(switches_[it->second.first].name) + " (" +
                                 it->second.second + ") and " + Quote(sw.name) + " (" + where + ")");
        }
        spec_.nodes.push_back(NodeSpec{std::move(node), sw.name, 0, where});
      }
    }
    return {};
  }

  // Model index per GPU count; 0 is the base model.
  int ModelFor(int gpus) {
    if (gpus == base_model_.gpus) return 0;
    if (auto it = model_by_gpus_.find(gpus); it != model_by_gpus_.end()) return it->second;
    spec_.models.push_back(PartialModel(base_model_, gpus));
    const int index = static_cast<int>(spec_.models.size()) - 1;
    model_by_gpus_[gpus] = index;
    return index;
  }

  Status AssignModels() {
    spec_.models.push_back(base_model_);
    GresTable gres;
    if (!options_.gres_text.empty()) {
      PHX_ASSIGN_OR_RETURN(auto table, ReadGres(options_.gres_text, options_.gres_filename));
      gres = std::move(table);
    }
    const bool partial_ok = options_.gpus_per_node > 0;
    const int fallback = partial_ok ? options_.gpus_per_node : base_model_.gpus;
    for (NodeSpec& node : spec_.nodes) {
      std::optional<GresCount> from_gres;
      const auto a = gres.gres_conf.find(node.name);
      const auto b = gres.slurm_conf.find(node.name);
      if (a != gres.gres_conf.end()) {
        from_gres = a->second;
      } else if (gres.every_node) {
        from_gres = gres.every_node;
      }
      if (b != gres.slurm_conf.end()) {
        if (from_gres && from_gres->gpus != b->second.gpus) {
          return Fail(node.where, "GPU count mismatch for node " + Quote(node.name) + ": " + from_gres->where +
                                      " gives " + std::to_string(from_gres->gpus) + " GPUs but Gres= at " +
                                      b->second.where + " gives " + std::to_string(b->second.gpus));
        }
        from_gres = b->second;
      }
      const int64_t gpus = from_gres ? from_gres->gpus : fallback;
      const std::string source = from_gres ? " (from " + from_gres->where + ")" : "";
      if (gpus <= 0) return Fail(node.where, "node " + Quote(node.name) + " has no GPUs" + source);
      if (gpus > base_model_.gpus || (!partial_ok && gpus != base_model_.gpus)) {
        return Fail(node.where,
                    "GPU count mismatch for node " + Quote(node.name) + ": gres gives " + std::to_string(gpus) +
                        source + " but model " + Quote(base_model_.name) + " has " + std::to_string(base_model_.gpus) +
                        (gpus < base_model_.gpus ? " (set gpus_per_node to accept nodes with fewer GPUs)" : ""));
      }
      node.model = ModelFor(static_cast<int>(gpus));
    }
    return {};
  }

  std::string_view text_;
  std::string file_;
  const SlurmReadOptions& options_;
  NodeModel base_model_;
  double oversubscription_[kLevelCount] = {1, 1, 1, 1, 1, 1, 1};
  std::vector<LogicalLine> lines_;
  std::vector<SwitchLine> switches_;
  std::unordered_map<std::string, size_t> index_;
  std::map<int, int> model_by_gpus_;
  TopologySpec spec_;
};

}  // namespace

Result<TopologySpec> ReadSlurmTopology(std::string_view text, std::string_view filename,
                                       const SlurmReadOptions& options) {
  return SlurmReader(text, filename, options).Read();
}

}  // namespace phalanx
