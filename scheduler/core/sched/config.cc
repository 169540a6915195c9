#include "core/sched/config.h"

#include <cmath>
#include <optional>
#include <utility>

#include "util/numbers.h"
#include "util/printable.h"

namespace phalanx {

std::vector<std::string_view> PolicyPresetNames() {
  return {"phalanx", "slurm-like", "ideal-backfill", "fifo-firstfit"};
}

Result<SchedulerConfig> PolicyPreset(std::string_view name) {
  SchedulerConfig c;
  c.name = std::string(name);
  if (name == "phalanx") {
    // EASY backfill with block-shaped reservations: one reservation for the first blocked job,
    // plus one for every job that has waited two days (a bound on starvation). Measured against
    // conservative backfill (reserve_depth 100) in docs/results.md: conservative delays the many
    // small jobs more than it helps the few large ones.
    c.backfill = BackfillMode::kEasy;
    c.reserve_after_wait = 2 * 24 * 3600;
    // Not reserve_larger: measured in docs/results/notes.md (issue 17 policy round 18), it
    // helped Philly's 17-32 GPU jobs a little and cost ITP's window at 2x (model off) 9% of its
    // average JCT.
    // Placement under pressure: the all-reduce share of a well-tuned job's step (seed 003's
    // field report: "NCCL communication overhead should be < 15% of step time").
    c.placement_comm_share = 0.15;
    // Good blocks planned for at most 100 waiting jobs a pass (conservative backfill's depth, and
    // Slurm's default_queue_depth), not for each of thousands under a long queue: ITP x2 replays
    // in 10.7 s instead of 16.5, with a better average JCT (10.54 h vs 10.96) and bounded
    // slowdown (3.29 vs 3.76), placement efficiency 0.958 (0.961); the other measured cases never
    // reach the depth (docs/performance.md, twelfth round).
    c.patience_depth = 100;
    // ... and a planned good block is kept, without a walk, for 5 minutes while it stays free
    // (a deferred job's bound is far beyond: its good block matters for what it holds, not for
    // when it starts). Whole Philly trace at 4x: 13.9 s -> 6.4 s, ITP x2 6.1 -> 4.5, the same
    // scheduling figures within the walltime model's seeds (docs/performance.md, fourteenth round).
    c.patience_replan = 300;
    // ... and one planned a day or more out (reserve_horizon) 5 minutes per hour out: 2 hours for a
    // block a day out, whose start rests on walltime requests. Planned again every 5 minutes, such
    // blocks were most of the whole Philly trace at 6x: 200 -> 110 s, average JCT 4.83 h both;
    // held-out battery: every goal met on all 18 runs, mean average JCT 9.07 -> 8.90 h, the 64+
    // GPU jobs' longest wait 11.4 -> 10.2 h (docs/performance.md, thirty-fifth round).
    c.patience_far_keep = 300;
    // The starvation guard's reservations are kept the same way, 5 minutes while their block
    // stays free (EASY's one is planned anew in every pass): at saturation the guard planned ~22
    // blocks a pass, hours out. Whole Philly trace at 6x: 112 -> 95 s, avg JCT 6.31 -> 6.27 h;
    // held-out-like traces 12-25% better average JCT, but the longest waits of 64+ GPU jobs 1-16%
    // longer, still below slurm-like's (docs/performance.md, twenty-seventh round).
    c.reserve_replan = 300;
    // ... and one of them that lost its block and starts a day or more out (Slurm's bf_window: it
    // plans nothing further) waits for its replan rather than being planned anew at once: the
    // held-out battery's slowest run (nvl72 seed 19 at 3x) 40.4 -> 20.6 s, every goal met on all
    // 18 runs, their mean average JCT 9.17 -> 9.07 h (docs/performance.md, thirty-fourth round).
    c.reserve_horizon = 24 * 3600;
    // Least attained service first (Tiresias' discretised queues, GPU-seconds attained), with
    // preemption for service: jobs of unknown length are ordered by what they have had, not by
    // age and size. Against the multifactor order on every run of docs/results.md, average JCT
    // at least as good (philly-w-x6 4.80 h against 5.71 h, slurm-like 7.51 h; itp-w-x2-c0 6.39 h
    // against 9.22 h, 11.45 h), bounded slowdown better on every loaded run; on the held-out
    // battery (bench/heldout_check.py, 18 runs) 2.64x-5.90x slurm-like's average JCT with no size
    // and no user worse off, where the multifactor order left sizes worse off in 5 runs and users
    // in 12 (docs/results/notes.md, rounds 35 and 36).
    c.order = QueueOrder::kAttained;
    // Elastic jobs shrink for waiting jobs of their class too, and grow back when GPUs idle.
    c.shrink_for_waiting = true;
    // Backfill plans on walltimes: runtime=predicted measured worse on both traces with
    // placement under pressure on (docs/results/notes.md, issue 17 policy round).
    return c;
  }
  if (name == "slurm-like" || name == "ideal-backfill") {
    c.placement = PlacementMode::kNodeBestFit;
    c.backfill = BackfillMode::kEasy;
    c.whole_node_reservations = true;
    c.preemption = false;
    c.elastic = false;
    if (name == "slurm-like") {
      // Slurm 22.05's defaults (slurm.conf(5), SchedulerParameters): bf_interval=30 s,
      // bf_max_job_test=500, bf_window=1440 min, default_queue_depth=100. "ideal-backfill" is the
      // same policy without them: every pass a backfill cycle over every pending job.
      c.backfill_interval = 30;
      c.backfill_max_jobs = 500;
      c.backfill_window = 24 * 3600;
      c.main_queue_depth = 100;
      // PriorityType's default is priority/basic: jobs in submit order (and under
      // priority/multifactor every PriorityWeight* defaults to 0). The multifactor job-size term
      // let large jobs jump the queue, which Slurm with its defaults never does
      // (bench/slurm_vs_sim.sh, docs/simulator.md "slurm-like vs Slurm 22.05").
      c.order = QueueOrder::kFifo;
    }
    return c;
  }
  if (name == "fifo-firstfit") {
    c.order = QueueOrder::kFifo;
    c.placement = PlacementMode::kFirstFit;
    c.backfill = BackfillMode::kNone;
    c.preemption = false;
    c.elastic = false;
    // Slurm's sched/builtin reads as far: default_queue_depth jobs a pass (nothing passes the
    // first blocked job anyway; the jobs beyond keep their reasons). Before, a runaway queue was
    // read to its end at every pass: the whole Philly trace at 4x replayed in 54 s.
    c.main_queue_depth = 100;
    return c;
  }
  return Fail("policy", "unknown policy '" + EscapeForLog(name) +
                            "' (known: phalanx, slurm-like, ideal-backfill, fifo-firstfit)");
}

namespace {

Result<double> Number(std::string_view key, std::string_view value) {
  const std::optional<double> v = ParseNumber<double>(value);
  // Not NaN (no order: it would pass `< 0`) nor infinite (later cast to whole seconds).
  if (!v || !std::isfinite(*v) || *v < 0) {
    return Fail(EscapeForLog(key), "expected a non-negative number, got '" + EscapeForLog(value) + "'");
  }
  // Settings become whole seconds or counts; beyond 2^53 a double has no whole-number precision
  // left and the casts would overflow.
  if (*v > 9007199254740992.0) return Fail(EscapeForLog(key), "'" + EscapeForLog(value) + "' is too large");
  return *v;
}

Result<bool> OnOff(std::string_view key, std::string_view value) {
  if (value == "on" || value == "true") return true;
  if (value == "off" || value == "false") return false;
  return Fail(EscapeForLog(key), "expected on or off, got '" + EscapeForLog(value) + "'");
}

}  // namespace

Status SetConfigOption(SchedulerConfig& c, std::string_view key, std::string_view value) {
  const std::string k = EscapeForLog(key);  // named in errors, control bytes made visible
  if (key == "backfill") {
    if (value == "easy") c.backfill = BackfillMode::kEasy;
    else if (value == "conservative") c.backfill = BackfillMode::kConservative;
    else if (value == "none") c.backfill = BackfillMode::kNone;
    else return Fail(k, "easy, conservative or none, not '" + EscapeForLog(value) + "'");
    return {};
  }
  if (key == "placement") {
    if (value == "topology") c.placement = PlacementMode::kTopology;
    else if (value == "node-best-fit") c.placement = PlacementMode::kNodeBestFit;
    else if (value == "first-fit") c.placement = PlacementMode::kFirstFit;
    else return Fail(k, "topology, node-best-fit or first-fit, not '" + EscapeForLog(value) + "'");
    return {};
  }
  if (key == "runtime") {
    if (value == "walltime") c.runtime = RuntimeMode::kWalltime;
    else if (value == "predicted") c.runtime = RuntimeMode::kPredicted;
    else return Fail(k, "walltime or predicted, not '" + EscapeForLog(value) + "'");
    return {};
  }
  if (key == "order") {
    if (value == "priority") c.order = QueueOrder::kPriority;
    else if (value == "fifo") c.order = QueueOrder::kFifo;
    else if (value == "attained") c.order = QueueOrder::kAttained;
    else return Fail(k, "priority, fifo or attained, not '" + EscapeForLog(value) + "'");
    return {};
  }
  if (key == "preemption" || key == "elastic" || key == "best_fit" || key == "whole_node_reservations" ||
      key == "shrink_for_waiting" || key == "reserve_larger") {
    auto v = OnOff(key, value);
    PHX_RETURN_IF_ERROR(v);
    (key == "preemption"           ? c.preemption
     : key == "elastic"            ? c.elastic
     : key == "best_fit"           ? c.best_fit
     : key == "shrink_for_waiting" ? c.shrink_for_waiting
     : key == "reserve_larger"     ? c.reserve_larger
                                   : c.whole_node_reservations) = *v;
    return {};
  }
  if (key == "service_queues") {
    // T1/T2/...: GPU-seconds, each above the one before.
    std::vector<double> thresholds;
    std::string_view rest = value;
    while (true) {
      const size_t slash = rest.find('/');
      auto t = Number(key, rest.substr(0, slash));
      PHX_RETURN_IF_ERROR(t);
      if (*t <= 0 || (!thresholds.empty() && *t <= thresholds.back())) {
        return Fail(
            k, "thresholds must be positive and ascending (T1/T2/... GPU-seconds), got '" + EscapeForLog(value) + "'");
      }
      thresholds.push_back(*t);
      if (slash == std::string_view::npos) break;
      rest = rest.substr(slash + 1);
    }
    c.service_queues = std::move(thresholds);
    return {};
  }
  auto v = Number(key, value);
  PHX_RETURN_IF_ERROR(v);
  const auto seconds = static_cast<Duration>(*v);
  // Counts (depths, GPUs, jobs) are 32-bit: a larger value would not survive the cast.
  if (*v > 4294967295.0 && (key == "reserve_depth" || key == "patience_depth" || key == "reserve_large_gpus" ||
                            key == "backfill_max_jobs" || key == "main_queue_depth")) {
    return Fail(k, "'" + EscapeForLog(value) + "' is too large (at most 4294967295)");
  }
  if (key == "placement_comm_share") {
    if (*v >= 1) return Fail(k, "must be in [0, 1), got '" + EscapeForLog(value) + "'");
    c.placement_comm_share = *v;
  } else if (key == "node_fit_tolerance") {
    if (*v > 1) return Fail(k, "must be in [0, 1], got '" + EscapeForLog(value) + "'");
    c.node_fit_tolerance = *v;
  } else if (key == "reserve_depth") c.reserve_depth = static_cast<uint32_t>(*v);
  else if (key == "patience_depth") c.patience_depth = static_cast<uint32_t>(*v);
  else if (key == "reserve_large_gpus") c.reserve_large_gpus = static_cast<uint32_t>(*v);
  else if (key == "reserve_after_wait") c.reserve_after_wait = seconds;
  else if (key == "patience_replan") c.patience_replan = seconds;
  else if (key == "patience_far_keep") c.patience_far_keep = seconds;
  else if (key == "reserve_replan") c.reserve_replan = seconds;
  else if (key == "reserve_horizon") c.reserve_horizon = seconds;
  else if (key == "backfill_interval") c.backfill_interval = seconds;
  else if (key == "backfill_max_jobs") c.backfill_max_jobs = static_cast<uint32_t>(*v);
  else if (key == "main_queue_depth") c.main_queue_depth = static_cast<uint32_t>(*v);
  else if (key == "backfill_window") c.backfill_window = seconds;
  else if (key == "charge_period") c.charge_period = seconds;
  else if (key == "checkpoint_grace") c.checkpoint_grace = seconds;
  else if (key == "periodic_checkpoint") c.periodic_checkpoint = seconds;
  else if (key == "grow_after_idle") c.grow_after_idle = seconds;
  else if (key == "default_walltime") c.default_walltime = seconds;
  else if (key == "max_walltime") c.max_walltime = seconds;
  else if (key == "service_min_run") c.service_min_run = seconds;
  else if (key == "weight_age") c.weights.age = *v;
  else if (key == "weight_fairshare") c.weights.fairshare = *v;
  else if (key == "weight_job_size") c.weights.job_size = *v;
  else if (key == "max_age") c.weights.max_age = seconds;
  else if (key == "fairshare_half_life") c.fairshare.half_life = seconds;
  else return Fail(k, "unknown scheduler setting '" + k + "'");
  return {};
}

Result<SchedulerConfig> PolicyFromSpec(std::string_view spec) {
  const size_t colon = spec.find(':');
  auto c = PolicyPreset(spec.substr(0, colon));
  if (!c) return c;
  if (colon == std::string_view::npos) return c;
  c->name = std::string(spec);
  std::string_view rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view kv = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos)
      return Fail("policy " + EscapeForLog(spec), "expected KEY=VALUE, got '" + EscapeForLog(kv) + "'");
    if (auto s = SetConfigOption(*c, kv.substr(0, eq), kv.substr(eq + 1)); !s) {
      return Fail("policy " + EscapeForLog(spec), s.error().where + ": " + s.error().message);
    }
  }
  return c;
}

}  // namespace phalanx
