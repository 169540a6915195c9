#include "core/sched/internal/preemption.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/patience.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/what_if.h"
#include "core/sched/policy/service_queue.h"

namespace phalanx {

namespace {

// Keeps only the GPUs of `claim` the preemptor would use: places it with everything else blocked.
std::vector<GpuId> TrimClaim(SchedulerState& s, const JobRecord& job, std::vector<GpuId> claim) {
  const Topology& topo = *s.topo;
  std::vector<GpuId> others;
  for (uint32_t g = 0; g < topo.gpu_count(); ++g) {
    if (topo.is_free(GpuId(g)) && !std::binary_search(claim.begin(), claim.end(), GpuId(g))) others.push_back(GpuId(g));
  }
  WhatIf what_if(*s.topo);
  what_if.Block(others);
  auto p = s.PlaceNow(job, SchedulerState::ShapeFor(job, s.MinLegalSize(job)));
  if (!p) return claim;
  std::vector<GpuId> used = p->gpus;
  used.insert(used.end(), p->held.begin(), p->held.end());
  std::sort(used.begin(), used.end());
  return used;
}

// The victims of a preemptor of `preemptor`'s class and service queue, whatever its size: the
// running jobs the policy lets it take GPUs from (all of them, or a shrink), priced.
PassState::Victims VictimsFor(SchedulerState& s, PassState& pass, const JobRecord& job, const Preemptor& preemptor) {
  const Time now = pass.now;
  const PreemptionPolicy& policy = *s.policies.preemption;
  const bool shrink_for_waiting = s.config.elastic && s.config.shrink_for_waiting;
  PassState::Victims out;
  for (const auto& [vid, vp] : s.active.Walk()) {
    const JobRecord& v = *vp;
    if (v.state != JobState::kRunning || v.preempted_for != kNoJob || v.spec.suspended) continue;
    // shrink_for_waiting: elastic jobs of the same or a lower class above their smallest size
    // may also give GPUs up (a shrink, through a checkpoint) to a job that waits. A job the class
    // table does not let it preempt is a candidate only to shrink, once it has run its class's
    // minimum since its last start or resize.
    const bool may = policy.MayPreempt(preemptor, v, now);
    if (!may && !(shrink_for_waiting && v.spec.elastic() && v.class_rank <= job.class_rank &&
                  v.gpus.size() > s.MinLegalSize(v)))
      continue;
    if (!may &&
        now - v.start < s.classes.min_runtime_before_preemption(PriorityClassId(static_cast<uint32_t>(v.class_rank))))
      continue;
    std::optional<PreemptionPrice> price;
    bool shrink = false;
    uint32_t removable = static_cast<uint32_t>(v.gpus.size());
    if (s.config.elastic && v.spec.elastic() && !v.spec.shape.exclusive) {
      const uint32_t keep = s.MinLegalSize(v);
      if (keep < v.gpus.size() && (price = policy.Price(preemptor, v, true, now))) {
        shrink = true;
        removable -= keep;
      }
    }
    if (!shrink && may) price = policy.Price(preemptor, v, false, now);
    if (!price) continue;
    out.victims.push_back({vid, shrink, removable, price->cost, price->min_preemptor_gpus, &v});
    out.min_preemptor = std::min(out.min_preemptor, price->min_preemptor_gpus);
  }
  return out;
}

// Frees a block of `n` GPUs for `job` (shape `request`) from the victims of its class and service
// queue that a preemptor of n GPUs may take, when one can be found; true when victims were chosen
// and told to checkpoint.
bool PreemptFor(SchedulerState& s, PassState& pass, JobRecord& job, uint32_t n, const PlacementRequest& request,
                const PassState::Victims& table, std::vector<Decision>& out) {
  const Time now = pass.now;
  const Topology& topo = *s.topo;
  const auto& victims = table.victims;
  // Candidate blocks: domains above the victims' GPUs that are big enough and allowed, each with
  // its victims and how many of their GPUs lie inside. Counted per victim in the pass's array
  // over the domains (all zero between uses; `touched` lists the non-zero ones), then listed
  // flat, (domain, victim, GPUs inside), and grouped by domain in victim order.
  const Level min_level = n <= topo.max_gpus_per_node() ? Level::kGroup : Level::kNode;
  std::vector<uint32_t>& count = pass.buffers.domain_counts;
  count.resize(topo.domain_count(), 0);
  std::vector<DomainId> touched;
  struct Inside {
    DomainId domain;
    uint32_t victim;
    uint32_t gpus;
  };
  std::vector<Inside> inside;
  for (size_t i = 0; i < victims.size(); ++i) {
    if (victims[i].min_preemptor > n) continue;
    touched.clear();
    // Its GPUs in runs of the same domain (each run once up the tree).
    const std::vector<GpuId>& gpus = victims[i].record->gpus;
    for (size_t k = 0; k < gpus.size();) {
      const DomainId leaf = topo.gpu_domain(gpus[k]);
      uint32_t run = 1;
      while (k + run < gpus.size() && topo.gpu_domain(gpus[k + run]) == leaf) ++run;
      k += run;
      for (DomainId a = topo.domain(leaf).parent; a.valid(); a = topo.domain(a).parent) {
        if (count[a.value] == 0) touched.push_back(a);
        count[a.value] += run;
      }
    }
    for (DomainId d : touched) {
      const uint32_t c = std::exchange(count[d.value], 0);
      const Domain& dom = topo.domain(d);
      if (dom.gpu_count < n || dom.level < min_level) continue;
      if (request.fit == FitMode::kRequire && dom.level > request.level) continue;
      inside.push_back({d, static_cast<uint32_t>(i), c});
    }
  }
  std::stable_sort(inside.begin(), inside.end(), [](const Inside& a, const Inside& b) { return a.domain < b.domain; });
  struct Option {
    double cost;
    DomainId domain;
    std::vector<std::pair<size_t, uint32_t>> chosen;  // victim, GPUs to free inside the domain
    bool cuts_first_node = false;  // a shrink victim's first GPU's node lies inside (config.shrink_keeps_first_node)
  };
  std::vector<Option> options;
  for (auto from = inside.begin(); from != inside.end();) {
    const DomainId d = from->domain;
    const auto to = std::find_if(from, inside.end(), [d](const Inside& x) { return x.domain != d; });
    uint32_t have = topo.free_gpus(d);
    if (have >= n) {
      from = to;
      continue;
    }
    // Cheapest per GPU freed inside the block first. Each frees a GPU at least, so the n - have
    // cheapest are all it may take: only those are sorted.
    const auto last = static_cast<uint32_t>(to - from) > n - have ? from + (n - have) : to;
    std::partial_sort(from, last, to, [&](const Inside& a, const Inside& b) {
      const double ca = victims[a.victim].cost / std::min(a.gpus, victims[a.victim].removable);
      const double cb = victims[b.victim].cost / std::min(b.gpus, victims[b.victim].removable);
      return ca != cb ? ca < cb : victims[a.victim].id < victims[b.victim].id;
    });
    Option o{0, d, {}};
    for (auto x = from; x != last && have < n; ++x) {
      const auto& v = victims[x->victim];
      const uint32_t freed = std::min(x->gpus, v.removable);
      o.chosen.push_back({x->victim, freed});
      o.cost += v.cost;
      have += freed;
    }
    from = to;
    if (have >= n && !o.chosen.empty()) {
      for (const auto& [i, freed] : o.chosen) {
        const JobRecord& v = *victims[i].record;
        if (!victims[i].shrink || v.gpus.empty() || !s.config.shrink_keeps_first_node) continue;
        const NodeId first = topo.node_of(v.gpus.front());
        for (GpuId g : v.gpus) {
          if (topo.node_of(g) == first && topo.contains(d, g)) o.cuts_first_node = true;
        }
      }
      options.push_back(std::move(o));
    }
  }
  std::sort(options.begin(), options.end(), [&](const Option& a, const Option& b) {
    if (a.cuts_first_node != b.cuts_first_node) return b.cuts_first_node;
    if (a.cost != b.cost) return a.cost < b.cost;
    const Domain &da = topo.domain(a.domain), &db = topo.domain(b.domain);
    return da.level != db.level ? da.level < db.level : a.domain < b.domain;
  });
  constexpr size_t kVerify = 8;
  for (size_t k = 0; k < options.size() && k < kVerify; ++k) {
    const Option& o = options[k];
    // Which GPUs each victim keeps (shrinks keep what is outside the block first).
    std::vector<std::vector<GpuId>> keep(o.chosen.size());
    WhatIf what_if(*s.topo);
    const Time end = now + s.policies.runtime->Run(job);
    for (const Reservation& r : s.reservations) {
      if (r.job != job.spec.id && r.start < end) what_if.Block(r.gpus);
    }
    for (size_t c = 0; c < o.chosen.size(); ++c) {
      const auto& v = victims[o.chosen[c].first];
      const JobRecord& vj = *v.record;
      what_if.ReleaseJob(v.id);
      if (v.shrink) {
        std::vector<GpuId> outside, inside;
        for (GpuId g : vj.gpus) (topo.contains(o.domain, g) ? inside : outside).push_back(g);
        std::vector<GpuId> kept = outside;
        kept.insert(kept.end(), inside.begin(), inside.end());
        kept.resize(vj.gpus.size() - o.chosen[c].second);
        kept.resize(s.LegalSizeAtMost(vj, kept.size()));  // round down to a legal size
        keep[c] = kept;
        what_if.Block(kept);
      }
    }
    PlacementRequest inside = request;
    if (inside.fit != FitMode::kRequire || inside.level > topo.domain(o.domain).level) {
      inside.level = topo.domain(o.domain).level;
      inside.fit = FitMode::kRequire;
    }
    if (!s.PlaceNow(job, inside)) continue;
    what_if.Undo();
    for (size_t c = 0; c < o.chosen.size(); ++c) {
      const auto& v = victims[o.chosen[c].first];
      JobRecord& vj = s.jobs.at(v.id);
      vj.state = JobState::kCheckpointing;
      vj.after_checkpoint = v.shrink ? JobRecord::After::kShrink : JobRecord::After::kPreempt;
      vj.shrink_to = keep[c];
      vj.preempted_for = job.spec.id;
      vj.checkpoint_deadline = now + s.CheckpointGrace(vj);
      s.NoteTimer(vj.checkpoint_deadline);
      job.victims.push_back(v.id);
      Decision d;
      d.kind = DecisionKind::kCheckpoint;
      d.job = v.id;
      d.at = now;
      d.deadline = vj.checkpoint_deadline;
      d.reason = std::string(v.shrink ? "shrink" : "preempt") + " for job " + std::to_string(job.spec.id);
      out.push_back(std::move(d));
    }
    return true;
  }
  return false;
}

}  // namespace

void ReserveClaim(SchedulerState& s, PassState& pass, JobRecord& j) {
  // GPUs freed by victims, and those their victims still hold, stay with the preemptor.
  std::erase_if(j.claim, [&](GpuId g) { return s.topo->owner(g) != kNoJob; });
  std::vector<GpuId> gpus = j.claim;
  for (JobId v : j.victims) {
    const JobRecord& vj = s.jobs.at(v);
    if (vj.after_checkpoint == JobRecord::After::kShrink) {
      std::set_difference(vj.gpus.begin(), vj.gpus.end(), vj.shrink_to.begin(), vj.shrink_to.end(),
                          std::back_inserter(gpus));
    } else {
      gpus.insert(gpus.end(), vj.gpus.begin(), vj.gpus.end());
    }
  }
  if (gpus.empty()) return;
  std::sort(gpus.begin(), gpus.end());
  if (j.victims.empty()) gpus = TrimClaim(s, j, std::move(gpus));
  s.reservations.push_back({j.spec.id, pass.now, pass.now + s.policies.runtime->Run(j), std::move(gpus), true});
  ++pass.reservations_of[j.spec.id];
  pass.reserved_filter.Add(j.spec.id);
}

bool TryPreempt(SchedulerState& s, PassState& pass, JobRecord& job, std::vector<Decision>& out) {
  if (!s.policies.preemption) return false;
  // A job restricted to some nodes (-w/-x/-C) does not preempt: the victims are chosen by shape
  // alone and might free the wrong nodes. It waits for its nodes like any job.
  if (!job.forbidden_nodes.empty()) return false;
  const uint32_t n = s.MinLegalSize(job);
  Preemptor preemptor{PriorityClassId(static_cast<uint32_t>(job.class_rank)), 0, n};
  if (s.config.order == QueueOrder::kAttained)
    preemptor.service_queue = ServiceQueue(s.config.service_queues, job, pass.now);
  const std::pair<int, uint32_t> rank{job.class_rank, preemptor.service_queue};
  // The victims first: asked for every job that waits, and most passes have none, or none that a
  // preemptor of its size may take.
  auto it = pass.victims_by_class.find(rank);
  if (it == pass.victims_by_class.end())
    it = pass.victims_by_class.emplace(rank, VictimsFor(s, pass, job, preemptor)).first;
  const PlacementRequest request = GoodBlockFor(s, job, n).value_or(SchedulerState::ShapeFor(job, n));
  const ShapeKey key = ShapeKey::Of(request, PartitionMask(job.partition_ids));
  for (const PassState::FailedPreempt& f : pass.failed_preempts) {
    if (f.rank == rank && f.key == key && f.gpus <= n) return false;
  }
  if (it->second.min_preemptor > n) {
    pass.failed_preempts.push_back({rank, key, n});
    return false;
  }
  pass.start_blocks.Clear();
  const bool ok = PreemptFor(s, pass, job, n, request, it->second, out);
  if (ok) {
    pass.victims_by_class.clear();
    pass.ends_dirty = true;
  } else {
    pass.failed_preempts.push_back({rank, key, n});
  }
  return ok;
}

}  // namespace phalanx
