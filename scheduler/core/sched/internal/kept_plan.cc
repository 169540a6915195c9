#include "core/sched/internal/kept_plan.h"

#include <algorithm>
#include <cstdint>

#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/reserve.h"
#include "core/sched/internal/reserve_inputs.h"
#include "core/sched/internal/scheduler_state.h"

namespace phalanx {

bool PlannedBlockFree(SchedulerState& s, PassState& pass, JobId id, Time start, const std::vector<GpuId>& gpus,
                      Duration w) {
  const Topology& topo = *s.topo;
  const Time end = start + w;
  if (start <= pass.now) return false;  // due: a walk says whether it is free now
  JobId last = kNoJob;
  for (GpuId g : gpus) {
    if (topo.node_state(topo.node_of(g)) != NodeState::kUp) return false;
    const JobId owner = topo.owner(g);
    // Free now: no owner, or blocked only while jobs start now (StartBlocks).
    if (owner == kNoJob || owner == last || (owner == Topology::kHeld && pass.start_blocks.blocks(g))) continue;
    if (Topology::IsExternal(owner) || owner == Topology::kHeld) return false;
    // A GPU's owner is an active job: the active set's sorted vector, not the map of every job
    // ever known (a dozen cache misses a lookup under a long trace).
    const JobRecord* holder = s.active.Find(owner);
    if (!holder || s.ReleaseTime(*holder) > start) return false;
    last = owner;
  }
  // The reservations over its time, their GPUs tested against the block's as bits, a word at a
  // time: only those that name one of the block's words (the block's set, then cleared again: the
  // buffer stays all clear between calls). Every held job asks at every pass, and a long queue
  // has hundreds of reservations, most far from the block.
  std::vector<uint64_t>& bits = pass.buffers.gpu_bits;
  bits.resize((topo.gpu_count() + 63) / 64);
  for (GpuId g : gpus) bits[g.value >> 6] |= uint64_t{1} << (g.value & 63);
  ReservationWords(s, pass);
  const std::vector<std::vector<std::pair<uint32_t, uint64_t>>>& by_word = pass.reserve.res_by_word;
  bool free = true;
  for (size_t k = 0; free && k < gpus.size(); ++k) {
    const uint32_t w = gpus[k].value >> 6;
    if (k > 0 && (gpus[k - 1].value >> 6) == w) continue;  // the word's reservations tested already
    for (const auto& [i, m] : by_word[w]) {
      const Reservation& r = s.reservations[i];
      if ((bits[w] & m) && r.start < end && r.end > start && r.job != id) {
        free = false;
        break;
      }
    }
  }
  for (GpuId g : gpus) bits[g.value >> 6] = 0;
  return free;
}

namespace {

// Whether a walk made `plan` less than `replan` ago (0: never kept), for n GPUs.
bool Recent(const PassState& pass, const PlannedBlock& plan, uint32_t n, Duration replan) {
  return replan > 0 && plan.planned_at >= 0 && pass.now - plan.planned_at < replan && plan.gpus.size() == n;
}

}  // namespace

std::optional<Reservation> KeptPlan(SchedulerState& s, PassState& pass, JobId id, const PlannedBlock& plan, uint32_t n,
                                    Duration w, Duration replan) {
  if (!Recent(pass, plan, n, replan) || !PlannedBlockFree(s, pass, id, plan.start, plan.gpus, w)) return std::nullopt;
  return Reservation{id, plan.start, plan.start + w, plan.gpus};
}

std::optional<Reservation> ReserveOrKeep(SchedulerState& s, PassState& pass, JobRecord& job, bool may_keep) {
  const Duration w = s.policies.runtime->Run(job);
  if (may_keep && job.forbidden_nodes.empty() && !pass.user_gpu_limits) {
    const PlannedBlock& plan = job.reserve_plan;
    const uint32_t n = s.MinLegalSize(job);
    if (auto kept = KeptPlan(s, pass, job.spec.id, plan, n, w, s.config.reserve_replan)) {
      pass.start_blocks.Clear();
      return kept;
    }
    // No longer free, but far out: it waits without one until it is due to be planned anew.
    if (s.config.reserve_horizon > 0 && Recent(pass, plan, n, s.config.reserve_replan) &&
        plan.start - pass.now >= s.config.reserve_horizon) {
      pass.start_blocks.Clear();
      return std::nullopt;
    }
  }
  std::optional<Reservation> r = Reserve(s, pass, job);
  if (r) {
    job.reserve_plan = {pass.now, r->start, r->gpus};
  } else {
    job.reserve_plan.planned_at = -1;
  }
  return r;
}

}  // namespace phalanx
