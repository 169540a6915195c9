#include "node_table.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>

#include "duration.h"
#include "job_table.h"
#include "util/hostlist.h"
#include "util/printable.h"

namespace phalanx::cli {
namespace {

// Rows with auto-sized columns (terminal columns of Printable cells: util/printable.h);
// `right` marks right-justified columns; no trailing blanks.
std::string Table(const std::vector<std::vector<std::string>>& raw, const std::vector<bool>& right) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : raw) {
    rows.emplace_back();
    for (const std::string& cell : r) rows.back().push_back(Printable(cell));
  }
  std::vector<size_t> widths(right.size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], DisplayWidth(row[c]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) line += "  ";
      line += FitToWidth(row[c], widths[c], right[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

int StateRank(const std::string& state) {
  static const std::string kOrder[] = {"idle", "mix", "alloc", "drng", "drain", "down", "unknown"};
  const std::string base = state.ends_with('*') ? state.substr(0, state.size() - 1) : state;
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    if (kOrder[i] == base) return static_cast<int>(i) * 2 + (state.ends_with('*') ? 1 : 0);
  }
  return 100;
}

}  // namespace

std::string NodeStateText(const v1::Node& node) {
  std::string s;
  switch (node.state()) {
    case v1::NODE_STATE_UP:
      s = node.gpus_free() >= node.gpus() ? "idle" : node.gpus_free() == 0 ? "alloc" : "mix";
      break;
    case v1::NODE_STATE_DRAIN: s = node.jobs_size() > 0 ? "drng" : "drain"; break;
    case v1::NODE_STATE_DOWN: s = "down"; break;
    default: s = "unknown"; break;
  }
  if (!node.agent_connected() && node.state() != v1::NODE_STATE_DOWN) s += "*";
  return s;
}

std::string FormatNodeSummary(const v1::ListNodesResponse& nodes) {
  struct Group {
    size_t nodes = 0;
    uint64_t gpus = 0, free = 0;
    std::vector<std::string> names;
  };
  std::map<std::string, Group> groups;
  for (const v1::Node& n : nodes.nodes()) {
    Group& g = groups[NodeStateText(n)];
    ++g.nodes;
    g.gpus += n.gpus();
    g.free += n.state() == v1::NODE_STATE_UP ? n.gpus_free() : 0;
    g.names.push_back(n.name());
  }
  std::vector<std::pair<std::string, Group*>> order;
  for (auto& [state, g] : groups) order.emplace_back(state, &g);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return StateRank(a.first) < StateRank(b.first); });
  std::vector<std::vector<std::string>> rows{{"STATE", "NODES", "GPUS", "FREE", "NODELIST"}};
  for (const auto& [state, g] : order) {
    rows.push_back({state, std::to_string(g->nodes), std::to_string(g->gpus), std::to_string(g->free),
                    CompressHostlist(g->names)});
  }
  return Table(rows, {false, true, true, true, false});
}

std::string FormatNodeLines(const v1::ListNodesResponse& nodes) {
  std::vector<std::vector<std::string>> rows{{"NODE", "STATE", "GPUS", "FREE", "MODEL", "LEAF", "JOBS", "REASON"}};
  for (const v1::Node& n : nodes.nodes()) {
    std::string jobs;
    for (uint64_t id : n.jobs()) jobs += (jobs.empty() ? "" : ",") + std::to_string(id);
    // Slurm mode: Slurm's own jobs there, as gq names them.
    for (uint32_t id : n.slurm_jobs()) jobs += std::string(jobs.empty() ? "" : ",") + "slurm:" + std::to_string(id);
    rows.push_back({n.name(), NodeStateText(n), std::to_string(n.gpus()), std::to_string(n.gpus_free()),
                    n.model().empty() ? "-" : n.model(), n.leaf().empty() ? "-" : n.leaf(), jobs.empty() ? "-" : jobs,
                    n.reason()});
  }
  return Table(rows, {false, false, true, true, false, false, false, false});
}

std::string FormatFragmentation(const v1::GetFragmentationResponse& f) {
  std::vector<std::vector<std::string>> rows{{"LEVEL", "DOMAINS", "WHOLE_FREE", "LARGEST_FREE", "DOMAIN_GPUS"}};
  for (const v1::LevelFragmentation& l : f.levels()) {
    rows.push_back({l.level(), std::to_string(l.domains()), std::to_string(l.whole_free()),
                    std::to_string(l.largest_free_block()), std::to_string(l.domain_gpus())});
  }
  char fgd[64];
  std::snprintf(fgd, sizeof fgd, "fragmentation (FGD): %.3f\n", f.fgd());
  return Table(rows, {false, true, true, true, true}) + fgd;
}

std::string FormatExplain(uint64_t job_id, const v1::ExplainPendingResponse& why, int64_t now) {
  std::string out =
      "job " + std::to_string(job_id) + ": pending " + Printable(ReasonText(why.reason(), why.detail())) + "\n";
  if (why.queue_position() > 0) out += "  queue position:  " + std::to_string(why.queue_position()) + "\n";
  out += "  predicted start: " + FormatTime(why.predicted_start());
  if (why.predicted_start() > now) out += " (in " + FormatDuration(why.predicted_start() - now) + ")";
  out += "\n";
  if (why.reserved_gpus_size() > 0) out += "  reserved GPUs:   " + FormatGpuRefs(why.reserved_gpus()) + "\n";
  return out;
}

}  // namespace phalanx::cli
