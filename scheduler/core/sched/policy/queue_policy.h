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
//     the job's entry into the queue and at every change the Scheduler makes to it) and of `now`:
//     Priority(KeyOf(job), now) == Priority(job, now), to the bit. A pass may then order the
//     queue without reading the records (scheduler_pass.cc, the kept queue keys).
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

class QueuePolicy {
 public:
  virtual ~QueuePolicy() = default;
  virtual void BeginPass(Time now) = 0;
  virtual double Priority(const JobRecord& job, Time now) = 0;
  // Contract 3 (the default: not keyed).
  virtual bool Keyed() const { return false; }
  virtual PriorityKey KeyOf(const JobRecord&) { return {}; }
  virtual double Priority(const PriorityKey&, Time) { return 0; }
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
