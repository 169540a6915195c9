#include "core/sched/internal/timers.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/sched/internal/scheduler_state.h"

namespace phalanx {

namespace {

Duration CheckpointInterval(const SchedulerConfig& config, const JobRecord& job) {
  return job.spec.checkpoint_interval > 0 ? job.spec.checkpoint_interval : config.periodic_checkpoint;
}

}  // namespace

Time NextTimer(const SchedulerConfig& config, const JobRecord& job) {
  if (job.spec.suspended) return kForever;  // nothing fires until Resume (which notes them again)
  Time t = job.expected_end();
  if (job.state == JobState::kCheckpointing) t = std::min(t, job.checkpoint_deadline);
  const Duration interval = CheckpointInterval(config, job);
  if (job.state == JobState::kRunning && interval > 0)
    t = std::min(t, std::max(job.last_checkpoint, job.last_checkpoint_request) + interval);
  return t;
}

void ChargeUsage(SchedulerState& s, Time now) {
  // Keeps the pass from walking every running job.
  if (s.last_charge != 0 && now - s.last_charge < s.config.charge_period) return;
  s.last_charge = now;
  for (const auto& [id, jp] : s.active.Walk()) {
    const JobRecord& j = *jp;
    Time& since = s.charged_until[id];
    if (now > since) {
      (void)s.fairshare.Charge(j.spec.user, j.spec.account,
                               static_cast<double>(now - since) * static_cast<double>(j.gpus.size()), now);
      since = now;
    }
  }
}

void FireTimers(SchedulerState& s, Time now, std::vector<Decision>& out) {
  // s.next_timer is a lower bound on every active job's next walltime, checkpoint deadline or
  // periodic checkpoint (NoteTimer lowers it whenever a job gets an earlier one): until then
  // there is nothing to do.
  if (now < s.next_timer) return;
  s.next_timer = kForever;
  // A copy: a job may end or be requeued on the way.
  const std::vector<JobSet::Entry> active = s.active.Walk();
  for (const auto& [id, jp] : active) {
    JobRecord& job = *jp;
    struct Note {
      SchedulerState& s;
      const JobRecord& j;
      ~Note() {
        if (!IsFinal(j.state) && j.state != JobState::kPending) s.NoteTimers(j);
      }
    } note{s, job};
    if (job.spec.suspended) continue;
    if (now >= job.expected_end()) {
      s.StopJob(job, now);
      s.Kill(job, now, "walltime of " + std::to_string(job.run_walltime) + "s exceeded", out);
      continue;
    }
    if (job.state == JobState::kCheckpointing && now >= job.checkpoint_deadline) {
      // No checkpoint in time: the work since the last one is lost.
      if (job.after_checkpoint == JobRecord::After::kPreempt) {
        s.Requeue(job, now, "checkpoint deadline passed; preempted for job " + std::to_string(job.preempted_for), out);
      } else if (job.after_checkpoint == JobRecord::After::kShrink) {
        job.gpu_seconds_lost += static_cast<double>(job.gpus.size()) * static_cast<double>(now - job.last_checkpoint);
        job.last_checkpoint = now;
        s.FinishShrink(job, now, out);
      } else {
        job.state = JobState::kRunning;
      }
      continue;
    }
    const Duration interval = CheckpointInterval(s.config, job);
    if (job.state == JobState::kRunning && interval > 0 &&
        now - std::max(job.last_checkpoint, job.last_checkpoint_request) >= interval) {
      job.last_checkpoint_request = now;
      Decision d;
      d.kind = DecisionKind::kCheckpoint;
      d.job = id;
      d.at = now;
      d.deadline = now + s.CheckpointGrace(job);
      d.reason = "periodic";
      out.push_back(std::move(d));
    }
  }
}

}  // namespace phalanx
