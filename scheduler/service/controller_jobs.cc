// Controller: users' job calls (submit, cancel, hold, release, update, checkpoints, reads,
// watch). Every mutation answers only after its batch committed.
#include <algorithm>

#include "adapters/store/codec.h"
#include "service/controller.h"
#include "service/log.h"
#include "service/proto_convert.h"

namespace phalanx::service {
namespace {

grpc::Status Invalid(const std::string& m) { return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, m); }
grpc::Status Precondition(const std::string& m) { return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, m); }

bool Active(const JobRecord& j) { return j.state == JobState::kRunning || j.state == JobState::kCheckpointing; }

}  // namespace

grpc::Status Controller::FindJob(JobId id, FoundJob* out) {
  out->rec = core_->job(id);
  if (out->rec == nullptr) return grpc::Status(grpc::StatusCode::NOT_FOUND, "job " + std::to_string(id) + ": no such job");
  out->launch = LaunchInfo(*out->rec);
  return grpc::Status::OK;
}

const v1::Job* Controller::LaunchInfo(const JobRecord& job) {
  const JobId id = job.spec.id;
  if (auto it = launch_.find(id); it != launch_.end()) return &it->second;
  if (auto it = final_launch_.find(id); it != final_launch_.end()) return &it->second;
  // A finished job: its launch info, with its outcome, is in the store (read on the io thread's
  // own connection).
  if (reader_ == nullptr || !IsFinal(job.state)) return nullptr;
  auto blob = reader_->LoadLaunchInfo(id);
  if (!blob) {
    PHX_LOG(kWarn) << "reading the launch info of job " << id << ": " << blob.error().ToString();
    return nullptr;
  }
  if (!blob->has_value()) return nullptr;
  auto info = DecodeLaunchInfo(**blob, id);
  if (!info) {
    PHX_LOG(kWarn) << info.error().ToString();
    return nullptr;
  }
  if (final_launch_.size() >= kFinalCache) final_launch_.erase(final_launch_.begin());
  return &final_launch_.emplace(id, std::move(*info)).first->second;
}

void Controller::SetOutcome(JobId id, int32_t exit_code, const std::string& reason) {
  auto it = launch_.find(id);
  if (it == launch_.end()) return;
  it->second.set_exit_code(exit_code);
  it->second.set_reason(reason);
}

void Controller::SaveOutcome(store::Batch& b, const std::vector<GpuId>& last_gpus, const JobRecord& job) {
  const JobId id = job.spec.id;
  auto it = launch_.find(id);
  if (it == launch_.end()) return;
  v1::Job info = std::move(it->second);
  launch_.erase(it);
  SetLastPlacement(job.gpus.empty() ? last_gpus : job.gpus, core_->topology(), &info);
  b.SetLaunchInfo(id, EncodeLaunchInfo(info));
  if (final_launch_.size() >= kFinalCache && !final_launch_.contains(id)) final_launch_.erase(final_launch_.begin());
  final_launch_[id] = std::move(info);
}

grpc::Status Controller::CheckOwner(const Caller& who, const JobRecord& job, std::string_view action) const {
  if (MayActOn(who, job.spec.user)) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(action) + " job " + std::to_string(job.spec.id) +
                                                               ": it belongs to " + job.spec.user + ", not to " + who.user);
}

void Controller::FillJobView(const JobRecord& job, bool include_env, v1::Job* out) {
  JobExtras extras;
  extras.launch = LaunchInfo(job);
  FillJob(job, extras, core_->topology(), include_env, out);
}

void Controller::FillJobView(JobId id, bool include_env, v1::Job* out) {
  if (const JobRecord* j = core_->job(id)) FillJobView(*j, include_env, out);
}

void Controller::Submit(const Caller& who, const v1::JobSpec& request, Reply<JobId> done) {
  if (stopped_ || failed_) return done(Unavailable(), kNoJob);
  auto spec = CoreSpecFromProto(request, who);
  if (!spec) return done(Invalid(spec.error().ToString()), kNoJob);
  const Time now = Now();
  spec->id = next_job_id_;
  spec->submit = now;
  if (auto st = core_->ValidateSpec(*spec); !st) return done(Invalid(st.error().message), kNoJob);
  ++next_job_id_;  // an id whose batch fails is skipped, never reused
  v1::Job info = MakeLaunchInfo(request, who);
  store::Batch b;
  b.SubmitJob(*spec, now);
  b.SetLaunchInfo(spec->id, EncodeLaunchInfo(info));
  Commit(std::move(b), [this, spec = std::move(*spec), info = std::move(info), done = std::move(done)](grpc::Status st) mutable {
    if (!st.ok()) return done(st, kNoJob);
    const JobId id = spec.id;
    const Time t = Now();
    if (auto s = core_->Submit(spec, t); !s) {
      // Stored, then refused: something changed between the check and the commit (another
      // submission reached a pending-job limit). The stored job is marked failed.
      JobRecord rec;
      rec.spec = spec;
      rec.state = JobState::kFailed;
      rec.end = t;
      store::Batch fb;
      fb.SaveJobState(rec);
      fb.RecordEvent(t, "rejected", id, store::Escape(s.error().message));
      Commit(std::move(fb), [](grpc::Status) {});
      PHX_LOG(kWarn) << "job " << id << " stored but refused by the core: " << s.error().message;
      return done(Invalid(s.error().message), kNoJob);
    }
    launch_[id] = std::move(info);
    Track(*core_->job(id));
    ++stats_.submitted;
    if (observer_.submitted) observer_.submitted();
    PHX_LOG(kInfo) << "submit job=" << id << " user=" << spec.user << " gpus=" << core_->job(id)->spec.shape.gpus
                   << (spec.name.empty() ? "" : " name=" + spec.name);
    Publish("submit", id);
    RequestPass();
    done(grpc::Status::OK, id);
  });
}

void Controller::JobEvent(JobId id, const std::string& kind, std::function<Status()> event,
                          std::function<void(grpc::Status)> done, std::function<void()> then) {
  if (stopped_ || failed_) return done(Unavailable());
  const Time now = Now();
  if (auto s = event(); !s) return done(Precondition(s.error().ToString()));
  store::Batch b;
  b.RecordEvent(now, kind, id, "");
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id, kind, done = std::move(done), then = std::move(then)](grpc::Status st) {
    if (!st.ok()) return done(st);
    if (then) then();
    Publish(kind, id);
    RequestPass();
    done(grpc::Status::OK);
  });
}

void Controller::Cancel(const Caller& who, JobId id, int32_t signal, Reply<v1::JobState> done) {
  FoundJob f;
  if (auto st = FindJob(id, &f); !st.ok()) return done(st, v1::JOB_STATE_UNSPECIFIED);
  if (auto st = CheckOwner(who, *f.rec, "cancel"); !st.ok()) return done(st, v1::JOB_STATE_UNSPECIFIED);
  if (signal < 0 || signal > 64) return done(Invalid("signal: not a signal number (got " + std::to_string(signal) + ")"), v1::JOB_STATE_UNSPECIFIED);
  if (IsFinal(f.rec->state))
    return done(Precondition("job " + std::to_string(id) + " is already " + std::string(JobStateName(f.rec->state))),
                ToProto(f.rec->state));
  if (signal != 0) {
    // A signal for the job's processes (scancel --signal): the job is not cancelled.
    if (!Active(*f.rec)) return done(Precondition("job " + std::to_string(id) + " is not running"), ToProto(f.rec->state));
    PHX_LOG(kInfo) << "signal " << signal << " to job=" << id << " by " << who.user;
    SendToParts(id, [&] {
      v1::DaemonCommand c;
      c.mutable_signal()->set_job_id(id);
      c.mutable_signal()->set_signal(signal);
      return c;
    });
    return done(grpc::Status::OK, ToProto(f.rec->state));
  }
  const bool was_active = Active(*f.rec);
  const std::string by = who.user;
  JobEvent(
      id, "cancel",
      [this, id, by] {
        Status s = core_->Cancel(id, Now());
        if (s) SetOutcome(id, 0, "cancelled by " + by);  // saved with the cancelled state
        return s;
      },
      [this, id, done](grpc::Status st) {
        const JobRecord* j = core_->job(id);
        done(st, j ? ToProto(j->state) : v1::JOB_STATE_UNSPECIFIED);
      },
      [this, id, was_active, by] {
        PHX_LOG(kInfo) << "cancel job=" << id << " by " << by;
        if (was_active) KillParts(id, "cancelled by " + by, true);
      });
}

void Controller::Hold(const Caller& who, JobId id, Reply<v1::Job> done) {
  FoundJob f;
  if (auto st = FindJob(id, &f); !st.ok()) return done(st, v1::Job());
  if (auto st = CheckOwner(who, *f.rec, "hold"); !st.ok()) return done(st, v1::Job());
  JobEvent(id, "hold", [this, id] { return core_->Hold(id, Now()); }, [this, id, done](grpc::Status st) {
    v1::Job out;
    if (st.ok()) FillJobView(id, false, &out);
    done(st, out);
  });
}

void Controller::Release(const Caller& who, JobId id, Reply<v1::Job> done) {
  FoundJob f;
  if (auto st = FindJob(id, &f); !st.ok()) return done(st, v1::Job());
  if (auto st = CheckOwner(who, *f.rec, "release"); !st.ok()) return done(st, v1::Job());
  JobEvent(id, "release", [this, id] { return core_->Release(id, Now()); }, [this, id, done](grpc::Status st) {
    v1::Job out;
    if (st.ok()) FillJobView(id, false, &out);
    done(st, out);
  });
}

void Controller::Update(const Caller& who, const v1::UpdateJobRequest& req, Reply<v1::Job> done) {
  FoundJob f;
  if (auto st = FindJob(req.job_id(), &f); !st.ok()) return done(st, v1::Job());
  if (auto st = CheckOwner(who, *f.rec, "update"); !st.ok()) return done(st, v1::Job());
  if (IsFinal(f.rec->state)) return done(Precondition("job " + std::to_string(req.job_id()) + " has ended"), v1::Job());
  if (req.has_walltime_s()) {
    if (req.walltime_s() <= 0) return done(Invalid("walltime_s: must be positive (got " + std::to_string(req.walltime_s()) + ")"), v1::Job());
    if (req.walltime_s() > f.rec->walltime && !who.admin)
      return done(grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                               "walltime_s: users may only lower a walltime (" + std::to_string(f.rec->walltime) + "s -> " +
                                   std::to_string(req.walltime_s()) + "s); ask an admin"),
                  v1::Job());
  }
  Scheduler::JobUpdate u;
  if (req.has_walltime_s()) u.walltime = req.walltime_s();
  if (req.has_priority_class()) u.priority_class = req.priority_class();
  if (req.has_name()) u.name = req.name();
  const JobId id = req.job_id();
  JobEvent(id, "update", [this, id, u] { return core_->Update(id, u, Now()); }, [this, id, done](grpc::Status st) {
    v1::Job out;
    if (st.ok()) FillJobView(id, false, &out);
    done(st, out);
  });
}

void Controller::ReportCheckpoint(const Caller& who, const v1::ReportCheckpointRequest& req, Reply<v1::Job> done) {
  const JobId id = req.job_id();
  FoundJob f;
  if (auto st = FindJob(id, &f); !st.ok()) return done(st, v1::Job());
  if (auto st = CheckOwner(who, *f.rec, "report a checkpoint of"); !st.ok()) return done(st, v1::Job());
  if (!Active(*f.rec)) return done(Precondition("job " + std::to_string(id) + " is not running"), v1::Job());
  const uint64_t epoch = req.epoch() != 0 ? req.epoch() : f.rec->checkpoint_epoch + 1;
  const std::string path = req.path();
  const Time now = Now();
  if (stopped_ || failed_) return done(Unavailable(), v1::Job());
  if (auto s = core_->CheckpointDone(id, now, epoch, path); !s) return done(Precondition(s.error().ToString()), v1::Job());
  PHX_LOG(kInfo) << "checkpoint job=" << id << " epoch=" << epoch << " reported by " << who.user;
  store::Batch b;
  b.RecordCheckpoint(id, epoch, now, path);
  b.RecordEvent(now, "checkpoint_done", id, "epoch=" + std::to_string(epoch));
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id, done](grpc::Status st) {
    v1::Job out;
    if (st.ok()) {
      Publish("checkpoint_done", id);
      RequestPass();
      FillJobView(id, false, &out);
    }
    done(st, out);
  });
}

grpc::Status Controller::GetJob(const Caller& who, const v1::GetJobRequest& req, v1::Job* out) {
  FoundJob f;
  if (auto st = FindJob(req.job_id(), &f); !st.ok()) return st;
  if (req.include_env()) {
    if (auto st = CheckOwner(who, *f.rec, "read the environment of"); !st.ok()) return st;
  }
  FillJobView(*f.rec, req.include_env(), out);
  return grpc::Status::OK;
}

grpc::Status Controller::ListJobs(const Caller&, const v1::ListJobsRequest& req, v1::ListJobsResponse* out) {
  std::set<int> states(req.states().begin(), req.states().end());
  for (int s : states) {
    if (!v1::JobState_IsValid(s) || s == v1::JOB_STATE_UNSPECIFIED) return Invalid("states: unknown state " + std::to_string(s));
  }
  for (const auto& [id, job] : core_->jobs()) {
    if (req.limit() > 0 && static_cast<uint32_t>(out->jobs_size()) >= req.limit()) break;
    if (!states.empty()) {
      if (!states.contains(ToProto(job.state))) continue;
    } else if (IsFinal(job.state) && !req.include_finished()) {
      continue;
    }
    if (!req.user().empty() && job.spec.user != req.user()) continue;
    FillJobView(job, false, out->add_jobs());
  }
  return grpc::Status::OK;
}

void Controller::Watch(const Caller&, const v1::WatchRequest& req, std::shared_ptr<WatchLink> link) {
  if (stopped_) {
    link->Close(Unavailable());
    return;
  }
  if (req.job_id() != kNoJob && core_->job(req.job_id()) == nullptr) {
    link->Close(grpc::Status(grpc::StatusCode::NOT_FOUND, "job " + std::to_string(req.job_id()) + ": no such job"));
    return;
  }
  if (req.send_initial()) {
    const Time now = Now();
    const auto initial = [&](const JobRecord& j) {
      if (!req.user().empty() && j.spec.user != req.user()) return;
      v1::JobEvent ev;
      ev.set_time(now);
      ev.set_kind("state");
      FillJobView(j, false, ev.mutable_job());
      link->Send(std::move(ev));
    };
    if (req.job_id() != kNoJob) {
      initial(*core_->job(req.job_id()));
    } else {
      for (const auto& [id, j] : core_->jobs()) {
        if (!IsFinal(j.state)) initial(j);
      }
    }
  }
  watchers_.push_back(Watcher{std::move(link), req.job_id(), req.user()});
}

}  // namespace phalanx::service
