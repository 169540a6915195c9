// Service queues (Tiresias, Gu et al., NSDI'19: discretised least-attained-service): a job's
// queue is the number of thresholds (SchedulerConfig::service_queues, GPU-seconds, ascending)
// its attained service has reached, so queue 0 holds the jobs that have had the least. Used by
// the attained queue order (queue_attained.cc) and by preemption for service
// (preempt_checkpoint_cost.cc). Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/common/time.h"
#include "core/sched/job.h"

namespace phalanx {

inline uint32_t ServiceQueue(const std::vector<double>& thresholds, double service_gpu_s) {
  return static_cast<uint32_t>(std::upper_bound(thresholds.begin(), thresholds.end(), service_gpu_s) -
                               thresholds.begin());
}

inline uint32_t ServiceQueue(const std::vector<double>& thresholds, const JobRecord& job, Time now) {
  return ServiceQueue(thresholds, AttainedService(job, now));
}

}  // namespace phalanx
