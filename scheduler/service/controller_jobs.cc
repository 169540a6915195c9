// Controller: users' job calls (submit, cancel, hold, release, update, checkpoints, watch) and
// the reads behind the API's job views. Every mutation answers only after its batch committed.
#include <algorithm>

#include "adapters/store/codec.h"
#include "service/controller.h"
#include "util/job_array.h"
#include "util/log.h"

namespace phalanx::service {
namespace {

Error Precondition(std::string message) { return Error{"", std::move(message), ErrorCode::kFailedPrecondition}; }

// A refused submission: the core's error without its "job N" (the id was never the user's). A
// dependency on an unknown job is a bad argument of the submission, not a missing resource.
CallError Refused(Error e) {
  e.where.clear();
  if (e.code == ErrorCode::kNotFound) e.code = ErrorCode::kInvalidArgument;
  return e;
}

// A write a user causes, below the store's free-space reserve: RESOURCE_EXHAUSTED (store_space.h).
CallStatus SpaceForUsers(StoreSpace* space) {
  if (space == nullptr) return {};
  if (auto st = space->CheckUserWrite(); !st) return std::unexpected(CallError(st.error()));
  return {};
}

}  // namespace

Result<const JobRecord*> Controller::FindJob(JobId id) const {
  const JobRecord* job = core_->job(id);
  if (job == nullptr) return Fail(ErrorCode::kNotFound, "job " + std::to_string(id), "no such job");
  return job;
}

Status Controller::CheckOwner(const Caller& who, const JobRecord& job, std::string_view action) const {
  if (MayActOn(who, job.spec.user)) return {};
  const PrivateData& p = options_.private_data;
  if (p.jobs) return Fail(ErrorCode::kNotFound, "job " + std::to_string(job.spec.id), "no such job");
  return Fail(ErrorCode::kPermissionDenied, "",
              std::string(action) + " job " + std::to_string(job.spec.id) + ": it " +
                  (p.users ? "is not yours" : "belongs to " + job.spec.user + ", not to " + who.user));
}

namespace {

bool Listed(const std::vector<std::string>& list, const std::string& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

std::string Joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& x : list) out += (out.empty() ? "" : ",") + x;
  return out.empty() ? "-" : out;
}

}  // namespace

Status Controller::AuthorizePartitions(const Caller& who, JobSpec* spec, bool walltime_max) const {
  const PartitionTable& table = core_->partitions();
  if (spec->partitions.empty()) spec->partitions.push_back(table.default_name());
  auto ids = table.Resolve(spec->partitions);
  if (!ids) return Fail(ids.error().where, ids.error().message);
  for (uint32_t i : *ids) {
    const std::string& name = table.at(i).name;
    auto opt = std::find_if(options_.partitions.begin(), options_.partitions.end(),
                            [&](const PartitionOptions& o) { return o.name == name; });
    if (opt == options_.partitions.end() || !opt->restricted || who.admin) continue;
    const AccessList& a = opt->allow;
    bool ok = Listed(a.users, who.user) || (!spec->account.empty() && Listed(a.accounts, spec->account));
    for (const std::string& g : who.groups) ok = ok || Listed(a.groups, g);
    if (!ok) {
      return Fail(ErrorCode::kPermissionDenied, "partition",
                  "partition " + name + ": user " + who.user +
                      (spec->account.empty() ? "" : " (account " + spec->account + ")") +
                      " may not use it (AllowUsers=" + Joined(a.users) + " AllowGroups=" + Joined(a.groups) +
                      " AllowAccounts=" + Joined(a.accounts) + ")");
    }
  }
  if (spec->priority_class.empty()) {
    const std::string& first = table.at(ids->front()).name;
    for (const PartitionOptions& o : options_.partitions) {
      if (o.name == first && !o.default_class.empty()) spec->priority_class = o.default_class;
    }
  }
  if (walltime_max) {
    Duration max = kUnlimitedWalltime;
    for (uint32_t i : *ids) max = std::min(max, table.at(i).max_walltime);
    spec->walltime = max;
  }
  return {};
}

Status Controller::Authorize(const Caller& who, JobSpec* spec, bool walltime_max) const {
  const AccessRules& rules = options_.access;
  if (rules.empty()) return AuthorizePartitions(who, spec, walltime_max);
  const Requester r{who.user, who.groups, who.admin};
  spec->account = rules.AccountFor(who.user, spec->account);
  PHX_RETURN_IF_ERROR(rules.CheckAccount(r, spec->account));
  PHX_RETURN_IF_ERROR(AuthorizePartitions(who, spec, walltime_max));
  const std::string cls = spec->priority_class.empty() ? core_->config().classes.default_class : spec->priority_class;
  return rules.CheckClass(r, cls, spec->account);
}

CallResult<Controller::TestOnlyAnswer> Controller::TestOnly(const Caller& who, JobSpec spec, bool walltime_max) {
  if (auto s = Serving(); !s) return std::unexpected(s.error());
  if (auto st = Authorize(who, &spec, walltime_max); !st) return std::unexpected(CallError(st.error()));
  TestOnlyAnswer out;
  out.job_id = next_job_id_;
  spec.id = next_job_id_;
  spec.submit = Now();
  if (auto st = core_->ValidateSpec(spec); !st) return std::unexpected(Refused(st.error()));
  auto answer = core_->WhatIfStart(spec, spec.submit);
  if (!answer) return std::unexpected(Refused(answer.error()));
  out.answer = std::move(*answer);
  const PartitionTable& table = core_->partitions();
  if (auto ids = table.Resolve(spec.partitions); ids && !ids->empty()) {
    out.partition = table.at(table.Holding(*ids, out.answer.gpus, core_->topology())).name;
  }
  return out;
}

void Controller::Submit(JobSpec spec, LaunchInfo launch, Reply<JobId> done) {
  if (auto s = Serving(); !s) return done(std::unexpected(s.error()));
  if (auto s = SpaceForUsers(options_.store_space); !s) return done(std::unexpected(s.error()));
  const Time now = Now();
  spec.submit = now;
  // One job, or one per array task (the array's id first, then its tasks' ids).
  std::vector<JobSpec> specs;
  JobId answer = next_job_id_;
  if (launch.spec().array().empty()) {
    spec.id = next_job_id_;
    specs.push_back(std::move(spec));
  } else {
    auto array = ParseArraySpec(launch.spec().array(), core_->config().max_array_size);
    if (!array) return done(std::unexpected(CallError(Error{"", "spec.array: " + array.error().message})));
    specs.reserve(array->tasks.size());
    for (size_t i = 0; i < array->tasks.size(); ++i) {
      JobSpec& t = specs.emplace_back(spec);
      t.id = answer + 1 + i;
      t.array_id = answer;
      t.array_task = array->tasks[i];
      t.array_max_running = array->max_running;
    }
  }
  // The tasks differ only in their ids and indices: the first one's check is every one's.
  if (auto st = core_->ValidateSpec(specs.front()); !st) return done(std::unexpected(Refused(st.error())));
  next_job_id_ = specs.back().id + 1;  // ids whose batch fails are skipped, never reused
  store::Batch b;
  const std::string launch_blob = LaunchBook::Encode(launch);
  for (const JobSpec& t : specs) {
    b.SubmitJob(t, now);
    b.SetLaunchInfo(t.id, launch_blob);
  }
  Commit(std::move(b), [this, specs = std::move(specs), launch = std::move(launch), answer,
                        done = std::move(done)](CallStatus st) mutable {
    if (!st) return done(std::unexpected(st.error()));
    const Time t = Now();
    std::optional<Error> refused;
    size_t accepted = 0;
    for (const JobSpec& spec : specs) {
      const JobId id = spec.id;
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
        Commit(std::move(fb), [](CallStatus) {});
        PHX_LOG(kWarn) << "job " << id << " stored but refused by the core: " << s.error().message;
        if (!refused) refused = s.error();
        continue;
      }
      ++accepted;
      launch_.Add(id, launch);
      Track(*core_->job(id));
      ++stats_.submitted;
      if (observer_.submitted) observer_.submitted();
      Publish("submit", id);
    }
    const JobSpec& first = specs.front();
    PHX_LOG(kInfo) << "submit job=" << answer << " user=" << first.user << " gpus=" << first.shape.gpus
                   << (first.array_id != kNoJob ? " tasks=" + std::to_string(accepted) : "")
                   << (first.name.empty() ? "" : " name=" + first.name);
    // An array with some tasks refused is still the array (the refused tasks are failed jobs).
    if (accepted == 0 && refused) return done(std::unexpected(Refused(*refused)));
    RequestPass();
    done(answer);
  });
}

void Controller::JobEvent(JobId id, const std::string& kind, std::function<Status()> event,
                          std::function<void(CallStatus)> done, std::function<void()> then) {
  if (auto s = Serving(); !s) return done(s);
  const Time now = Now();
  if (auto s = event(); !s) return done(std::unexpected(s.error()));
  store::Batch b;
  b.RecordEvent(now, kind, id, "");
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id, kind, done = std::move(done), then = std::move(then)](CallStatus st) {
    if (!st) return done(st);
    if (then) then();
    Publish(kind, id);
    RequestPass();
    done({});
  });
}

void Controller::Cancel(const Caller& who, JobId id, int32_t signal,
                        std::function<void(CallStatus, std::optional<JobState>)> done) {
  auto found = FindJob(id);
  if (!found) return done(std::unexpected(found.error()), std::nullopt);
  const JobRecord& job = **found;
  // A signal is not a cancel: the messages say which one was refused.
  if (auto st = CheckOwner(who, job, signal != 0 ? "signal" : "cancel"); !st)
    return done(std::unexpected(st.error()), std::nullopt);
  if (signal < 0 || signal > 64)
    return done(std::unexpected(Error{"", "signal: not a signal number (got " + std::to_string(signal) + ")"}),
                std::nullopt);
  if (IsFinal(job.state))
    return done(
        std::unexpected(Precondition("job " + std::to_string(id) + (signal != 0 ? " cannot be signalled: it" : "") +
                                     " is already " + std::string(JobStateName(job.state)))),
        job.state);
  if (signal != 0) {
    // A signal for the job's processes (scancel --signal): the job is not cancelled.
    if (!HoldsGpus(job))
      return done(
          std::unexpected(Precondition("job " + std::to_string(id) + " cannot be signalled: it is not running")),
          job.state);
    PHX_LOG(kInfo) << "signal " << signal << " to job=" << id << " by " << who.user;
    executor_->SignalJob(id, signal, std::nullopt);
    return done({}, job.state);
  }
  const bool was_active = HoldsGpus(job);
  const std::string by = who.user;
  JobEvent(
      id, "cancel",
      [this, id, by] {
    Status s = core_->Cancel(id, Now());
    if (s) launch_.SetOutcome(id, 0, "cancelled by " + by);  // saved with the cancelled state
    return s;
      },
      [this, id, done](CallStatus st) {
    const JobRecord* j = core_->job(id);
    done(st, j ? std::optional<JobState>(j->state) : std::nullopt);
  },
      [this, id, was_active, by] {
    PHX_LOG(kInfo) << "cancel job=" << id << " by " << by;
    if (was_active) executor_->StopJob(id, "cancelled by " + by);
      });
}

void Controller::CancelArray(const Caller& who, JobId array, int32_t signal,
                             std::function<void(CallStatus, std::optional<JobState>)> done) {
  const std::vector<JobId>* tasks = core_->array_tasks(array);
  if (tasks == nullptr || tasks->empty())
    return done(std::unexpected(Error{"array " + std::to_string(array), "no such array", ErrorCode::kNotFound}),
                std::nullopt);
  if (auto st = CheckOwner(who, *core_->job(tasks->front()), "cancel"); !st)
    return done(std::unexpected(st.error()), std::nullopt);
  if (signal < 0 || signal > 64)
    return done(std::unexpected(Error{"", "signal: not a signal number (got " + std::to_string(signal) + ")"}),
                std::nullopt);
  if (auto s = Serving(); !s) return done(s, std::nullopt);
  std::vector<JobId> live;
  for (JobId t : *tasks) {
    if (!IsFinal(core_->job(t)->state)) live.push_back(t);
  }
  if (live.empty())
    return done(std::unexpected(Precondition("array " + std::to_string(array) + ": every task has ended")),
                JobState::kCompleted);
  if (signal != 0) {
    size_t sent = 0;
    for (JobId t : live) {
      if (!HoldsGpus(*core_->job(t))) continue;
      executor_->SignalJob(t, signal, std::nullopt);
      ++sent;
    }
    if (sent == 0)
      return done(std::unexpected(Precondition("array " + std::to_string(array) + ": no task is running")),
                  JobState::kPending);
    PHX_LOG(kInfo) << "signal " << signal << " to " << sent << " tasks of array=" << array << " by " << who.user;
    return done({}, JobState::kRunning);
  }
  const Time now = Now();
  const std::string by = who.user;
  store::Batch b;
  std::vector<JobId> stop;
  for (JobId t : live) {
    const bool was_active = HoldsGpus(*core_->job(t));
    if (!core_->Cancel(t, now)) continue;
    launch_.SetOutcome(t, 0, "cancelled by " + by);
    b.RecordEvent(now, "cancel", t, "");
    if (was_active) stop.push_back(t);
  }
  SaveChanged(b, live);
  Commit(std::move(b), [this, array, live = std::move(live), stop = std::move(stop), by, done](CallStatus st) {
    if (!st) return done(st, std::nullopt);
    PHX_LOG(kInfo) << "cancel array=" << array << " (" << live.size() << " tasks) by " << by;
    for (JobId t : stop) executor_->StopJob(t, "cancelled by " + by);
    for (JobId t : live) Publish("cancel", t);
    RequestPass();
    done({}, JobState::kCancelled);
  });
}

void Controller::Hold(const Caller& who, JobId id, Reply<void> done) {
  auto found = FindJob(id);
  if (!found) return done(std::unexpected(found.error()));
  if (auto st = CheckOwner(who, **found, "hold"); !st) return done(std::unexpected(st.error()));
  if (auto s = SpaceForUsers(options_.store_space); !s) return done(std::unexpected(s.error()));
  JobEvent(
      id, "hold", [this, id] { return core_->Hold(id, Now()); }, std::move(done));
}

void Controller::Top(const Caller& who, JobId id, Reply<void> done) {
  auto found = FindJob(id);
  if (!found) return done(std::unexpected(found.error()));
  if (auto st = CheckOwner(who, **found, "top"); !st) return done(std::unexpected(st.error()));
  if (auto s = SpaceForUsers(options_.store_space); !s) return done(std::unexpected(s.error()));
  JobEvent(
      id, "top", [this, id] { return core_->Top(id, Now()); }, std::move(done));
}

void Controller::Requeue(const Caller& who, JobId id, Reply<void> done) {
  if (!who.admin)
    return done(std::unexpected(
        Error{"", "requeue job: admins only (" + who.user + " is not one)", ErrorCode::kPermissionDenied}));
  if (auto found = FindJob(id); !found) return done(std::unexpected(found.error()));
  JobEvent(
      id, "requeue", [this, id, who] { return core_->Requeue(id, Now(), "requeued by " + who.user); }, std::move(done));
}

void Controller::Suspend(const Caller& who, JobId id, bool resume, Reply<void> done) {
  const char* what = resume ? "resume" : "suspend";
  if (!who.admin)
    return done(std::unexpected(Error{"", std::string(what) + " job: admins only (" + who.user + " is not one)",
                                      ErrorCode::kPermissionDenied}));
  if (auto found = FindJob(id); !found) return done(std::unexpected(found.error()));
  if (!executor_->CanSuspend())
    return done(std::unexpected(Precondition(
        std::string(what) + " job: not supported with this executor (in Slurm mode use scontrol " + what + ")")));
  JobEvent(
      id, what, [this, id, resume] { return resume ? core_->Resume(id, Now()) : core_->Suspend(id, Now()); },
      std::move(done),
      [this, id, resume, by = who.user] {
    PHX_LOG(kInfo) << (resume ? "resume" : "suspend") << " job=" << id << " by " << by;
    executor_->SuspendJob(id, resume);
      });
}

void Controller::Release(const Caller& who, JobId id, Reply<void> done) {
  auto found = FindJob(id);
  if (!found) return done(std::unexpected(found.error()));
  if (auto st = CheckOwner(who, **found, "release"); !st) return done(std::unexpected(st.error()));
  if (auto s = SpaceForUsers(options_.store_space); !s) return done(std::unexpected(s.error()));
  JobEvent(
      id, "release", [this, id] { return core_->Release(id, Now()); }, std::move(done));
}

void Controller::Update(const Caller& who, JobId id, const Scheduler::JobUpdate& update, Reply<void> done) {
  auto found = FindJob(id);
  if (!found) return done(std::unexpected(found.error()));
  const JobRecord& job = **found;
  if (auto st = CheckOwner(who, job, "update"); !st) return done(std::unexpected(st.error()));
  if (auto s = SpaceForUsers(options_.store_space); !s) return done(std::unexpected(s.error()));
  if (IsFinal(job.state)) return done(std::unexpected(Precondition("job " + std::to_string(id) + " has ended")));
  // The core checks the walltime's range; raising it is for admins.
  if (update.walltime && *update.walltime > job.walltime && !who.admin)
    return done(std::unexpected(Error{"",
                                      "walltime_s: users may only lower a walltime (" + std::to_string(job.walltime) +
                                          "s -> " + std::to_string(*update.walltime) + "s); ask an admin",
                                      ErrorCode::kPermissionDenied}));
  if (update.priority_class && *update.priority_class != job.spec.priority_class) {
    const std::string cls =
        update.priority_class->empty() ? core_->config().classes.default_class : *update.priority_class;
    if (auto st = options_.access.CheckClass(Requester{who.user, who.groups, who.admin}, cls, job.spec.account); !st)
      return done(std::unexpected(st.error()));
  }
  JobEvent(
      id, "update", [this, id, update] { return core_->Update(id, update, Now()); }, std::move(done));
}

void Controller::ReportCheckpoint(const Caller& who, JobId id, uint64_t epoch, std::string path, Reply<void> done) {
  auto found = FindJob(id);
  if (!found) return done(std::unexpected(found.error()));
  const JobRecord& job = **found;
  if (auto st = CheckOwner(who, job, "report a checkpoint of"); !st) return done(std::unexpected(st.error()));
  if (!HoldsGpus(job)) return done(std::unexpected(Precondition("job " + std::to_string(id) + " is not running")));
  if (epoch == 0) epoch = job.checkpoint_epoch + 1;
  const Time now = Now();
  if (auto s = Serving(); !s) return done(s);
  if (auto s = core_->CheckpointDone(id, now, epoch, path); !s) return done(std::unexpected(s.error()));
  PHX_LOG(kInfo) << "checkpoint job=" << id << " epoch=" << epoch << " reported by " << who.user;
  store::Batch b;
  b.RecordCheckpoint(id, epoch, now, path);
  b.RecordEvent(now, "checkpoint_done", id, "epoch=" + std::to_string(epoch));
  SaveChanged(b, {id});
  Commit(std::move(b), [this, id, done = std::move(done)](CallStatus st) {
    if (st) {
      Publish("checkpoint_done", id);
      RequestPass();
    }
    done(st);
  });
}

void Controller::Watch(const WatchFilter& filter, std::shared_ptr<JobEventSink> sink) {
  if (stopped_) {
    sink->Close(Serving().error());
    return;
  }
  if (filter.job != kNoJob) {
    if (auto found = FindJob(filter.job); !found) {
      sink->Close(found.error());
      return;
    }
  }
  if (filter.send_initial) {
    const Time now = Now();
    const auto initial = [&](const JobRecord& j) {
      if (!filter.user.empty() && j.spec.user != filter.user) return;
      sink->Send(now, "state", j);
    };
    if (filter.job != kNoJob) {
      initial(*core_->job(filter.job));
    } else {
      for (const auto& [id, j] : core_->jobs()) {
        if (!IsFinal(j.state)) initial(j);
      }
    }
  }
  watchers_.push_back(Watcher{filter, std::move(sink)});
}

}  // namespace phalanx::service
