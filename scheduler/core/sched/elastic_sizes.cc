#include "core/sched/elastic_sizes.h"

#include <algorithm>
#include <bit>

namespace phalanx {

namespace {

bool Elastic(const JobSpec& spec, bool elastic) { return elastic && spec.elastic(); }

// The largest size worth listing: sizes above the cluster can never run (a maximum of 2^32 must
// not cost 2^32 steps).
uint32_t Top(const JobSpec& spec, size_t cluster_gpus) {
  return static_cast<uint32_t>(std::min<uint64_t>(spec.shape.gpus, cluster_gpus));
}

uint32_t Bottom(const JobSpec& spec) { return std::max<uint32_t>(spec.min_gpus, 1); }

bool StepAllows(const JobSpec& spec, uint32_t gpus) {
  switch (spec.step_kind) {
    case ElasticStep::kAny: return true;
    case ElasticStep::kMultiple: return gpus % spec.step == 0;
    case ElasticStep::kPowerOfTwo: return std::has_single_bit(gpus);
  }
  return false;
}

}  // namespace

std::vector<uint32_t> LegalSizes(const JobSpec& spec, bool elastic, size_t cluster_gpus) {
  if (!Elastic(spec, elastic)) return {spec.shape.gpus};
  std::vector<uint32_t> out;
  for (uint32_t g = Top(spec, cluster_gpus); g >= Bottom(spec); --g) {
    if (StepAllows(spec, g)) out.push_back(g);
  }
  if (out.empty()) out.push_back(spec.shape.gpus);  // no legal size in range: run at the maximum
  return out;
}

uint32_t MinLegalSize(const JobSpec& spec, bool elastic, size_t cluster_gpus) {
  if (!Elastic(spec, elastic)) return spec.shape.gpus;
  const uint32_t top = Top(spec, cluster_gpus);
  for (uint32_t g = Bottom(spec); g <= top; ++g) {
    if (StepAllows(spec, g)) return g;
  }
  return spec.shape.gpus;
}

uint32_t LegalSizeAtMost(const JobSpec& spec, bool elastic, size_t cluster_gpus, size_t gpus) {
  for (uint32_t size : LegalSizes(spec, elastic, cluster_gpus)) {
    if (size <= gpus) return size;
  }
  return 0;
}

}  // namespace phalanx
