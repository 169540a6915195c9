#include "adapters/topology/topology_reader_nvsmi.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

#include "core/topology/limits.h"
#include "util/numbers.h"
#include "util/strings.h"

namespace phalanx {
namespace {

// PCIe distance ranks, nearest first. 0 is "no PCIe path given" (self or NVLink).
enum Pcie : int { kPix = 1, kPxb = 2, kPhb = 3, kNode = 4, kSys = 5 };

struct Cell {
  bool self = false;
  int nv = 0;        // NVLink count for NV#
  int pcie = 0;      // Pcie rank otherwise
  std::string text;  // normalized token, for symmetry checks and messages
};

std::optional<Cell> ParseCell(std::string_view t) {
  if (t == "X") return Cell{true, 0, 0, "X"};
  if (t.size() > 2 && t.starts_with("NV")) {
    const auto n = ParseNumber<int>(t.substr(2));
    if (!n || *n < 1 || *n > 1000) return std::nullopt;
    return Cell{false, *n, 0, "NV" + std::to_string(*n)};
  }
  static constexpr std::pair<std::string_view, int> kTable[] = {{"PIX", kPix},   {"PXB", kPxb}, {"PHB", kPhb},
                                                                {"NODE", kNode}, {"SYS", kSys}, {"SOC", kSys}};
  for (const auto& [name, rank] : kTable) {
    if (t == name) return Cell{false, 0, rank, std::string(rank == kSys ? "SYS" : name)};
  }
  return std::nullopt;
}

struct Line {
  int number = 0;
  std::vector<std::string_view> tokens;
};

std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> out;
  size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    out.push_back(Line{++number, SplitWhitespace(line)});
  }
  return out;
}

// "GPU7" -> 7.
std::optional<int> GpuIndex(std::string_view name) {
  if (name.size() < 4 || !name.starts_with("GPU")) return std::nullopt;
  const auto n = ParseNumber<int>(name.substr(3));
  if (!n || *n < 0) return std::nullopt;
  return n;
}

class DisjointSets {
 public:
  explicit DisjointSets(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t Find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Join(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);  // root = smallest member
  }

 private:
  std::vector<size_t> parent_;
};

// An NVLink island or a lone GPU: what the PCIe clustering works on.
struct Unit {
  std::vector<int> gpus;
  std::optional<GroupSpec> group;  // set for NVLink islands
};

// A group or a lone GPU, while the tree is being built.
struct Item {
  std::optional<GroupSpec> group;
  int gpu = -1;
};

class NvsmiReader {
 public:
  NvsmiReader(std::string_view text, std::string_view file, const NvsmiOptions& options)
      : text_(text), file_(file), options_(options) {}

  Result<NodeModel> Read() {
    PHX_RETURN_IF_ERROR(CheckOptions());
    lines_ = SplitLines(text_);
    PHX_RETURN_IF_ERROR(ParseHeader());
    PHX_RETURN_IF_ERROR(ParseRows());
    PHX_RETURN_IF_ERROR(CheckMatrix());
    return BuildModel();
  }

 private:
  std::string At(int line) const { return file_ + ":" + std::to_string(line); }

  Status CheckOptions() const {
    if (options_.model_name.empty()) return Fail("options.model_name", "model name is empty");
    for (auto [name, value] : {std::pair{"link_gbs", options_.link_gbs}, std::pair{"pcie_gbs", options_.pcie_gbs},
                               std::pair{"smp_gbs", options_.smp_gbs}, std::pair{"nic_gbs", options_.nic_gbs}}) {
      if (!std::isfinite(value) || value <= 0)
        return Fail(std::string("options.") + name,
                    "must be a positive bandwidth (GB/s), got " + std::to_string(value));
    }
    if (options_.max_gpu_nvlinks < 1) return Fail("options.max_gpu_nvlinks", "must be >= 1");
    return {};
  }

  Status ParseHeader() {
    for (; header_ < lines_.size(); ++header_) {
      const auto& t = lines_[header_].tokens;
      if (!t.empty() && t[0] == "GPU0" && (t.size() == 1 || t[1] != "X")) break;
    }
    if (header_ == lines_.size()) {
      return Fail(file_, "no header row starting with GPU0 found (expected the output of `nvidia-smi topo -m`)");
    }
    const Line& h = lines_[header_];
    const std::string where = At(h.number);
    bool info = false;
    for (size_t i = 0; i < h.tokens.size(); ++i) {
      const std::string_view t = h.tokens[i];
      const auto next = [&](size_t k) { return i + k < h.tokens.size() ? h.tokens[i + k] : std::string_view(); };
      if (t == "CPU" && next(1) == "Affinity") {
        info_columns_.push_back("CPU Affinity"), ++i, info = true;
      } else if (t == "NUMA" && next(1) == "Affinity") {
        numa_column_ = static_cast<int>(info_columns_.size());
        info_columns_.push_back("NUMA Affinity"), ++i, info = true;
      } else if (t == "GPU" && next(1) == "NUMA" && next(2) == "ID") {
        info_columns_.push_back("GPU NUMA ID"), i += 2, info = true;
      } else if (info) {
        if (GpuIndex(t)) return Fail(where, "device column " + Quote(t) + " after the informational columns");
        if (t == "NUMA" && numa_column_ < 0) numa_column_ = static_cast<int>(info_columns_.size());
        info_columns_.push_back(std::string(t));
      } else if (auto gpu = GpuIndex(t)) {
        if (!devices_.empty() && devices_.size() != static_cast<size_t>(gpus_)) {
          return Fail(where, "GPU column " + Quote(t) + " after NIC column " + Quote(devices_.back()));
        }
        if (*gpu != gpus_)
          return Fail(where, "GPU column " + Quote(t) + " out of order (expected GPU" + std::to_string(gpus_) + ")");
        ++gpus_;
        devices_.push_back(std::string(t));
      } else {
        devices_.push_back(std::string(t));  // a NIC: NIC0, mlx5_0, ...
      }
    }
    if (gpus_ > kMaxGpusPerNode) return Fail(where, "GPU columns: " + OverLimit(gpus_, "GPUs", kMaxGpusPerNode));
    return {};
  }

  Status ParseRows() {
    const size_t d = devices_.size();
    cells_.assign(d, std::vector<Cell>(d));
    numa_.assign(static_cast<size_t>(gpus_), -1);
    size_t next = header_ + 1;
    for (size_t row = 0; row < d; ++row, ++next) {
      const bool eof = next >= lines_.size();
      const Line& line = lines_[eof ? lines_.size() - 1 : next];
      const std::string where = At(line.number);
      if (eof || line.tokens.empty() || line.tokens[0].starts_with("Legend")) {
        return Fail(where, "matrix ends after " + std::to_string(row) + " of " + std::to_string(d) +
                               " device rows (missing row " + Quote(devices_[row]) + "): truncated file?");
      }
      if (line.tokens[0] != devices_[row]) {
        return Fail(where, "row/column mismatch: row " + std::to_string(row + 1) + " is " + Quote(line.tokens[0]) +
                               " but column " + std::to_string(row + 1) + " is " + Quote(devices_[row]) +
                               " (header has " + std::to_string(gpus_) + " GPU and " +
                               std::to_string(d - static_cast<size_t>(gpus_)) + " NIC columns)");
      }
      const size_t cells = line.tokens.size() - 1;
      const bool is_gpu = row < static_cast<size_t>(gpus_);
      if (cells < d || cells > d + info_columns_.size()) {
        return Fail(where, "row " + Quote(devices_[row]) + " has " + std::to_string(cells) + " cells, expected " +
                               std::to_string(d) + " matrix cells" +
                               (info_columns_.empty()
                                    ? ""
                                    : " plus up to " + std::to_string(info_columns_.size()) + " informational ones") +
                               " (non-square matrix or truncated line)");
      }
      for (size_t col = 0; col < d; ++col) {
        const std::string_view token = line.tokens[col + 1];
        auto cell = ParseCell(token);
        if (!cell) {
          return Fail(where, "unknown cell " + Quote(token) + " in row " + Quote(devices_[row]) + ", column " +
                                 Quote(devices_[col]) + " (expected X, NV#, PIX, PXB, PHB, NODE or SYS)");
        }
        cells_[row][col] = std::move(*cell);
      }
      if (is_gpu && numa_column_ >= 0 && d + 1 + static_cast<size_t>(numa_column_) < line.tokens.size()) {
        const std::string_view numa = line.tokens[d + 1 + static_cast<size_t>(numa_column_)];
        if (const auto value = ParseNumber<int>(numa); value && *value >= 0) numa_[row] = *value;  // N/A stays -1
      }
      row_lines_.push_back(line.number);
    }
    for (; next < lines_.size(); ++next) {
      const Line& line = lines_[next];
      if (line.tokens.empty()) continue;
      if (line.tokens[0].starts_with("Legend") ||
          (line.tokens[0] == "NIC" && line.tokens.size() > 1 && line.tokens[1].starts_with("Legend")))
        break;
      return Fail(At(line.number), "unexpected " + Quote(line.tokens[0]) + " after the " + std::to_string(d) +
                                       " device rows (non-square matrix? the header has " + std::to_string(d) +
                                       " device columns)");
    }
    return {};
  }

  Status CheckMatrix() const {
    const size_t d = devices_.size();
    for (size_t i = 0; i < d; ++i) {
      const std::string where = At(row_lines_[i]);
      for (size_t j = 0; j < d; ++j) {
        const Cell& c = cells_[i][j];
        if ((i == j) != c.self) {
          return Fail(where, i == j
                                 ? "diagonal cell of " + Quote(devices_[i]) + " is " + Quote(c.text) + ", expected X"
                                 : "cell " + Quote(devices_[i]) + "/" + Quote(devices_[j]) + " is X off the diagonal");
        }
        const bool both_gpus = i < static_cast<size_t>(gpus_) && j < static_cast<size_t>(gpus_);
        if (c.nv > 0 && !both_gpus)
          return Fail(where, "NVLink cell " + Quote(c.text) + " between " + Quote(devices_[i]) + " and " +
                                 Quote(devices_[j]) + " (NV# is only between GPUs)");
        if (j < i && c.text != cells_[j][i].text) {
          return Fail(where, "asymmetric matrix: " + Quote(devices_[j]) + "->" + Quote(devices_[i]) + " is " +
                                 Quote(cells_[j][i].text) + " (line " + std::to_string(row_lines_[j]) + ") but " +
                                 Quote(devices_[i]) + "->" + Quote(devices_[j]) + " is " + Quote(c.text));
        }
      }
    }
    if (gpus_ == 0) return Fail(At(lines_[header_].number), "no GPU columns");
    return {};
  }

  // ---- model ------------------------------------------------------------------------------

  std::vector<Unit> NvlinkUnits() const {
    const size_t g = static_cast<size_t>(gpus_);
    DisjointSets islands(g);
    for (size_t i = 0; i < g; ++i) {
      for (size_t j = i + 1; j < g; ++j) {
        if (cells_[i][j].nv > 0) islands.Join(i, j);
      }
    }
    std::vector<Unit> units;
    std::vector<int> unit_of_root(g, -1);
    for (size_t i = 0; i < g; ++i) {
      const size_t root = islands.Find(i);
      if (unit_of_root[root] < 0) {
        unit_of_root[root] = static_cast<int>(units.size());
        units.emplace_back();
      }
      units[static_cast<size_t>(unit_of_root[root])].gpus.push_back(static_cast<int>(i));
    }
    for (Unit& u : units) {
      if (u.gpus.size() < 2) continue;
      const size_t n = u.gpus.size();
      const int k = cells_[static_cast<size_t>(u.gpus[0])][static_cast<size_t>(u.gpus[1])].nv;
      bool uniform = true;
      int min_total = -1;
      for (int a : u.gpus) {
        int total = 0;
        for (int b : u.gpus) {
          if (a == b) continue;
          const int nv = cells_[static_cast<size_t>(a)][static_cast<size_t>(b)].nv;
          uniform = uniform && nv == k;
          total += nv;
        }
        min_total = min_total < 0 ? total : std::min(min_total, total);
      }
      const bool nvswitch =
          uniform && n >= 3 && static_cast<int64_t>(k) * static_cast<int64_t>(n - 1) > options_.max_gpu_nvlinks;
      GroupSpec group;
      group.kind = nvswitch ? "nvswitch" : "nvlink";
      group.gpus = u.gpus;
      group.gpu_link_gbs = (nvswitch ? k : min_total) * options_.link_gbs;
      group.gpu_link_type = LinkType::kNvlink;
      group.uplink = LinkSpec{options_.pcie_gbs, 0, 0, LinkType::kPcie};
      u.group = std::move(group);
    }
    return units;
  }

  int UnitDistance(const Unit& a, const Unit& b) const {
    int best = kSys;
    for (int x : a.gpus) {
      for (int y : b.gpus)
        best = std::min(best, std::max(1, cells_[static_cast<size_t>(x)][static_cast<size_t>(y)].pcie));
    }
    return best;
  }

  // Connected components of `ids` under distance <= `level`, ordered by first member.
  std::vector<std::vector<size_t>> Partition(const std::vector<size_t>& ids, int level) const {
    DisjointSets sets(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      for (size_t j = i + 1; j < ids.size(); ++j) {
        if (distance_[ids[i]][ids[j]] <= level) sets.Join(i, j);
      }
    }
    std::vector<std::vector<size_t>> clusters;
    std::vector<int> cluster_of(ids.size(), -1);
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t root = sets.Find(i);
      if (cluster_of[root] < 0) {
        cluster_of[root] = static_cast<int>(clusters.size());
        clusters.emplace_back();
      }
      clusters[static_cast<size_t>(cluster_of[root])].push_back(ids[i]);
    }
    return clusters;
  }

  GroupSpec PcieGroup(int level) const {
    GroupSpec g;
    g.kind = level == kNode ? "numa" : "pcie";
    g.gpu_link_gbs = options_.pcie_gbs;
    g.gpu_link_type = LinkType::kPcie;
    g.uplink = level == kNode ? LinkSpec{options_.smp_gbs, 0, 0, LinkType::kSmp}
                              : LinkSpec{options_.pcie_gbs, 0, 0, LinkType::kPcie};
    return g;
  }

  // The items for the units `ids`, clustered at PCIe levels <= `level` (see the header).
  std::vector<Item> Cluster(const std::vector<size_t>& ids, int level, bool top) {
    if (ids.size() == 1) {
      const Unit& u = units_[ids[0]];
      return {u.group ? Item{u.group, -1} : Item{std::nullopt, u.gpus[0]}};
    }
    const std::vector<std::vector<size_t>> clusters = Partition(ids, level);
    if (clusters.size() == 1) return Cluster(ids, level - 1, top);
    std::vector<Item> items;
    for (const std::vector<size_t>& c : clusters) {
      std::vector<Item> sub = Cluster(c, level - 1, false);
      if (c.size() == 1) {
        items.push_back(std::move(sub.front()));
        continue;
      }
      GroupSpec g = PcieGroup(level);
      for (Item& item : sub) {
        if (item.group) {
          g.children.push_back(std::move(*item.group));
        } else {
          g.gpus.push_back(item.gpu);
        }
      }
      if (g.gpus.empty()) g.gpu_link_gbs = 0;  // no GPU hangs directly off it
      if (level == kNode) g.numa = numa_ordinal_++;
      items.push_back(Item{std::move(g), -1});
    }
    const bool any_group = std::any_of(items.begin(), items.end(), [](const Item& i) { return i.group.has_value(); });
    if (top && any_group) {
      for (Item& item : items) {
        if (item.group) continue;
        GroupSpec g = PcieGroup(level);
        g.gpus = {item.gpu};
        item.group = std::move(g);
      }
    }
    return items;
  }

  // Sets every group's numa from its GPUs' NUMA Affinity when they agree.
  void LabelNuma(GroupSpec& g, std::vector<int>& members) const {
    std::vector<int> mine = g.gpus;
    for (GroupSpec& c : g.children) LabelNuma(c, mine);
    int common = -2;
    for (int gpu : mine) {
      const int n = numa_[static_cast<size_t>(gpu)];
      common = common == -2 ? n : (common == n ? n : -1);
    }
    if (common >= 0) g.numa = common;
    members.insert(members.end(), mine.begin(), mine.end());
  }

  int RailNics() const {
    const size_t d = devices_.size();
    int all = 0, rails = 0;
    for (size_t nic = static_cast<size_t>(gpus_); nic < d; ++nic) {
      ++all;
      bool near = false;
      for (size_t g = 0; g < static_cast<size_t>(gpus_); ++g)
        near = near || (cells_[g][nic].pcie > 0 && cells_[g][nic].pcie <= kPxb);
      rails += near ? 1 : 0;
    }
    return rails > 0 ? rails : all;
  }

  Result<NodeModel> BuildModel() {
    units_ = NvlinkUnits();
    distance_.assign(units_.size(), std::vector<int>(units_.size(), kSys));
    for (size_t a = 0; a < units_.size(); ++a) {
      for (size_t b = 0; b < units_.size(); ++b) distance_[a][b] = a == b ? 0 : UnitDistance(units_[a], units_[b]);
    }
    std::vector<size_t> all(units_.size());
    std::iota(all.begin(), all.end(), 0);
    std::vector<Item> items = Cluster(all, kNode, true);

    NodeModel model;
    model.name = options_.model_name;
    model.gpus = gpus_;
    for (Item& item : items) {
      if (item.group) model.groups.push_back(std::move(*item.group));
    }
    if (model.groups.size() == 1) model.groups[0].uplink = LinkSpec{0, 0, 0, LinkType::kPcie};  // covers the node
    std::vector<int> members;
    for (GroupSpec& g : model.groups) LabelNuma(g, members);
    model.gpu_link_gbs = options_.pcie_gbs;
    model.gpu_link_type = LinkType::kPcie;
    model.nics = options_.nics >= 0 ? options_.nics : RailNics();
    model.nic_gbs = options_.nic_gbs;
    return model;
  }

  std::string_view text_;
  std::string file_;
  const NvsmiOptions& options_;
  std::vector<Line> lines_;
  size_t header_ = 0;
  std::vector<std::string> devices_;       // GPUs first, then NICs
  std::vector<std::string> info_columns_;  // CPU Affinity, NUMA Affinity, GPU NUMA ID, ...
  int numa_column_ = -1;
  int gpus_ = 0;
  std::vector<std::vector<Cell>> cells_;
  std::vector<int> row_lines_;
  std::vector<int> numa_;  // NUMA Affinity per GPU, -1 if unknown
  std::vector<Unit> units_;
  std::vector<std::vector<int>> distance_;
  int numa_ordinal_ = 0;
};

}  // namespace

Result<NodeModel> ReadNvidiaSmiTopo(std::string_view text, std::string_view filename, const NvsmiOptions& options) {
  return NvsmiReader(text, filename, options).Read();
}

}  // namespace phalanx
