#include "core/placement/simple_placers.h"

#include <algorithm>
#include <optional>

namespace phalanx {
namespace {

PlaceOutcome Busy(std::string why) {
  PlaceOutcome out;
  out.status = PlaceStatus::kBusy;
  out.reason = std::move(why);
  return out;
}

PlaceOutcome Placed(const BandwidthModel& model, std::vector<GpuId> gpus) {
  PlaceOutcome out;
  out.status = PlaceStatus::kPlaced;
  std::sort(gpus.begin(), gpus.end());
  out.placement.prediction = model.Predict(gpus);
  out.placement.gpus = std::move(gpus);
  return out;
}

// Takes `want` free GPUs from node `n` in index order.
void TakeFromNode(const Topology& t, NodeId n, uint32_t want, std::vector<GpuId>& out) {
  const Domain& d = t.domain(t.node_domain(n));
  for (uint32_t g = d.first_gpu; g < d.first_gpu + d.gpu_count && want > 0; ++g) {
    if (t.is_free(GpuId(g))) {
      out.push_back(GpuId(g));
      --want;
    }
  }
}

// Fills `out` from the nodes of domain `d` (whole free nodes first for gang jobs when
// `whole_first`), honouring node-shaped and exclusive requests. False if it cannot.
bool FillFromNodes(const Topology& t, DomainId d, const PlacementRequest& r, bool whole_first,
                   std::vector<GpuId>& out) {
  const Domain& dom = t.domain(d);
  std::vector<NodeId> nodes;
  for (uint32_t i = dom.first_node; i < dom.first_node + dom.node_count; ++i) nodes.push_back(NodeId(i));
  auto node_free = [&](NodeId n) { return t.free_gpus(t.node_domain(n)); };
  if (whole_first) {
    std::stable_sort(nodes.begin(), nodes.end(), [&](NodeId a, NodeId b) { return node_free(a) > node_free(b); });
  }
  uint32_t need = r.TotalGpus();
  uint32_t nodes_left = r.nodes;
  for (NodeId n : nodes) {
    if (need == 0) break;
    const uint32_t f = node_free(n);
    if (f == 0) continue;
    if (r.exclusive && f != t.node_gpu_count(n)) continue;
    if (r.nodes > 0) {
      if (f < r.gpus_per_node || nodes_left == 0) continue;
      TakeFromNode(t, n, r.gpus_per_node, out);
      need -= r.gpus_per_node;
      --nodes_left;
    } else {
      const uint32_t take = std::min(f, need);
      TakeFromNode(t, n, take, out);
      need -= take;
    }
  }
  return need == 0;
}

// The outcome both baselines give before searching: unsatisfiable, or too few free GPUs.
std::optional<PlaceOutcome> Precheck(const Topology& t, const Placer& placer, const PlacementRequest& r) {
  if (std::string why = placer.Unsatisfiable(r); !why.empty()) {
    PlaceOutcome out;
    out.status = PlaceStatus::kUnsatisfiable;
    out.reason = why;
    return out;
  }
  const uint32_t n = r.TotalGpus();
  if (t.free_gpus(t.root()) < n)
    return Busy("Resources: " + std::to_string(n) + " GPUs requested, " + std::to_string(t.free_gpus(t.root())) +
                " free");
  return std::nullopt;
}

}  // namespace

PlaceOutcome PlaceFirstFit(const Topology& t, const BandwidthModel& model, const Placer& placer,
                           const PlacementRequest& r) {
  if (auto early = Precheck(t, placer, r)) return *early;
  std::vector<GpuId> gpus;
  if (!FillFromNodes(t, t.root(), r, false, gpus)) return Busy("Resources: no nodes fit the request");
  if (model.Predict(gpus).busbw_gbs <= 0) return Busy("Resources: free GPUs are in disconnected parts");
  return Placed(model, std::move(gpus));
}

PlaceOutcome PlaceNodeBestFit(const Topology& t, const BandwidthModel& model, const Placer& placer,
                              const PlacementRequest& r) {
  if (auto early = Precheck(t, placer, r)) return *early;
  const uint32_t n = r.TotalGpus();
  // Candidate domains: nodes and switches (not GPUs/groups) with enough free GPUs; lowest
  // level first, then the fullest (best fit), then the first.
  std::vector<DomainId> cands;
  for (uint32_t i = 0; i < t.domain_count(); ++i) {
    const DomainId d(i);
    const Domain& dom = t.domain(d);
    if (dom.level < Level::kNode || t.free_gpus(d) < n) continue;
    if (r.fit == FitMode::kRequire && dom.level > r.level) continue;
    if (r.nodes > 1 && dom.level == Level::kNode) continue;
    cands.push_back(d);
  }
  std::sort(cands.begin(), cands.end(), [&](DomainId a, DomainId b) {
    const Domain &da = t.domain(a), &db = t.domain(b);
    if (da.level != db.level) return da.level < db.level;
    if (t.free_gpus(a) != t.free_gpus(b)) return t.free_gpus(a) < t.free_gpus(b);
    return a < b;
  });
  for (DomainId d : cands) {
    std::vector<GpuId> gpus;
    if (FillFromNodes(t, d, r, true, gpus) && model.Predict(gpus).busbw_gbs > 0) return Placed(model, std::move(gpus));
  }
  return Busy("TopologyBlock: no switch has the free nodes the request needs");
}

}  // namespace phalanx
