#include "core/sched/internal/patience.h"

#include <algorithm>
#include <cmath>

#include "core/sched/internal/kept_plan.h"
#include "core/sched/internal/pass_state.h"
#include "core/sched/internal/reserve.h"
#include "core/sched/internal/scheduler_state.h"
#include "core/sched/internal/start_now.h"

namespace phalanx {

namespace {

void StopWaiting(JobRecord& job) {
  job.deferred_since = -1;
  job.patience_slower = -1;
  job.patience_plan.planned_at = -1;
}

// Its best block if `job`, n GPUs, may wait for a good block at all (else null): placement under pressure is on, it
// is a multi-GPU job, and its shape is not fixed already (elastic jobs take what is free, they
// can grow later; exclusive and node-shaped jobs have their shape; a job that must stay inside a
// domain no larger than the good one gets no better shape).
const SchedulerState::BestBlock* MayWait(SchedulerState& s, const JobRecord& job, uint32_t n) {
  if (s.config.placement_comm_share <= 0 || n <= 1 || job.spec.elastic() || job.spec.shape.exclusive ||
      job.spec.shape.nodes > 0)
    return nullptr;
  const SchedulerState::BestBlock& best = s.Best(n);
  if (best.busbw_gbs <= 0) return nullptr;
  if (job.spec.shape.fit == FitMode::kRequire && job.spec.shape.level <= best.level) return nullptr;
  return &best;
}

// A good block for `job`: inside one domain of the best block's level, as fast as the tolerance
// allows. Not the best block's own shape (so many nodes, so many GPUs on each): on a cluster of
// mixed nodes that shape is good on one kind of node only. On Philly's the best 8 GPUs are four
// 2-GPU nodes (11.5 GB/s); one 8-GPU node is as good (11.4), and four 8-GPU nodes with 2 GPUs
// each are not (2.3-5.8 GB/s), yet that shape started 8-GPU jobs there.
PlacementRequest GoodShape(const SchedulerState& s, const JobRecord& job, const SchedulerState::BestBlock& best) {
  PlacementRequest good = job.spec.shape;
  good.fit = FitMode::kRequire;
  good.level = best.level;
  good.min_busbw_gbs = best.busbw_gbs * s.config.node_fit_tolerance;
  return good;
}

// The cost of starting a job of n GPUs on a slower block, `slower` for itself and the jobs it
// slows, with the other pending jobs' share of the capacity it loses: x (1 + Q n / N).
double WithQueue(const SchedulerState& s, double slower, uint32_t n) {
  const double queued = s.pending.size() > 0 ? static_cast<double>(s.pending.size() - 1) : 0.0;
  const double cluster = std::max<double>(1, s.topo->gpu_count());
  return slower * (1 + queued * n / cluster);
}

// How long a walk's good block `plan` is kept while free: patience_replan, or, for a block planned
// reserve_horizon or more out, patience_far_keep seconds per hour it was planned out when longer.
Duration KeepFor(const SchedulerConfig& c, const PlannedBlock& plan) {
  if (c.patience_replan <= 0 || c.reserve_horizon <= 0 || c.patience_far_keep <= 0 || plan.planned_at < 0)
    return c.patience_replan;
  const Duration out = plan.start - plan.planned_at;
  if (out < c.reserve_horizon) return c.patience_replan;
  const double far = std::floor(static_cast<double>(out) * static_cast<double>(c.patience_far_keep) / 3600.0);
  return std::max(c.patience_replan, static_cast<Duration>(std::min(far, 1e18)));
}

// The wait of `job` (n GPUs), held back for a good block since `since`, to its bound `until`: on
// the good block a walk planned in the last patience_replan seconds (longer far out: KeepFor)
// while it stays free, else on the one a walk plans now (within the pass's patience_depth), else
// without one. No good block planned at all: start now.
Patience Hold(SchedulerState& s, PassState& pass, JobRecord& job, uint32_t n, Time since, Time until,
              const SchedulerState::BestBlock& best) {
  const Duration w = s.policies.runtime->Run(job);
  // The good block a walk planned in the last patience_replan seconds (a far one: KeepFor), kept
  // while still free.
  if (std::optional<Reservation> kept =
          KeptPlan(s, pass, job.spec.id, job.patience_plan, n, w, KeepFor(s.config, job.patience_plan))) {
    job.deferred_since = since;
    s.patience_due = std::min(s.patience_due, until);
    kept->for_patience = true;
    return {.wait = true, .block = std::move(kept), .until = until};
  }
  if (s.config.patience_depth > 0 && pass.patience_walks >= s.config.patience_depth) {
    // Beyond the depth: waits to the bound without a planned block (a pass runs at the bound).
    job.deferred_since = since;
    s.patience_due = std::min(s.patience_due, until);
    return {.wait = true, .block = std::nullopt, .until = until};
  }
  ++pass.patience_walks;
  // The good shape is set on the record for the Reserve call and put back after it (a copy of the
  // record, strings and all, for every job held in every pass cost more than the rest of this).
  struct OwnShape {
    JobRecord& job;
    const PlacementRequest own;
    ~OwnShape() { job.spec.shape = own; }
  } own_shape{job, job.spec.shape};
  job.spec.shape = GoodShape(s, job, best);
  // The block promised to the job in the last pass may be the slow one (a reservation made on
  // its own shape): Reserve must not offer it back as good.
  std::optional<Reservation> r = Reserve(s, pass, job, OwnBlock::kHide);
  // The planned start of the good block does not shorten the wait: it is planned on walltime
  // requests, which jobs mostly end well before (users ask 2-3x), so it overstates the wait, and
  // trusting it started jobs split that a good block would soon have taken (ITP x2: 356 of 422
  // split starts; placement efficiency 0.83 with it, 0.97 without). The job waits until the
  // bound (delay scheduling); no planned good block at all: start now.
  if (!r) {
    StopWaiting(job);
    return {};
  }
  job.deferred_since = since;
  job.patience_plan = {pass.now, r->start, r->gpus};
  r->for_patience = true;
  if (r->start > pass.now) s.patience_due = std::min(s.patience_due, until);
  return {.wait = true, .block = std::move(r), .until = until};
}

}  // namespace

std::optional<PlacementRequest> GoodBlockFor(SchedulerState& s, const JobRecord& job, uint32_t n) {
  const SchedulerState::BestBlock* best = MayWait(s, job, n);
  if (!best) return std::nullopt;
  PlacementRequest good = GoodShape(s, job, *best);
  good.gpus = n;
  return good;
}

Patience WaitForBetterBlock(SchedulerState& s, PassState& pass, JobRecord& job, const Placement& now_placement) {
  const double c = s.config.placement_comm_share;
  const uint32_t n = static_cast<uint32_t>(now_placement.gpus.size());
  auto start_now = [&]() -> Patience {
    StopWaiting(job);
    return {};
  };
  const SchedulerState::BestBlock* may = MayWait(s, job, n);
  if (!may) return start_now();
  const SchedulerState::BestBlock& best = *may;
  if (now_placement.prediction.busbw_gbs >= best.busbw_gbs * s.config.node_fit_tolerance) return start_now();
  const double busbw = now_placement.prediction.busbw_gbs;
  const double slowdown = busbw > 0 ? (1 - c) + c * best.busbw_gbs / busbw : 1e9;
  // Of that slowdown, the part that comes from sharing links with running jobs' rings (the block's
  // own shape, in the empty cluster, is faster): a ring that joins them takes its fair share from
  // them, and they lose about as much as it does. That slowdown is counted again, for them.
  double imposed = 0;
  if (busbw > 0) {
    if (pass.shape_gpus != now_placement.gpus) {
      pass.shape_gpus = now_placement.gpus;
      pass.shape_busbw = s.ShapeBusbw(pass.shape_gpus);
    }
    const double shape = pass.shape_busbw;
    if (shape > busbw) imposed = c * best.busbw_gbs / busbw - c * best.busbw_gbs / shape;
  }
  // The slower run holds n GPUs (slowdown - 1) x run longer than the same work needs: under
  // pressure that capacity is taken from the jobs queued behind, each of which then waits about
  // lost GPU-seconds / cluster GPUs longer. So the cost is the lost time of the job and of those it
  // slows, plus, for the other pending jobs, their share of the lost capacity:
  // (slowdown - 1 + imposed) x run x (1 + Q n / N).
  // The run is the walltime request under every runtime estimator (the block is still planned on
  // the estimator's run, w): the bound was measured on requests, which users give 2-3x the run.
  // On a predicted run it came out so short that jobs started split at once, ran past their
  // predictions and queued the rest (runtime=predicted, ITP x2: placement efficiency 0.397,
  // average JCT 30.93 h; on the request 0.924 and 10.27 h; docs/scheduling.md).
  const double slower = (slowdown - 1 + imposed) * static_cast<double>(RemainingWalltime(job));
  const double cost = WithQueue(s, slower, n);
  const Time since = job.deferred_since >= 0 ? job.deferred_since : pass.now;
  if (static_cast<double>(pass.now - since) >= cost) return start_now();
  job.patience_slower = slower;
  job.patience_counted_at = pass.now;
  return Hold(s, pass, job, n, since, since + static_cast<Time>(std::ceil(cost)), best);
}

std::optional<StillHeld> WaitStillHeld(SchedulerState& s, PassState& pass, JobRecord& job, uint32_t n) {
  if (job.deferred_since < 0 || job.patience_slower < 0) return std::nullopt;
  const SchedulerState::BestBlock* may = MayWait(s, job, n);
  if (!may) return std::nullopt;
  // The slower block free now is looked at again as often as a good block is planned again.
  if (pass.now - job.patience_counted_at >= s.config.patience_replan) return std::nullopt;
  const double cost = WithQueue(s, job.patience_slower, n);
  if (static_cast<double>(pass.now - job.deferred_since) >= cost) return std::nullopt;  // the bound
  const Time until = job.deferred_since + static_cast<Time>(std::ceil(cost));
  const SchedulerState::BestBlock& best = *may;
  StillHeld out;
  out.good = TryStartNowWithin(s, pass, job, GoodShape(s, job, best));
  if (out.good) {
    StopWaiting(job);
    return out;
  }
  // Fewer GPUs free than it needs: no slower block either; it waits as any job that cannot start.
  if (s.FreeGpusNowFor(job) < n) return std::nullopt;
  out.patience = Hold(s, pass, job, n, job.deferred_since, until, best);
  return out;
}

}  // namespace phalanx
