#include "adapters/slurm/slurm_mapping.h"

#include <algorithm>

#include "util/hostlist.h"
#include "util/numbers.h"
#include "util/printable.h"
#include "util/strings.h"

namespace phalanx::slurm {

Duration CredExpire(std::string_view authinfo) {
  const size_t at = authinfo.find("cred_expire=");
  if (at == std::string_view::npos) return kDefaultCredExpire;
  // atoi: leading blanks, a sign, digits; anything else ends it.
  std::string_view v = authinfo.substr(at + 12);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  bool negative = false;
  if (!v.empty() && (v.front() == '-' || v.front() == '+')) {
    negative = v.front() == '-';
    v.remove_prefix(1);
  }
  Duration d = 0;
  for (char c : v) {
    if (c < '0' || c > '9' || d > 100'000'000) break;
    d = d * 10 + (c - '0');
  }
  return negative || d < 5 ? kDefaultCredExpire : d;
}

namespace {

std::optional<std::pair<Level, bool>> TagLevel(std::string_view v) {
  bool prefer = false;
  if (v.ends_with(":prefer")) {
    prefer = true;
    v.remove_suffix(7);
  } else if (v.ends_with(":require")) {
    v.remove_suffix(8);
  }
  if (v == "any") return std::pair{Level::kCore, prefer};
  if (v == "node") return std::pair{Level::kNode, prefer};
  if (v == "nvlink" || v == "nvl") return std::pair{Level::kNvlDomain, prefer};
  if (v == "leaf") return std::pair{Level::kLeaf, prefer};
  if (v == "spine") return std::pair{Level::kSpine, prefer};
  return std::nullopt;
}

bool ClassName(std::string_view v) {
  return !v.empty() && v.size() < 64 && std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

std::string_view SlurmJobStateName(SlurmJobState s) {
  switch (s) {
    case SlurmJobState::kPending: return "PENDING";
    case SlurmJobState::kRunning: return "RUNNING";
    case SlurmJobState::kSuspended: return "SUSPENDED";
    case SlurmJobState::kCompleted: return "COMPLETED";
    case SlurmJobState::kCancelled: return "CANCELLED";
    case SlurmJobState::kFailed: return "FAILED";
    case SlurmJobState::kTimeout: return "TIMEOUT";
    case SlurmJobState::kNodeFail: return "NODE_FAIL";
    case SlurmJobState::kPreempted: return "PREEMPTED";
    case SlurmJobState::kBootFail: return "BOOT_FAIL";
    case SlurmJobState::kDeadline: return "DEADLINE";
    case SlurmJobState::kOutOfMemory: return "OUT_OF_MEMORY";
    case SlurmJobState::kOther: break;
  }
  return "OTHER";
}

Result<ManagedOptions> ParsePhalanxTag(std::string_view tag, std::string_view where) {
  const std::string at = std::string(where) + ": AdminComment " + std::string(tag);
  if (!HasPhalanxTag(tag)) return Fail(at, "does not start with 'phalanx:'");
  tag.remove_prefix(8);
  ManagedOptions o;
  for (std::string_view item : SplitNonEmpty(tag, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Fail(at, "'" + std::string(item) + "' is not key=value");
    const std::string_view key = item.substr(0, eq), v = item.substr(eq + 1);
    const auto bad = [&](std::string why) { return Fail(at, std::string(key) + "=" + std::string(v) + ": " + why); };
    if (key == "topology") {
      auto level = TagLevel(v);
      if (!level) return bad("'" + std::string(v) + "' is not a level (node, nvlink, leaf, spine or any)");
      if (level->first != Level::kCore) o.level = level->first;
      o.prefer = level->second;
    } else if (key == "elastic") {
      const size_t colon = v.find(':');
      const auto lo = colon == std::string_view::npos ? std::nullopt : ParseNumber<uint32_t>(v.substr(0, colon));
      const auto hi = colon == std::string_view::npos ? std::nullopt : ParseNumber<uint32_t>(v.substr(colon + 1));
      if (!lo || !hi || *lo < 1 || *lo > *hi) return bad("expected MIN:MAX with 1 <= MIN <= MAX");
      o.elastic_min = *lo;
      o.elastic_max = *hi;
    } else if (key == "checkpoint") {
      const size_t atsign = v.find('@');
      const auto sig = ParseNumber<int>(v.substr(0, atsign));
      const auto secs =
          atsign == std::string_view::npos ? std::optional<int64_t>(0) : ParseNumber<int64_t>(v.substr(atsign + 1));
      if (!sig || *sig < 1 || *sig > 64 || !secs || *secs < 0) return bad("expected SIGNUM@SECS");
      o.checkpoint_signal = *sig;
      o.checkpoint_warning = *secs;
    } else if (key == "preemptible") {
      if (v != "0" && v != "1") return bad("expected 0 or 1");
      o.preemptible = v == "1";
    } else if (key == "class") {
      if (!ClassName(v)) return bad("not a class name (letters, digits, '_' and '-')");
      o.priority_class = std::string(v);
    } else if (key == "partition") {
      o.partition = std::string(v);
    } else {
      return Fail(
          at, "unknown key '" + std::string(key) + "' (topology, elastic, checkpoint, preemptible, class, partition)");
    }
  }
  return o;
}

Result<std::optional<ManagedOptions>> ManagedBy(const SlurmJob& job, const ManagedRule& rule) {
  if (HasPhalanxTag(job.admin_comment)) {
    auto o = ParsePhalanxTag(job.admin_comment, "job " + std::to_string(job.id));
    PHX_RETURN_IF_ERROR(o);
    return std::optional<ManagedOptions>(std::move(*o));
  }
  if (rule.partitions.contains(job.partition) || (!job.qos.empty() && rule.qos.contains(job.qos))) {
    ManagedOptions o;
    o.partition = job.partition;
    return std::optional<ManagedOptions>(std::move(o));
  }
  return std::optional<ManagedOptions>();
}

std::string SlurmName(std::string_view name) {
  std::string shown = Printable(name);
  if (shown.size() <= 256) return shown;
  size_t cut = 256;
  while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;  // a whole character
  shown.resize(cut);
  return shown;
}

Result<JobSpec> ToJobSpec(const SlurmJob& job, const ManagedOptions& o, const std::string& user) {
  const std::string where = "job " + std::to_string(job.id);
  JobSpec s;
  s.name = SlurmName(job.name);
  s.user = user;
  s.account = job.account;
  s.priority_class = o.priority_class;
  if (job.gpus_per_node > 0) {
    const uint32_t nodes = std::max<uint32_t>(1, job.num_nodes);
    s.shape.nodes = nodes;
    s.shape.gpus_per_node = job.gpus_per_node;
    s.shape.gpus = nodes * job.gpus_per_node;
  } else if (job.gpus_per_job > 0) {
    s.shape.gpus = job.gpus_per_job;
  } else {
    return Fail(where, "asks for no GPUs (--gres=gpu:N or --gpus=N)");
  }
  if (o.level) {
    s.shape.level = *o.level;
    s.shape.fit = o.prefer ? FitMode::kPrefer : FitMode::kRequire;
  }
  if (o.elastic_max > 0) {
    if (s.shape.nodes > 0) return Fail(where, "--phx-elastic needs --gpus=N, not -N with --gres=gpu:G");
    s.shape.gpus = o.elastic_max;
    s.min_gpus = o.elastic_min;
  }
  s.walltime = job.time_limit;
  s.preemptible = o.preemptible;
  s.checkpoint_grace = o.checkpoint_warning;
  return s;
}

std::vector<std::string> TopologyOrder(const Topology& topo, const std::vector<GpuId>& gpus) {
  std::vector<uint32_t> nodes;
  for (GpuId g : gpus) nodes.push_back(topo.node_of(g).value);
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::vector<std::string> out;
  for (uint32_t n : nodes) out.push_back(topo.domain(topo.node_domain(NodeId(n))).name);
  return out;
}

std::vector<std::string> SlurmNodeList(const Topology& topo, const std::vector<GpuId>& gpus) {
  auto names = TopologyOrder(topo, gpus);
  // Slurm's order: its hostlist sort (prefix, then number), what CompressHostlist expands to.
  auto sorted = ExpandHostlist(CompressHostlist(names), "nodelist");
  return sorted ? std::move(*sorted) : names;
}

std::vector<uint32_t> GpusByNode(const SlurmJob& j) {
  if (j.gpus_by_node.size() == j.nodes.size()) return j.gpus_by_node;
  uint32_t per_node = j.gpus_per_node;
  if (per_node == 0 && j.gpus_per_job > 0 && !j.nodes.empty())
    per_node = (j.gpus_per_job + static_cast<uint32_t>(j.nodes.size()) - 1) / static_cast<uint32_t>(j.nodes.size());
  return std::vector<uint32_t>(j.nodes.size(), per_node);
}

bool HoldsNodes(const SlurmJob& j) {
  return !j.nodes.empty() &&
         (j.state == SlurmJobState::kRunning || j.state == SlurmJobState::kSuspended || j.completing);
}

std::map<std::string, ExternalLoad> ExternalLoadByNode(const std::vector<SlurmJob>& unmanaged) {
  std::map<std::string, ExternalLoad> out;
  for (const SlurmJob& j : unmanaged) {
    if (!HoldsNodes(j)) continue;
    const std::vector<uint32_t> by_node = GpusByNode(j);
    for (size_t k = 0; k < j.nodes.size(); ++k) {
      const uint32_t gpus = by_node[k];
      if (gpus == 0) continue;  // a CPU-only job (or a node of it without GPUs) takes no GPU
      ExternalLoad& l = out[j.nodes[k]];
      l.gpus += gpus;
      l.until = std::max(l.until, j.end);
      l.jobs.push_back(j.id);
      l.pieces.emplace_back(gpus, j.end);
    }
  }
  for (auto& [node, l] : out) {
    std::vector<size_t> order(l.jobs.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return l.jobs[a] < l.jobs[b]; });
    ExternalLoad sorted;
    sorted.gpus = l.gpus;
    sorted.until = l.until;
    for (size_t k : order) {
      sorted.jobs.push_back(l.jobs[k]);
      sorted.pieces.push_back(l.pieces[k]);
    }
    l = std::move(sorted);
  }
  return out;
}

}  // namespace phalanx::slurm
