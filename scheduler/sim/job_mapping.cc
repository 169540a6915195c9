#include "sim/job_mapping.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "sim/random.h"

namespace phalanx {

namespace {

constexpr Duration kMin = 60, kHour = 3600, kDay = 24 * kHour;
constexpr Duration kRoundValues[] = {1 * kMin,  2 * kMin,   5 * kMin,   10 * kMin,  15 * kMin,  20 * kMin, 30 * kMin,
                                     45 * kMin, kHour,      90 * kMin,  2 * kHour,  3 * kHour,  4 * kHour, 6 * kHour,
                                     8 * kHour, 10 * kHour, 12 * kHour, 16 * kHour, 20 * kHour, kDay,      36 * kHour,
                                     2 * kDay,  3 * kDay,   4 * kDay,   5 * kDay,   6 * kDay,   7 * kDay};

// The smallest round value >= t (whole weeks beyond the table).
Duration RoundUp(Duration t) {
  for (Duration v : kRoundValues) {
    if (v >= t) return v;
  }
  const Duration week = 7 * kDay;
  return (t + week - 1) / week * week;
}

}  // namespace

Duration EstimateWalltime(Duration duration, const WalltimeModel& model, double u1, double u2) {
  const Duration d = std::max<Duration>(duration, 1);
  const Duration limit = std::max(model.limit, RoundUp(d));
  Duration wall = limit;
  if (u1 >= model.share_at_limit) {
    const double accuracy = 0.05 + 0.95 * u2;
    const double asked = std::ceil(static_cast<double>(d) / accuracy);
    wall = std::min(limit, RoundUp(static_cast<Duration>(std::min(asked, 1e15))));
  }
  return std::max({wall, d, model.minimum});
}

MappedJob MapTraceJob(const TraceJob& job, size_t index, uint64_t seed, const WalltimeModel& walltime,
                      std::span<const ClassRule> rules, double elastic_share) {
  MappedJob a;
  JobSpec& s = a.spec;
  s.id = static_cast<JobId>(index + 1);
  s.name = job.id;
  s.user = job.user;
  s.account = job.user;
  s.submit = job.submit;
  s.shape.gpus = job.gpus;
  const double d = static_cast<double>(std::max<Duration>(job.duration, 1));
  double wall = d;
  switch (walltime.mode) {
    case WalltimeModel::Mode::kExact: break;
    case WalltimeModel::Mode::kFactor: wall = d * walltime.factor; break;
    case WalltimeModel::Mode::kRandom:
      wall = d * (1.0 + (walltime.factor - 1.0) * SeededUniform(seed ^ 0x77616c6cull, index, 0));
      break;
    case WalltimeModel::Mode::kTrace:
      wall = job.timelimit > 0 ? std::max(d, static_cast<double>(job.timelimit)) : d;
      break;
    case WalltimeModel::Mode::kModel:
      wall = static_cast<double>(EstimateWalltime(job.duration, walltime, SeededUniform(seed ^ 0x65737469ull, index, 0),
                                                  SeededUniform(seed ^ 0x65737469ull, index, 1)));
      break;
  }
  double elastic_min = 0;
  if (job.gpus > 1 && elastic_share > 0 && SeededUniform(seed ^ 0x656c6173ull, index, 0) < elastic_share)
    elastic_min = 0.5;
  uint32_t gpn = 0;
  for (size_t k = 0; k < rules.size(); ++k) {
    const ClassRule& r = rules[k];
    if (!RuleMatches(r, job, index, k, seed)) continue;
    if (r.priority_class) s.priority_class = *r.priority_class;
    if (r.preemptible) s.preemptible = *r.preemptible;
    if (r.elastic_min) elastic_min = *r.elastic_min;
    if (r.checkpoint_interval) a.checkpoint_interval = *r.checkpoint_interval;
    if (r.restart_cost) s.restart_cost = *r.restart_cost;
    if (r.gpus_per_node) gpn = r.gpus_per_node;
    if (r.level) {
      s.shape.level = *r.level;
      s.shape.fit = r.prefer ? FitMode::kPrefer : FitMode::kRequire;
    }
  }
  if (elastic_min > 0 && job.gpus > 1) {
    const uint32_t g = job.gpus;
    uint32_t min = std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(elastic_min * g)));
    ElasticStep kind = ElasticStep::kAny;
    if (std::has_single_bit(g)) {
      kind = ElasticStep::kPowerOfTwo;
      min = std::bit_ceil(min);
    } else if (g % 4 == 0) {
      kind = ElasticStep::kMultiple;
      min = (min + 3) / 4 * 4;
    }
    if (min < g) {  // a step only for an elastic job (the core refuses it otherwise)
      s.step_kind = kind;
      if (kind == ElasticStep::kMultiple) s.step = 4;
      s.min_gpus = min;
      wall *= static_cast<double>(g) / static_cast<double>(min);  // enough time at the minimum size
    }
  }
  if (gpn > 0 && s.min_gpus == 0 && job.gpus > gpn && job.gpus % gpn == 0) {
    s.shape.nodes = job.gpus / gpn;
    s.shape.gpus_per_node = gpn;
  }
  s.walltime = std::max<Duration>(walltime.minimum, static_cast<Duration>(std::ceil(wall - 1e-9)));
  return a;
}

}  // namespace phalanx
