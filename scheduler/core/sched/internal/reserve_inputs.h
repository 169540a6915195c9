// What Reserve's walk reads in every call of a pass, made on first use in the pass and kept from
// pass to pass where it stays the same (reserve_inputs.cc): the release times of the running
// jobs, sorted, and the plan of GPU counts over time per domain.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <utility>
#include <vector>

#include "core/common/ids.h"
#include "core/common/time.h"

namespace phalanx {

class DomainPlanner;
struct PassState;
struct SchedulerState;

// Release times of the active jobs and of outside load, sorted (time, then owner); built on
// first use in a pass and again after PassState::ends_dirty.
const std::vector<std::pair<Time, JobId>>& Ends(SchedulerState& s, PassState& pass);

// The pass's plan of GPU counts over time per domain (running jobs until their release,
// unavailable nodes, reservations); made on first use in a pass. nullptr if inconsistent.
DomainPlanner* Plan(SchedulerState& s, PassState& pass);

}  // namespace phalanx
