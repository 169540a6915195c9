// QueuePolicy: the order in which a scheduling pass considers the pending jobs. The pass sorts
// them by the policy's priority (higher first), then submit time, then id: a total order, so
// the queue is the same whatever order the jobs were walked in.
// Chosen from SchedulerConfig::order by MakePolicies (policies.cc).
//
// Contract:
//  1. Called by the pass only: BeginPass(now) once, then Priority(job, now) once per pending job.
//  2. Priority depends on the job, `now` and what the policy reads (PolicyInputs), never on the
//     other jobs or the order of the calls.
//  3. A Keyed() policy's priority is a function of the PriorityKey it made of the job (KeyOf, at
//     the job's entry into the queue and at every change the Scheduler makes to it) and of `now`,
//     given as terms (Terms, OwnerTerm; KeyedTerms says how they add up): the sum of the terms is
//     Priority(job, now), to the bit. A pass may then order the queue without reading the records
//     (scheduler_pass.cc, the kept queue keys).
// Thread-safety: none; the Scheduler's thread only.
#pragma once

#include <cstdint>
#include <memory>

#include "core/common/time.h"
#include "core/sched/job.h"
#include "core/sched/policy/policy_inputs.h"

namespace phalanx {

// What a Keyed() policy reads of a pending job for its priority (contract 3): its submit time,
// its (user, account) as the policy numbers them, and two terms of the priority that do not
// change while it waits, computed once by the policy (multifactor: the weighted class and size).
struct PriorityKey {
  Time submit = 0;
  uint32_t owner = 0;
  double fixed_a = 0, fixed_b = 0;
};

// A Keyed() policy's priority as terms a pass adds up inline for every key (one virtual call a
// pass, Terms, rather than one a job): Priority(job, now) is, to the bit and in this order,
//   key.fixed_a + age_weight x AgeFactor(key.submit, now, max_age) + owner term + key.fixed_b
// (key = KeyOf(job)), the owner term being owner_terms[key.owner] when known[key.owner], else
// OwnerTerm(key.owner, now).
struct KeyedTerms {
  double age_weight = 0;
  Duration max_age = 0;
  const double* owner_terms = nullptr;  // by owner; valid until the policy numbers a new owner
  const uint8_t* known = nullptr;       // by owner: owner_terms holds it (OwnerTerm fills it)
};

class QueuePolicy {
 public:
  virtual ~QueuePolicy() = default;
  virtual void BeginPass(Time now) = 0;
  virtual double Priority(const JobRecord& job, Time now) = 0;
  // Contract 3 (the default: not keyed).
  virtual bool Keyed() const { return false; }
  virtual PriorityKey KeyOf(const JobRecord&) { return {}; }
  // Contract 3's terms (KeyedTerms), for the owners of every key made so far. The defaults give
  // priority 0 to every key of the default KeyOf.
  virtual KeyedTerms Terms(Time) { return {.owner_terms = &zero_, .known = &yes_}; }
  virtual double OwnerTerm(uint32_t, Time) { return 0; }

 private:
  static constexpr double zero_ = 0;
  static constexpr uint8_t yes_ = 1;
};

// QueueOrder::kPriority (queue_multifactor.cc): multifactor priority (class, age, fairshare,
// size; core/queue/priority.h), each user's fairshare factor computed once per pass.
std::unique_ptr<QueuePolicy> MakeMultifactorQueue(const PolicyInputs& in);
// QueueOrder::kFifo (queue_fifo.cc): every job has priority 0, so submit time decides.
std::unique_ptr<QueuePolicy> MakeFifoQueue(const PolicyInputs& in);
// QueueOrder::kAttained (queue_attained.cc): class, then least attained service
// (service_queue.h), then multifactor age, fairshare and size.
std::unique_ptr<QueuePolicy> MakeAttainedQueue(const PolicyInputs& in);

}  // namespace phalanx
