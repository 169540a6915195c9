#include "partition_table.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "job_table.h"
#include "node_table.h"
#include "util/duration.h"
#include "util/hostlist.h"
#include "util/printable.h"

namespace phalanx::cli {
namespace {

struct PartitionField {
  std::string literal;
  char letter = 0;
  size_t width = 0;
  bool right = false;
};

std::string_view PartitionHeader(char letter) {
  switch (letter) {
    case 'P': return "PARTITION";
    case 'a': return "AVAIL";
    case 'l': return "TIMELIMIT";
    case 'L': return "DEFAULTTIME";
    case 'D': return "NODES";
    case 't': return "STATE";
    case 'T': return "STATE";
    case 'N': return "NODELIST";
    case 'G': return "GPUS";
    case 'f': return "FREE";
    case 'E': return "REASON";
    case 'u': return "USER";
    case 'H': return "TIMESTAMP";
    case 'g': return "GROUPS";
    case 'm': return "MAX_GPUS";
    default: return {};
  }
}

Result<std::vector<PartitionField>> Parse(std::string_view format) {
  std::vector<PartitionField> out;
  std::string literal;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      literal += format[i];
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '%') {
      literal += '%';
      ++i;
      continue;
    }
    PartitionField f;
    size_t j = i + 1;
    if (j < format.size() && format[j] == '.') {
      f.right = true;
      ++j;
    }
    while (j < format.size() && format[j] >= '0' && format[j] <= '9') f.width = f.width * 10 + (format[j++] - '0');
    if (j >= format.size()) return Fail("", "'%' at the end of the format");
    f.letter = format[j];
    if (PartitionHeader(f.letter).empty())
      return Fail("", "unknown field '%" + std::string(1, f.letter) +
                          "' (known: %P %a %l %L %D %t %T %N %G %f %E %u %H %g %m)");
    f.literal = std::move(literal);
    literal.clear();
    out.push_back(std::move(f));
    i = j;
  }
  if (!literal.empty()) out.push_back(PartitionField{literal, 0, 0, false});
  return out;
}

std::string Limit(const v1::Partition& p, bool max) {
  if (max && p.max_walltime_unlimited()) return "infinite";
  return FormatSlurmDuration(max ? p.max_walltime_s() : p.default_walltime_s());
}

std::string Avail(const v1::Partition& p) {
  if (p.state() == "UP") return "up";
  if (p.state() == "DOWN") return "down";
  if (p.state() == "DRAIN") return "drain";
  return "inact";
}

std::string BaseState(const v1::Node& n) {
  std::string s = NodeStateText(n);
  if (!s.empty() && s.back() == '*') s.pop_back();
  return s;
}

std::string LongState(const std::string& s) {
  const bool star = !s.empty() && s.back() == '*';
  const std::string base = star ? s.substr(0, s.size() - 1) : s;
  std::string out = base == "alloc"   ? "allocated"
                    : base == "mix"   ? "mixed"
                    : base == "drng"  ? "draining"
                    : base == "drain" ? "drained"
                                      : base;
  return star ? out + "*" : out;
}

bool Passes(const PartitionFilter& f, const v1::Node& n) {
  if (!f.nodes.empty() && !f.nodes.contains(n.name())) return false;
  if (!f.states.empty() && !f.states.contains(BaseState(n))) return false;
  return true;
}

// Renders rows of cells under `fields` with widths as gq does.
std::string Render(const std::vector<PartitionField>& fields, const std::vector<std::vector<std::string>>& rows,
                   bool header) {
  std::vector<size_t> width(fields.size(), 0);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!fields[i].letter) continue;
    if (fields[i].width > 0) {
      width[i] = fields[i].width;
      continue;
    }
    if (header) width[i] = DisplayWidth(PartitionHeader(fields[i].letter));
    for (const auto& r : rows) width[i] = std::max(width[i], DisplayWidth(Printable(r[i])));
  }
  std::string out;
  auto line = [&](auto cell) {
    std::string l;
    for (size_t i = 0; i < fields.size(); ++i) {
      l += fields[i].literal;
      if (fields[i].letter) l += FitToWidth(Printable(cell(i)), width[i], fields[i].right);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  if (header) line([&](size_t i) { return std::string(PartitionHeader(fields[i].letter)); });
  for (const auto& r : rows) line([&](size_t i) { return r[i]; });
  return out;
}

std::string Groups(const v1::Partition& p) {
  if (p.allow_users().empty() && p.allow_groups().empty() && p.allow_accounts().empty()) return "all";
  std::string out;
  for (const std::string& g : p.allow_groups()) out += (out.empty() ? "" : ",") + g;
  return out.empty() ? "-" : out;
}

}  // namespace

Status CheckPartitionFormat(std::string_view format) {
  auto f = Parse(format);
  if (!f) return std::unexpected(f.error());
  return {};
}

std::string FormatPartitionTable(const v1::PartitionListResponse& parts, const v1::ListNodesResponse& nodes,
                                 const PartitionFilter& filter, std::string_view format, bool header) {
  auto fields = Parse(format);
  if (!fields) return {};
  std::map<std::string, const v1::Node*> by_name;
  for (const v1::Node& n : nodes.nodes()) by_name[n.name()] = &n;
  std::vector<std::vector<std::string>> rows;
  for (const v1::Partition& p : parts.partitions()) {
    if (!filter.partitions.empty() && !filter.partitions.contains(p.name())) continue;
    // Groups by state (with the "*" of an unconnected agent), and for %E/%u by reason too.
    std::map<std::string, std::vector<const v1::Node*>> groups;
    for (const std::string& name : p.nodes()) {
      auto it = by_name.find(name);
      if (it == by_name.end() || !Passes(filter, *it->second)) continue;
      groups[NodeStateText(*it->second)].push_back(it->second);
    }
    for (const auto& [state, members] : groups) {
      std::vector<std::string> names;
      uint64_t gpus = 0, free = 0;
      for (const v1::Node* n : members) {
        names.push_back(n->name());
        gpus += n->gpus();
        free += n->state() == v1::NODE_STATE_UP ? n->gpus_free() : 0;
      }
      std::vector<std::string> row;
      for (const PartitionField& f : *fields) {
        switch (f.letter) {
          case 'P': row.push_back(p.name() + (p.is_default() ? "*" : "")); break;
          case 'a': row.push_back(Avail(p)); break;
          case 'l': row.push_back(Limit(p, true)); break;
          case 'L': row.push_back(Limit(p, false)); break;
          case 'D': row.push_back(std::to_string(members.size())); break;
          case 't': row.push_back(state); break;
          case 'T': row.push_back(LongState(state)); break;
          case 'N': row.push_back(CompressHostlist(names)); break;
          case 'G': row.push_back(std::to_string(gpus)); break;
          case 'f': row.push_back(std::to_string(free)); break;
          case 'E': row.push_back(members.front()->reason().empty() ? "none" : members.front()->reason()); break;
          case 'u': row.push_back(members.front()->reason_user().empty() ? "-" : members.front()->reason_user()); break;
          case 'H': row.push_back(FormatTime(members.front()->reason_time())); break;
          case 'g': row.push_back(Groups(p)); break;
          case 'm':
            row.push_back(p.max_gpus_per_job() == 0 ? "unlimited" : std::to_string(p.max_gpus_per_job()));
            break;
          default: row.emplace_back(); break;
        }
      }
      rows.push_back(std::move(row));
    }
  }
  return Render(*fields, rows, header);
}

std::string FormatPartitionSummary(const v1::PartitionListResponse& parts, const v1::ListNodesResponse& nodes,
                                   const PartitionFilter& filter, bool header) {
  std::map<std::string, const v1::Node*> by_name;
  for (const v1::Node& n : nodes.nodes()) by_name[n.name()] = &n;
  const std::vector<PartitionField> fields = {
      {"", 'P', 0, false}, {"  ", 'a', 0, false}, {"  ", 'l', 0, true}, {"  ", 'D', 0, true}, {"  ", 'N', 0, false}};
  std::vector<std::vector<std::string>> rows;
  for (const v1::Partition& p : parts.partitions()) {
    if (!filter.partitions.empty() && !filter.partitions.contains(p.name())) continue;
    size_t a = 0, i = 0, o = 0;
    std::vector<std::string> names;
    for (const std::string& name : p.nodes()) {
      auto it = by_name.find(name);
      if (it == by_name.end() || !Passes(filter, *it->second)) continue;
      const std::string s = BaseState(*it->second);
      (s == "alloc" || s == "mix" ? a : s == "idle" ? i : o) += 1;
      names.push_back(name);
    }
    rows.push_back(
        {p.name() + (p.is_default() ? "*" : ""), Avail(p), Limit(p, true),
         std::to_string(a) + "/" + std::to_string(i) + "/" + std::to_string(o) + "/" + std::to_string(a + i + o),
         CompressHostlist(names)});
  }
  // sinfo -s names the NODES column by what it counts.
  if (header) rows.insert(rows.begin(), {"PARTITION", "AVAIL", "TIMELIMIT", "NODES(A/I/O/T)", "NODELIST"});
  return Render(fields, rows, false);
}

std::string FormatReasons(const v1::ListNodesResponse& nodes, const PartitionFilter& filter, bool header) {
  struct Key {
    std::string reason, user;
    int64_t time;
    bool operator<(const Key& o) const { return std::tie(reason, user, time) < std::tie(o.reason, o.user, o.time); }
  };
  std::map<Key, std::vector<std::string>> groups;
  for (const v1::Node& n : nodes.nodes()) {
    if (n.state() == v1::NODE_STATE_UP || !Passes(filter, n)) continue;
    if (!filter.partitions.empty() && std::none_of(n.partitions().begin(), n.partitions().end(),
                                                   [&](const std::string& p) { return filter.partitions.contains(p); }))
      continue;
    groups[{n.reason().empty() ? "none" : n.reason(), n.reason_user().empty() ? "-" : n.reason_user(), n.reason_time()}]
        .push_back(n.name());
  }
  const std::vector<PartitionField> fields = {
      {"", 'E', 0, false}, {"  ", 'u', 0, false}, {"  ", 'H', 0, false}, {"  ", 'N', 0, false}};
  std::vector<std::vector<std::string>> rows;
  for (const auto& [k, names] : groups) rows.push_back({k.reason, k.user, FormatTime(k.time), CompressHostlist(names)});
  return Render(fields, rows, header);
}

}  // namespace phalanx::cli
