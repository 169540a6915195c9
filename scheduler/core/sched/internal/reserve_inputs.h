// What Reserve's walk reads in every call of a pass, made on first use in the pass and kept from
// pass to pass (or call to call) where it stays the same (reserve_inputs.cc): the release times
// of the running jobs, sorted, the reservations in start and end order, and the plan of GPU
// counts over time per domain.
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

// The reservations' indexes by start and by end (PassState::ReserveScratch::by_start, by_end),
// kept while the reservations they sorted stay (a reservation removed since clears the walk
// floors and the reservations' word lists), and the candidate times they give: now and every
// reservation's start and end, in order (`bounds`).
void ReservationBounds(SchedulerState& s, PassState& pass);

// The pass's plan of GPU counts over time per domain (running jobs until their release,
// unavailable nodes, reservations); made on first use in a pass. nullptr if inconsistent.
DomainPlanner* Plan(SchedulerState& s, PassState& pass);

}  // namespace phalanx
