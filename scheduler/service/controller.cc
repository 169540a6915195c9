// Controller: construction, commits, passes, carrying out decisions, what the executor reports.
#include "service/controller.h"

#include <boost/asio/post.hpp>

#include <algorithm>

#include "adapters/store/codec.h"
#include "util/log.h"

namespace phalanx::service {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1000.0));
}

// The fields the store keeps for a job (store.h's SaveJobState): equal means nothing to write.
bool SamePersistent(const JobRecord& a, const JobRecord& b) {
  const JobSpec &x = a.spec, &y = b.spec;
  return a.state == b.state && a.gpus == b.gpus && a.start == b.start && a.end == b.end && a.walltime == b.walltime &&
         a.run_walltime == b.run_walltime && a.progress == b.progress && a.checkpoint_epoch == b.checkpoint_epoch &&
         a.checkpoint_path == b.checkpoint_path && a.last_checkpoint == b.last_checkpoint &&
         a.last_checkpoint_request == b.last_checkpoint_request && a.checkpoint_deadline == b.checkpoint_deadline &&
         a.after_checkpoint == b.after_checkpoint && a.shrink_to == b.shrink_to && a.preempted_for == b.preempted_for &&
         a.victims == b.victims && a.claim == b.claim && a.preemptions == b.preemptions && a.resizes == b.resizes &&
         a.gpu_seconds_lost == b.gpu_seconds_lost && a.idle_since == b.idle_since &&
         a.service_gpu_s == b.service_gpu_s && a.service_until == b.service_until && x.held == y.held &&
         x.name == y.name && x.priority_class == y.priority_class && x.walltime == y.walltime &&
         x.after_ok == y.after_ok && x.preemptible == y.preemptible && x.top == y.top && x.suspended == y.suspended &&
         x.suspended_at == y.suspended_at && x.partitions == y.partitions;
}

// Whether a pass may change the job's record without a decision naming it or a job it is linked
// to (Scheduler::Schedule's contract): running or checkpointing, or waiting with a claim or victims.
bool PassMayChange(const JobRecord& j) {
  return j.state != JobState::kPending || !j.claim.empty() || !j.victims.empty();
}

}  // namespace

Controller::Controller(boost::asio::io_context& io, Recovered recovered, store::GroupCommitter* committer,
                       store::Store* reader, const Clock* clock, ControllerOptions options, Executor* executor,
                       std::function<void(const std::string&)> on_fatal)
    : io_(io),
      core_(std::move(recovered.core)),
      committer_(committer),
      clock_(clock),
      options_(std::move(options)),
      executor_(executor),
      on_fatal_(std::move(on_fatal)),
      next_job_id_(recovered.next_job_id),
      next_launch_id_(recovered.next_launch_id),
      launch_(std::move(recovered.launch), reader),
      pass_timer_(io),
      pass_delay_timer_(io) {
  last_now_ = core_->now();
  const Topology& topo = core_->topology();
  for (uint32_t n = 0; n < topo.node_count(); ++n) {
    const std::string& name = topo.domain(topo.node_domain(NodeId(n))).name;
    Node& node = nodes_[name];
    node.id = NodeId(n);
    if (auto it = recovered.admin.find(name); it != recovered.admin.end()) node.admin = it->second;
  }
  executor_->Attach(this);
  for (const auto& [id, job] : core_->jobs()) {
    if (IsFinal(job.state)) continue;
    saved_.emplace(id, job);
    if (PassMayChange(job)) pass_watch_.insert(id);
    if (HoldsGpus(&job)) executor_->AdoptJob(id, job.gpus);
  }
}

Controller::~Controller() = default;

void Controller::Start() {
  executor_->Start();
  ArmPassTimer();
  RequestPass();
}

void Controller::Stop() {
  if (stopped_) return;
  stopped_ = true;
  pass_timer_.cancel();
  pass_delay_timer_.cancel();
  executor_->Stop();
  for (Watcher& w : watchers_) w.sink->Close(CallError::Unavailable("phalanxd is shutting down"));
  watchers_.clear();
}

Time Controller::Now() {
  // The core refuses time going back; the system clock may step back.
  last_now_ = std::max(last_now_, clock_->Now());
  return last_now_;
}

CallStatus Controller::Serving() const {
  if (!stopped_ && !failed_) return {};
  return std::unexpected(
      CallError::Unavailable(failed_ ? "the store failed; phalanxd is stopping" : "phalanxd is shutting down"));
}

void Controller::Fatal(const std::string& what) {
  if (failed_) return;
  failed_ = true;
  PHX_LOG(kError) << "fatal: " << what << "; nothing more is written or carried out";
  if (on_fatal_) on_fatal_(what);
}

void Controller::Commit(store::Batch batch, std::function<void(CallStatus)> after) {
  if (failed_) {
    after(Serving());
    return;
  }
  ++stats_.commits;
  const uint64_t seq = ++commits_written_;
  committer_->Enqueue(std::move(batch), [this, seq, after = std::move(after)](Result<store::BatchResult> r) mutable {
    // On the writer thread: hand the outcome back to the io thread, in commit order.
    boost::asio::post(io_, [this, seq, after = std::move(after), r = std::move(r)]() mutable {
      if (!r) {
        Fatal("writing to the store failed: " + r.error().ToString());
        after(Serving());
        return;
      }
      after({});
      commits_done_ = seq;
      while (!failed_ && !after_stored_.empty() && after_stored_.front().first <= commits_done_) {
        std::function<void()> then = std::move(after_stored_.front().second);
        after_stored_.pop_front();
        then();
      }
    });
  });
}

void Controller::AfterStored(std::function<void()> then) {
  if (failed_ || stopped_) return;  // what is reported now may not be stored
  if (commits_done_ == commits_written_) return then();
  after_stored_.emplace_back(commits_written_, std::move(then));
}

// ---- passes ----------------------------------------------------------------------------------

void Controller::RequestPass() {
  if (pass_pending_ || stopped_ || failed_) return;
  pass_pending_ = true;
  if (SteadyClock::now() >= next_pass_at_) {
    // Behind everything already queued: a burst of events gets one pass.
    boost::asio::post(io_, [this] { RunPass(); });
    return;
  }
  // The last pass ended recently: the events until its pace allows another share one pass.
  pass_delay_timer_.expires_at(next_pass_at_);
  pass_delay_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    RunPass();
  });
}

void Controller::ArmPassTimer() {
  pass_timer_.expires_after(Millis(options_.pass_interval_s));
  pass_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    RequestPass();
    ArmPassTimer();
  });
}

void Controller::Track(const JobRecord& job) {
  if (IsFinal(job.state)) return;
  saved_[job.spec.id] = job;
  if (PassMayChange(job)) pass_watch_.insert(job.spec.id);
  else pass_watch_.erase(job.spec.id);
}

void Controller::SaveChanged(store::Batch& b, const std::vector<JobId>& ids) {
  const auto check = [&](JobId id) {
    auto it = saved_.find(id);
    if (it == saved_.end()) return;
    const JobRecord* now = core_->job(id);
    if (now == nullptr) return;
    if (!SamePersistent(it->second, *now)) {
      b.SaveJobState(*now);
      if (IsFinal(now->state)) launch_.SaveOutcome(b, it->second.gpus, *now, core_->topology());  // in the same batch
      it->second = *now;
      if (PassMayChange(*now)) pass_watch_.insert(id);
      else pass_watch_.erase(id);
    }
    if (IsFinal(now->state)) {
      saved_.erase(it);
      pass_watch_.erase(id);
      launch_.Forget(id);
    }
  };
  if (ids.empty()) {
    std::vector<JobId> all;
    all.reserve(saved_.size());
    for (const auto& [id, _] : saved_) all.push_back(id);
    for (JobId id : all) check(id);
    return;
  }
  // A job event touches the job and its preemption links.
  std::set<JobId> touched(ids.begin(), ids.end());
  for (JobId id : ids) {
    const JobRecord* saved = saved_.contains(id) ? &saved_.at(id) : nullptr;
    for (const JobRecord* j : {core_->job(id), saved}) {
      if (j == nullptr) continue;
      touched.insert(j->victims.begin(), j->victims.end());
      if (j->preempted_for != kNoJob) touched.insert(j->preempted_for);
    }
  }
  for (JobId id : touched) check(id);
}

void Controller::RunPass() {
  pass_pending_ = false;
  if (stopped_ || failed_) return;
  const Time now = Now();
  const auto t0 = SteadyClock::now();
  std::vector<Decision> decisions = core_->Schedule(now);
  stats_.last_pass_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
  ++stats_.passes;
  if (observer_.pass) observer_.pass(stats_.last_pass_ms / 1000.0);
  store::Batch b;
  std::vector<Action> actions;
  const uint64_t first_launch = next_launch_id_;
  for (Decision& d : decisions) {
    if (d.kind == DecisionKind::kWait) continue;
    b.RecordDecision(d);
    if (d.kind == DecisionKind::kKill) launch_.SetOutcome(d.job, 0, d.reason);  // saved below with the final state
    Action a{std::move(d), 0};
    if (a.d.kind == DecisionKind::kStart || a.d.kind == DecisionKind::kResize) a.launch_id = next_launch_id_++;
    actions.push_back(std::move(a));
  }
  if (next_launch_id_ != first_launch) b.SetMeta("next_launch_id", std::to_string(next_launch_id_));
  // What the pass changed: the jobs its decisions name (SaveChanged adds their preemption links)
  // and those a pass may change silently (PassMayChange), not every waiting job: comparing tens
  // of thousands of unchanged pending jobs cost as much as the pass itself.
  std::vector<JobId> changed(pass_watch_.begin(), pass_watch_.end());
  for (const Action& a : actions) changed.push_back(a.d.job);
  if (!changed.empty()) SaveChanged(b, changed);
  // Pace the next requested pass by what this one cost (RequestPass): 5x its duration.
  const auto t1 = SteadyClock::now();
  next_pass_at_ = t1 + std::min<SteadyClock::duration>(5 * (t1 - t0), Millis(options_.pass_interval_s));
  if (b.empty()) return;
  // Write-ahead: nothing is carried out before the pass's batch is durable.
  Commit(std::move(b), [this, actions = std::move(actions)](CallStatus st) {
    if (!st) return;
    for (const Action& a : actions) CarryOut(a);
  });
}

void Controller::CarryOut(const Action& a) {
  const Decision& d = a.d;
  PHX_LOG(kInfo) << FormatDecision(d, core_->topology())
                 << (a.launch_id ? " launch=" + std::to_string(a.launch_id) : "");
  if (observer_.decision) observer_.decision(d, core_->job(d.job));
  switch (d.kind) {
    case DecisionKind::kStart:
      ++stats_.started;
      executor_->StartJob(d.job, d.gpus, a.launch_id);
      Publish("start", d.job);
      break;
    case DecisionKind::kCheckpoint: {
      ++stats_.checkpoints;
      int32_t signal = launch_.CheckpointSignal(d.job);
      if (signal == 0) signal = 10;  // SIGUSR1
      executor_->SignalJob(d.job, signal, d.deadline);
      Publish("checkpoint", d.job);
      break;
    }
    case DecisionKind::kPreempt:
      ++stats_.preempted;
      executor_->StopJob(d.job, "preempted: " + d.reason);
      Publish("preempt", d.job);
      break;
    case DecisionKind::kKill:
      ++stats_.killed;
      executor_->StopJob(d.job, "killed: " + d.reason);
      Publish("kill", d.job);
      break;
    case DecisionKind::kResize:
      ++stats_.resized;
      // A resize restarts the job from its last checkpoint on the new GPU set (docs/daemon.md).
      executor_->RestartJob(d.job, d.gpus, a.launch_id);
      Publish("resize", d.job);
      break;
    case DecisionKind::kWait: break;
  }
}

void Controller::Publish(std::string_view kind, JobId id) {
  if (watchers_.empty()) return;
  const JobRecord* rec = core_->job(id);
  if (rec == nullptr) return;
  const Time now = Now();
  std::erase_if(watchers_, [&](Watcher& w) {
    const WatchFilter& f = w.filter;
    if ((f.job != kNoJob && f.job != id) || (!f.user.empty() && f.user != rec->spec.user)) return w.sink->closed();
    return !w.sink->Send(now, kind, *rec) && w.sink->closed();
  });
}

// ---- what the executor reports -----------------------------------------------------------------

void Controller::JobPartsEnded(JobId id, bool success, int32_t exit_code, const std::string& reason) {
  if (!HoldsGpus(core_->job(id)) || stopped_ || failed_) return;
  const Time now = Now();
  if (auto s = core_->JobEnded(id, now, success); !s) {
    PHX_LOG(kError) << "job " << id << ": " << s.error().ToString();
    return;
  }
  ++stats_.ended;
  launch_.SetOutcome(id, exit_code, reason);  // saved with the final state (SaveChanged below)
  PHX_LOG(kInfo) << "job " << id << (success ? " completed" : " failed: " + reason);
  store::Batch b;
  b.RecordEvent(now, "end", id,
                "success=" + std::string(success ? "1" : "0") + " exit=" + std::to_string(exit_code) +
                    " reason=" + store::Escape(reason));
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id](CallStatus st) {
    if (st) Publish("end", id);
  });
  RequestPass();
}

void Controller::JobLost(JobId id, const std::string& reason) {
  if (!HoldsGpus(core_->job(id)) || stopped_ || failed_) return;
  const Time now = Now();
  if (auto s = core_->JobLost(id, now, reason); !s) {
    PHX_LOG(kError) << "job " << id << ": " << s.error().ToString();
    return;
  }
  PHX_LOG(kWarn) << "job " << id << " " << reason
                 << (core_->job(id)->state == JobState::kPending ? ": requeued" : ": killed (no-requeue)");
  store::Batch b;
  b.RecordEvent(now, "lost", id, "reason=" + store::Escape(reason));
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id](CallStatus st) {
    if (st) Publish("lost", id);
  });
  RequestPass();
}

void Controller::CheckpointReported(JobId id, uint64_t epoch, const std::string& path, const std::string& node) {
  const JobRecord* job = core_->job(id);
  if (job == nullptr) return;
  if (epoch == 0) epoch = job->checkpoint_epoch + 1;
  const Time now = Now();
  if (auto s = core_->CheckpointDone(id, now, epoch, path); !s) {
    // Several parts report the same checkpoint; the first one counts.
    PHX_LOG(kDebug) << "checkpoint of job " << id << " from " << node << ": " << s.error().ToString();
    return;
  }
  PHX_LOG(kInfo) << "checkpoint job=" << id << " epoch=" << epoch << " from " << node
                 << (path.empty() ? "" : " path=" + path);
  store::Batch b;
  b.RecordCheckpoint(id, epoch, now, path);
  b.RecordEvent(now, "checkpoint_done", id, "epoch=" + std::to_string(epoch) + " node=" + node);
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id](CallStatus st) {
    if (st) Publish("checkpoint_done", id);
  });
  RequestPass();
}

}  // namespace phalanx::service
