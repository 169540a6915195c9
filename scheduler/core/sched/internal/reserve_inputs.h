// What Reserve's walk reads in every call of a pass, made on first use in the pass and kept from
// pass to pass (or call to call) where it stays the same (reserve_inputs.cc): the release times
// of the running jobs, sorted, and the GPUs each job gives back, as words; the GPUs free now and
// on nodes that are up, as words; the reservations in start and end order, with their GPUs as
// words; and the plan of GPU counts over time per domain.
// Thread-safety: none; the Scheduler's thread only. Internal to core/sched.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/common/gpu_words.h"
#include "core/common/ids.h"
#include "core/common/time.h"
#include "core/sched/internal/pass_state.h"

namespace phalanx {

class DomainPlanner;
class Topology;
struct SchedulerState;

// Release times of the active jobs and of outside load, sorted (time, then owner); built on
// first use in a pass and again after PassState::ends_dirty.
const std::vector<std::pair<Time, JobId>>& Ends(SchedulerState& s, PassState& pass);

// The job's GPUs on nodes that are up, as words (PassState::release_words), made on its first
// release in the pass: an active job's GPUs do not change while the pass walks its queue
// (StartJob adds jobs; none ends or resizes).
const PassState::ReleaseWords& JobReleaseWords(const Topology& topo, PassState& pass, JobId id);

// The GPUs free now and those on nodes that are up, by word (PassState::free_now_bits,
// up_bits), made on the first call of the pass.
void GpuBits(const Topology& topo, PassState& pass);

// The reservations' indexes by start and by end (PassState::ReserveScratch::by_start, by_end),
// kept while the reservations they sorted stay (a reservation removed since clears the walk
// floors and the reservations' word lists), and the candidate times they give: now and every
// reservation's start and end, in order (`bounds`). Also each reservation's GPUs as words and
// how often it lists one GPU at most (`res_words`), kept while reservations are only appended.
void ReservationBounds(SchedulerState& s, PassState& pass);
// Only the word lists of the reservations (`res_words`, and by word `res_by_word`), brought up
// to date.
void ReservationWords(SchedulerState& s, PassState& pass);
// Forgets them (a reservation was removed: the indexes moved).
void ClearReservationWords(PassState& pass);

// The pass's plan of GPU counts over time per domain (running jobs until their release,
// unavailable nodes, reservations); made on first use in a pass. nullptr if inconsistent.
DomainPlanner* Plan(SchedulerState& s, PassState& pass);

}  // namespace phalanx
