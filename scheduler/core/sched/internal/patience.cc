#include "core/sched/internal/patience.h"

#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/reserve.h"
#include "core/sched/internal/scheduler_state.h"

namespace phalanx {

std::optional<Reservation> WaitForBetterBlock(SchedulerState& s, PassState& pass, JobRecord& job,
                                              const Placement& now_placement) {
  const double c = s.config.placement_comm_share;
  const uint32_t n = static_cast<uint32_t>(now_placement.gpus.size());
  auto start_now = [&]() -> std::optional<Reservation> {
    job.deferred_since = -1;
    return std::nullopt;
  };
  // Elastic jobs take what is free (they can grow later); exclusive and node-shaped jobs have
  // their shape already.
  if (c <= 0 || n <= 1 || job.spec.elastic() || job.spec.shape.exclusive || job.spec.shape.nodes > 0)
    return start_now();
  const SchedulerState::BestBlock& best = s.Best(n);
  if (best.busbw_gbs <= 0 || now_placement.prediction.busbw_gbs >= best.busbw_gbs * s.config.node_fit_tolerance)
    return start_now();
  // A job that must stay inside a domain no larger than the good one gets no better shape.
  if (job.spec.shape.fit == FitMode::kRequire && job.spec.shape.level <= best.level) return start_now();
  const double busbw = now_placement.prediction.busbw_gbs;
  const double slowdown = busbw > 0 ? (1 - c) + c * best.busbw_gbs / busbw : 1e9;
  const double cost = (slowdown - 1) * static_cast<double>(s.policies.runtime->Run(job));
  const Time since = job.deferred_since >= 0 ? job.deferred_since : pass.now;
  if (static_cast<double>(pass.now - since) >= cost) return start_now();
  JobRecord good = job;
  good.spec.shape.fit = FitMode::kRequire;
  good.spec.shape.level = best.level;
  // The block promised to the job in the last pass may be the slow one (a reservation made on
  // its own shape): Reserve must not offer it back as good.
  auto own = pass.promised.extract(job.spec.id);
  std::optional<Reservation> r = Reserve(s, pass, good);
  if (!own.empty()) pass.promised.insert(std::move(own));
  if (!r || static_cast<double>(r->start - since) >= cost) return start_now();
  job.deferred_since = since;
  return r;
}

}  // namespace phalanx
