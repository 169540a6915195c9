// The sizes (GPU counts) a job may run at: the one rule behind every size the core picks, when a
// job starts, backfills, is reserved for, shrinks for a preemptor or a failed node, grows, and
// when a spec is validated.
//
// A job is sized elastically when the configuration allows it (SchedulerConfig::elastic) and its
// spec is elastic (0 < min_gpus < shape.gpus, not node-shaped): it may run at every size in
// [min_gpus, shape.gpus] that its step allows (any, multiples of `step`, powers of two), except
// sizes above the cluster's GPU count; when no size qualifies, at shape.gpus alone (Submit and
// ValidateSpec refuse a spec with no legal size in [min, max] since issue 12 -- CheckElasticSizes
// in internal/spec_checks.h -- so only a job restored from an older store still gets there).
// Any other job runs at shape.gpus.
// Pure functions of their arguments. Thread-safety: none needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/sched/job.h"

namespace phalanx {

// Every size, largest first; never empty.
std::vector<uint32_t> LegalSizes(const JobSpec& spec, bool elastic, size_t cluster_gpus);
// LegalSizes(...).back(), without building the list (asked for every pending job in a pass, and
// a spec may ask for billions of GPUs).
uint32_t MinLegalSize(const JobSpec& spec, bool elastic, size_t cluster_gpus);
// The largest size that is at most `gpus`; 0 when every size is larger.
uint32_t LegalSizeAtMost(const JobSpec& spec, bool elastic, size_t cluster_gpus, size_t gpus);

}  // namespace phalanx
