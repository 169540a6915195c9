// Elastic growth, at the end of a pass: when GPUs have been idle for grow_after_idle with no job
// waiting for GPUs, running elastic jobs grow to their largest legal size that the Placer can
// place under their own constraint (the GPUs they hold included): Resize decisions.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <vector>

#include "core/sched/decision.h"

namespace phalanx {

struct PassState;
struct SchedulerState;

void GrowElastic(SchedulerState& s, const PassState& pass, std::vector<Decision>& out);

}  // namespace phalanx
