#include "service/slurm_executor.h"

#include <pwd.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstdint>
#include <ctime>

#include "util/hostlist.h"
#include "util/log.h"
#include "util/numbers.h"

namespace phalanx::service {
namespace {

using slurm::SlurmJob;
using slurm::SlurmJobId;
using slurm::SlurmJobState;
using slurm::SlurmWait;

bool Active(const JobRecord* r) {
  return r != nullptr && (r->state == JobState::kRunning || r->state == JobState::kCheckpointing);
}

std::string UserName(const SlurmJob& j, uint32_t* gid) {
  *gid = 0;
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(j.uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    *gid = pw.pw_gid;
    return pw.pw_name;
  }
  return j.user.empty() ? "uid:" + std::to_string(j.uid) : j.user;
}

// "2026-12-01T11:30Z": Unix seconds to the minute, UTC.
std::string IsoMinute(Time t) {
  const time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%MZ", &tm);
  return buf;
}

std::string JoinedNames(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

std::string Joined(const std::vector<SlurmJobId>& ids) {
  std::string s;
  for (SlurmJobId id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

}  // namespace

SlurmExecutor::SlurmExecutor(boost::asio::io_context& io, slurm::SlurmAdapter* slurm, const Topology& topology,
                             SlurmModeOptions options)
    : io_(io),
      slurm_(slurm),
      topo_(topology),
      options_(std::move(options)),
      timer_(io),
      alive_(std::make_shared<int>(0)) {
  // Until the first poll every node is unconfirmed (drained): no placement before Slurm was read.
  for (uint32_t n = 0; n < topo_.node_count(); ++n)
    nodes_[topo_.domain(topo_.node_domain(NodeId(n))).name] = NodeReport{NodeAvailability::kUnconfirmed, false, 0};
}

SlurmExecutor::~SlurmExecutor() {
  // The call in progress finishes (at most MessageTimeout); queued ones are dropped, and no
  // result reaches this object any more.
  worker_.stop();
  worker_.join();
  alive_.reset();
}

template <class R>
void SlurmExecutor::OnWorker(std::function<R(slurm::SlurmAdapter&)> call, std::function<void(R)> done) {
  ++in_flight_;
  slurm::SlurmAdapter* const adapter = slurm_;
  boost::asio::io_context& io = io_;
  boost::asio::post(worker_, [this, adapter, &io, alive = std::weak_ptr<int>(alive_), call = std::move(call),
                              done = std::move(done)]() mutable {
    R result = call(*adapter);
    boost::asio::post(io, [this, alive, done = std::move(done), result = std::move(result)]() mutable {
      if (alive.expired()) return;
      --in_flight_;
      if (done && !halted_) done(std::move(result));  // after Stop nothing reaches the host
    });
  });
}

// An action on one job whose failure is only logged.
void SlurmExecutor::Act(std::string what, std::function<Status(slurm::SlurmAdapter&)> call) {
  OnWorker<Status>(std::move(call), [what = std::move(what)](Status st) {
    if (!st) PHX_LOG(kWarn) << "slurm mode: " << what << ": " << st.error().ToString();
  });
}

void SlurmExecutor::SetController(SubmitFn submit, CancelFn cancel, UpdateFn update) {
  submit_ = std::move(submit);
  cancel_ = std::move(cancel);
  update_ = std::move(update);
}

SlurmJobId SlurmExecutor::slurm_job(JobId job) const {
  auto it = by_job_.find(job);
  return it == by_job_.end() ? 0 : it->second;
}

JobId SlurmExecutor::core_job(SlurmJobId sid) const {
  auto it = tracked_.find(sid);
  return it == tracked_.end() ? kNoJob : it->second.job;
}

void SlurmExecutor::Link(SlurmJobId sid, JobId job) {
  Tracked& t = tracked_[sid];
  if (t.job != kNoJob && t.job != job) by_job_.erase(t.job);
  t.job = job;
  t.submitting = false;
  by_job_[job] = sid;
}

void SlurmExecutor::Unlink(SlurmJobId sid) {
  auto it = tracked_.find(sid);
  if (it == tracked_.end()) return;
  if (it->second.job != kNoJob) by_job_.erase(it->second.job);
  tracked_.erase(it);
}

// The store's launch info names the Slurm job of every unfinished job (also after a restart).
void SlurmExecutor::LinkFromLaunchInfo() {
  if (host_ == nullptr) return;
  for (const auto& [id, rec] : host_->core().jobs()) {
    if (IsFinal(rec.state) || by_job_.contains(id)) continue;
    const LaunchInfo* li = host_->launch_info(id);
    if (li == nullptr) continue;
    auto env = li->spec().env().find(kSlurmJobEnv);
    if (env == li->spec().env().end()) continue;
    if (auto sid = ParseNumber<SlurmJobId>(env->second); sid && *sid > 0) Link(*sid, id);
  }
}

void SlurmExecutor::AdoptJob(JobId job, const std::vector<GpuId>&) {
  // Its Slurm job is linked from the launch info at the first poll; a job the core runs whose
  // Slurm job is still pending (phalanxd died between the commit and the release) is released
  // then, on the GPUs the core holds for it: placed once.
  (void)job;
}

void SlurmExecutor::Start() {
  stopped_ = false;
  PHX_LOG(kInfo) << "slurm mode: " << slurm_->version() << ", poll every " << options_.poll_interval_s
                 << " s, fallback lease " << options_.fallback_delay_s << " s";
  boost::asio::post(io_, [this] {
    if (!stopped_) Poll();
  });
  ArmTimer();
}

void SlurmExecutor::Stop() {
  stopped_ = true;
  halted_ = true;
  timer_.cancel();
}

void SlurmExecutor::ArmTimer() {
  timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(options_.poll_interval_s * 1000)));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    Poll();
    ArmTimer();
  });
}

void SlurmExecutor::Poll() {
  if (host_ == nullptr || !host_->Serving()) return;
  if (polling_) {
    poll_again_ = true;  // one more right after the one in flight (its snapshot may predate the reason)
    return;
  }
  polling_ = true;
  struct Snapshot {
    Result<std::vector<slurm::SlurmNode>> nodes;
    Result<std::vector<slurm::SlurmPartition>> partitions;
    Result<std::vector<SlurmJob>> jobs;
    std::optional<Result<Duration>> cred;  // Slurm's cred_expire, until it was read once
  };
  const bool want_cred = cred_expire_ == 0;
  OnWorker<std::shared_ptr<Snapshot>>(
      [want_cred](slurm::SlurmAdapter& a) {
    auto s = std::make_shared<Snapshot>(
        Snapshot{a.LoadNodes(), std::vector<slurm::SlurmPartition>{}, std::vector<SlurmJob>{}, std::nullopt});
    if (s->nodes) {
      if (want_cred) s->cred = a.CredentialLifetime();
      s->partitions = a.LoadPartitions();
      s->jobs = a.LoadJobs();
    } else {
      s->jobs = std::unexpected(s->nodes.error());
    }
    return s;
      },
      [this](std::shared_ptr<Snapshot> s) {
    polling_ = false;
    if (s->cred && !halted_) TakeCredExpire(*s->cred);
    if (!halted_ && host_ != nullptr && host_->Serving()) Apply(s->nodes, s->partitions, s->jobs);
    if (poll_again_ && !halted_) {
      poll_again_ = false;
      Poll();
    }
  });
}

void SlurmExecutor::TakeCredExpire(const Result<Duration>& cred) {
  if (!cred) {
    if (!cred_failed_)
      PHX_LOG(kWarn) << "slurm mode: cannot read Slurm's cred_expire (" << cred.error().ToString()
                     << "); a requeued job whose begin time Slurm does not show is released " << kRequeueSettleS
                     << " s after its requeue";
    cred_failed_ = true;
    return;
  }
  cred_failed_ = false;
  cred_expire_ = *cred;
  PHX_LOG(kInfo) << "slurm mode: Slurm's cred_expire is " << cred_expire_ << " s (a requeued job waits that long)";
}

void SlurmExecutor::Apply(const Result<std::vector<slurm::SlurmNode>>& nodes,
                          const Result<std::vector<slurm::SlurmPartition>>& partitions,
                          const Result<std::vector<SlurmJob>>& jobs) {
  if (!jobs) {
    if (!load_failed_) PHX_LOG(kWarn) << "slurm mode: cannot read Slurm: " << jobs.error().ToString();
    load_failed_ = true;
    return;
  }
  if (load_failed_) PHX_LOG(kInfo) << "slurm mode: Slurm readable again";
  load_failed_ = false;
  if (!partitions) {
    // The partitions last read stay in force.
    if (!partitions_failed_)
      PHX_LOG(kWarn) << "slurm mode: cannot read Slurm's partitions: " << partitions.error().ToString();
    partitions_failed_ = true;
  } else {
    partitions_failed_ = false;
    SyncPartitions(*partitions);  // before the submissions below: their partitions must be known
  }
  LinkFromLaunchInfo();

  std::vector<SlurmJob> external;
  std::set<SlurmJobId> seen;
  std::vector<std::pair<const SlurmJob*, slurm::ManagedOptions>> managed;
  for (const SlurmJob& j : *jobs) {
    seen.insert(j.id);
    auto by = slurm::ManagedBy(j, options_.rule);
    if (!by) {
      if (refused_.insert(j.id).second) PHX_LOG(kWarn) << "slurm mode: " << by.error().ToString() << "; left to Slurm";
    }
    auto it = tracked_.find(j.id);
    const JobRecord* rec =
        it != tracked_.end() && it->second.job != kNoJob ? host_->core().job(it->second.job) : nullptr;
    const bool ours = by && by->has_value() && !refused_.contains(j.id);
    if (!ours) {
      if (!IsSlurmFinal(j.state) || j.completing) external.push_back(j);
      continue;
    }
    const bool running = j.state == SlurmJobState::kRunning || j.state == SlurmJobState::kSuspended;
    if (running && !Active(rec)) {
      // Phalanx's, but not running where Phalanx put it (Slurm started it once the lease ran
      // out, or a preempted job not yet requeued): its GPUs are busy for the core.
      external.push_back(j);
      if (it != tracked_.end() && !it->second.submitting) {
        if (rec != nullptr && !IsFinal(rec->state) && !it->second.requeueing && cancel_) {
          // Slurm ran it itself (phalanxd was away longer than the lease): not the core's any more.
          cancel_(it->second.job, "Slurm started it itself on " + CompressHostlist(j.nodes));
          Unlink(j.id);
        } else if (rec == nullptr || IsFinal(rec->state)) {
          Unlink(j.id);
        }
      }
      continue;
    }
    managed.emplace_back(&j, **by);
  }
  SyncNodes(*nodes);
  for (auto& [j, o] : managed) SyncManaged(*j, o, tracked_[j->id]);

  // Linked jobs Slurm no longer lists (finished longer ago than MinJobAge, or purged).
  std::vector<SlurmJobId> gone;
  for (const auto& [sid, t] : tracked_)
    if (!seen.contains(sid) && !t.submitting) gone.push_back(sid);
  for (SlurmJobId sid : gone) {
    const JobId job = tracked_[sid].job;
    const JobRecord* rec = host_->core().job(job);
    if (Active(rec)) host_->JobPartsEnded(job, false, -1, "Slurm job " + std::to_string(sid) + " is gone");
    else if (rec != nullptr && !IsFinal(rec->state) && cancel_)
      cancel_(job, "Slurm job " + std::to_string(sid) + " is gone");
    Unlink(sid);
  }
  std::erase_if(refused_, [&](SlurmJobId id) { return !seen.contains(id); });
  std::erase_if(lease_failing_, [&](SlurmJobId id) { return !seen.contains(id); });
  // Last, after the managed jobs' ends: the GPUs of a managed job that ended in Slurm are free
  // in the core only now, and a plain job Slurm started on them since must find them so before
  // the next pass.
  SyncLoad(external);
  KeepForeign(external);
}

const std::vector<std::pair<uint32_t, uint32_t>>& SlurmExecutor::foreign_on_node(const std::string& node) const {
  static const std::vector<std::pair<uint32_t, uint32_t>> kNone;
  auto it = foreign_by_node_.find(node);
  return it == foreign_by_node_.end() ? kNone : it->second;
}

// Slurm's own jobs as users see them (gq, ginfo, phalanx job show), once per poll.
void SlurmExecutor::KeepForeign(const std::vector<SlurmJob>& external) {
  std::vector<ForeignJob> out;
  out.reserve(external.size());
  foreign_by_node_.clear();
  for (const SlurmJob& j : external) {
    ForeignJob f;
    f.id = j.id;
    f.name = slurm::SlurmName(j.name);
    auto user = user_names_.find(j.uid);
    if (user == user_names_.end() || (user->second.starts_with("uid:") && !j.user.empty())) {
      uint32_t gid = 0;
      user = user_names_.insert_or_assign(j.uid, UserName(j, &gid)).first;
    }
    f.user = user->second;
    f.uid = j.uid;
    f.state = j.completing ? "COMPLETING" : std::string(slurm::SlurmJobStateName(j.state));
    f.running = slurm::HoldsNodes(j);
    if (!f.running) f.reason = j.reason;
    f.partition = j.partition;
    if (f.running) {
      f.nodes = j.nodes;
      f.gpus_by_node = slurm::GpusByNode(j);
      for (uint32_t g : f.gpus_by_node) f.gpus += g;
      f.node_count = static_cast<uint32_t>(j.nodes.size());
    } else {
      f.node_count = std::max<uint32_t>(j.num_nodes, 1);
      f.gpus = j.gpus_per_job > 0 ? j.gpus_per_job : j.gpus_per_node * f.node_count;
    }
    f.submit = j.submit;
    f.start = j.start;
    f.end = j.end;
    f.time_limit = j.time_limit;
    for (size_t k = 0; k < f.nodes.size() && k < f.gpus_by_node.size(); ++k) {
      if (f.gpus_by_node[k] > 0) foreign_by_node_[f.nodes[k]].emplace_back(f.id, f.gpus_by_node[k]);
    }
    out.push_back(std::move(f));
  }
  foreign_ = std::move(out);
}

void SlurmExecutor::JobEnding(SlurmJobId sid) {
  if (halted_ || core_job(sid) == kNoJob) return;
  WatchEnding(sid, 0);
}

void SlurmExecutor::WatchEnding(SlurmJobId sid, int tries) {
  OnWorker<Result<SlurmJob>>([sid](slurm::SlurmAdapter& a) { return a.LoadJob(sid); },
                             [this, sid, tries](Result<SlurmJob> j) {
    if (halted_) return;
    // Ending (COMPLETING), done, gone, or pending again (requeued): no longer running as before.
    const bool ended =
        j ? (j->state != SlurmJobState::kRunning && j->state != SlurmJobState::kSuspended) || j->completing
          : j.error().code == ErrorCode::kNotFound;
    if (ended) return Poll();                       // the poll takes the end (and what else changed) at once
    if (!j || tries + 1 >= kEndWatchTries) return;  // the regular poll will
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::milliseconds(kEndWatchMs));
    timer->async_wait(
        [this, timer, sid, tries, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
      if (!ec && !alive.expired() && !halted_) WatchEnding(sid, tries + 1);
    });
  });
}

void SlurmExecutor::SyncNodes(const std::vector<slurm::SlurmNode>& nodes) {
  std::map<std::string, const slurm::SlurmNode*> by_name;
  for (const slurm::SlurmNode& n : nodes) by_name[n.name] = &n;
  const Time now = host_->Now();
  for (auto& [name, report] : nodes_) {
    NodeAvailability want = NodeAvailability::kAvailable;
    std::string why = "Slurm: idle or Phalanx's";
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      want = NodeAvailability::kAway;
      why = "Slurm does not know the node";
    } else if (it->second->down) {
      want = NodeAvailability::kAway;
      why = "Slurm: down" + (it->second->reason.empty() ? "" : " (" + it->second->reason + ")");
    } else if (it->second->drained) {
      want = NodeAvailability::kUnconfirmed;
      why = "Slurm: drained" + (it->second->reason.empty() ? "" : " (" + it->second->reason + ")");
    }
    report.last_report = now;
    report.connected = want != NodeAvailability::kAway;
    // Also when only the reason changed, and at the first sync (the core's initial node states
    // are not ours): the host applies a state only when it differs from the core's.
    auto& last_why = node_why_[name];
    if (report.availability == want && last_why == why) continue;
    report.availability = want;
    last_why = why;
    host_->NodeAvailabilityChanged(name, why);
  }
}

// GPUs of jobs Phalanx did not place: busy in the core until their end, the rest placeable.
// Sent when it changes, and again while the core took fewer than asked (its own job held them:
// a start Slurm has not carried out yet).
void SlurmExecutor::SyncLoad(const std::vector<SlurmJob>& external) {
  const auto load = slurm::ExternalLoadByNode(external);
  for (auto& [name, sent] : load_sent_) {
    if (!load.contains(name)) {
      sent.want = 0;
      sent.pieces.clear();
    }
  }
  for (const auto& [name, l] : load) {
    const NodeId n = topo_.find_node(name);
    if (!n.valid()) continue;  // not in the topology Phalanx places on
    LoadSent& sent = load_sent_[name];
    // Slurm may know more GPUs than the topology: the earliest ends give way.
    std::vector<std::pair<uint32_t, Time>> pieces = l.pieces;
    uint32_t over = l.gpus > topo_.node_gpu_count(n) ? l.gpus - topo_.node_gpu_count(n) : 0;
    std::vector<size_t> by_end(pieces.size());
    for (size_t k = 0; k < by_end.size(); ++k) by_end[k] = k;
    std::stable_sort(by_end.begin(), by_end.end(),
                     [&](size_t a, size_t b) { return pieces[a].second < pieces[b].second; });
    for (size_t k : by_end) {
      const uint32_t cut = std::min(over, pieces[k].first);
      pieces[k].first -= cut;
      over -= cut;
    }
    std::erase_if(pieces, [](const auto& p) { return p.first == 0; });
    sent.want = 0;
    for (const auto& p : pieces) sent.want += p.first;
    if (pieces != sent.pieces) sent.taken = UINT32_MAX;  // changed: send again
    sent.pieces = std::move(pieces);
  }
  for (auto it = load_sent_.begin(); it != load_sent_.end();) {
    const std::string& name = it->first;
    LoadSent& sent = it->second;
    auto l = load.find(name);
    if (sent.want != sent.taken) {
      std::vector<Scheduler::ExternalPiece> pieces;
      Time until = 0;
      for (const auto& [gpus, end] : sent.pieces) {
        pieces.push_back({gpus, end});
        until = std::max(until, end);
      }
      const uint32_t before = sent.taken;
      const uint32_t taken = host_->SetExternalLoad(name, pieces);
      if (taken != before) {
        if (sent.want == 0) {
          PHX_LOG(kInfo) << "slurm mode: node " << name << ": no GPUs busy with Slurm's own jobs any more";
        } else {
          std::string ends;
          for (size_t k = 0; k < l->second.jobs.size() && k < l->second.pieces.size(); ++k)
            ends += (ends.empty() ? "" : ", ") + std::to_string(l->second.jobs[k]) + ": " +
                    std::to_string(l->second.pieces[k].first) +
                    " until t=" + std::to_string(l->second.pieces[k].second);
          PHX_LOG(kInfo) << "slurm mode: node " << name << ": " << taken << " GPUs busy with Slurm jobs "
                         << Joined(l->second.jobs) << " (not placed by Phalanx) until t=" << until << " (" << ends
                         << ")"
                         << (taken < sent.want ? " (" + std::to_string(sent.want - taken) + " more held by Phalanx's)"
                                               : "");
        }
      }
      sent.taken = taken;
    }
    if (sent.want == 0 && sent.taken == 0) it = load_sent_.erase(it);
    else ++it;
  }
}

void SlurmExecutor::SyncManaged(const SlurmJob& j, const slurm::ManagedOptions& o, Tracked& t) {
  const Time now = host_->Now();
  const JobRecord* rec = t.job != kNoJob ? host_->core().job(t.job) : nullptr;
  if (IsSlurmFinal(j.state)) {
    if (Active(rec)) {
      const bool ok = j.state == SlurmJobState::kCompleted && j.exit_code == 0;
      std::string reason = "Slurm: " + std::string(slurm::SlurmJobStateName(j.state));
      if (j.exit_code != 0) reason += " exit " + std::to_string(j.exit_code);
      if (j.exit_signal != 0) reason += " signal " + std::to_string(j.exit_signal);
      host_->JobPartsEnded(t.job, ok, ok ? 0 : (j.exit_code != 0 ? j.exit_code : 1), reason);
    } else if (rec != nullptr && !IsFinal(rec->state) && cancel_) {
      cancel_(t.job, "Slurm: " + std::string(slurm::SlurmJobStateName(j.state)));
    }
    if (!t.submitting) Unlink(j.id);
    return;
  }
  if (j.state == SlurmJobState::kRunning || j.state == SlurmJobState::kSuspended) {
    // Still running after the requeue we asked for (read before it reached Slurm, or Slurm has
    // not ended the run yet): it is being requeued.
    if (t.requeueing) return;
    t.released = 0;  // started where Phalanx said
    t.requeueing = false;
    t.nodes = j.nodes;
    t.gpus_by_node = j.gpus_by_node;
    t.batch_host = j.batch_host;
    return;
  }
  // Pending but still completing its last run (a requeue in progress): wait until Slurm is done.
  if (j.completing) return;
  // A requeue we asked for is done once Slurm has the job pending with its own begin time
  // (cred_expire; a release before it is known would start it too early: "Job credential
  // revoked", the job FAILED), or a few seconds after it was asked for.
  if (t.requeueing && j.wait != SlurmWait::kBeginTime && now - t.requeued_at < kRequeueSettleS) return;
  if (t.requeueing && j.wait == SlurmWait::kBeginTime && j.start > now) {
    t.not_before = std::max(t.not_before, j.start);
  } else if (t.requeueing && j.wait != SlurmWait::kBeginTime && cred_expire_ > 0) {
    // Slurm's begin time not seen: its own rule (the requeue's end + cred_expire + 1), counted
    // from this poll, which came after the end (the job is no longer completing).
    t.not_before = std::max(t.not_before, now + cred_expire_ + 1);
  }
  t.requeueing = false;
  // Pending. A requeued job waits for Slurm's own begin time (cred_expire): later than our lease.
  if (j.wait == SlurmWait::kBeginTime && j.start > t.lease + 1 && j.restarts > 0) t.not_before = j.start;
  if (t.submitting) return RenewLease(j.id, t, now);
  if (rec != nullptr && IsFinal(rec->state)) {
    // The core is done with this run (a start Slurm never carried out): a new core job.
    by_job_.erase(t.job);
    t.job = kNoJob;
    rec = nullptr;
  }
  if (rec == nullptr) {
    RenewLease(j.id, t, now);
    // The owner's own hold (sbatch -H, scontrol hold) or an admin's: not Phalanx's to start.
    if (j.wait == SlurmWait::kHeldUser || j.wait == SlurmWait::kHeldAdmin || j.priority == 0) return;
    return SubmitNew(j, o, t);
  }
  if (Active(rec)) {
    if (t.released == 0) return Release(j.id, t.job, t);  // adopted after a restart, or requeued
    if (now - t.released >= options_.start_timeout_s) {
      PHX_LOG(kWarn) << "slurm mode: job " << t.job << " (Slurm " << j.id << ") released " << (now - t.released)
                     << " s ago and still pending (" << j.reason << "); taken back";
      t.released = 0;
      t.lease = 0;
      const SlurmJobId sid = j.id;
      const Time until = now + options_.fallback_delay_s;
      OnWorker<Status>([sid, until](slurm::SlurmAdapter& a) { return a.Defer(sid, until, true); },
                       [this, sid, until](Status st) {
        if (auto it = tracked_.find(sid); st && it != tracked_.end()) it->second.lease = until;
      });
      host_->JobPartsEnded(
          t.job, false, -1,
          "Slurm did not start it within " + std::to_string(options_.start_timeout_s) + " s (" + j.reason + ")");
    }
    return;
  }
  // Pending in the core too: keep it ours; show why it waits.
  FollowPartition(j, t, *rec);
  RenewLease(j.id, t, now);
  if (options_.comments) {
    // The reason, and the predicted start to the minute: rewritten when the reason changes or
    // the prediction moves by a minute or more (one RPC each, not one per poll).
    const WaitReason& w = rec->wait;
    std::string c = "phalanx: " + std::string(WaitKindName(w.kind)) + (w.detail.empty() ? "" : "(" + w.detail + ")");
    const Time predicted = w.predicted_start == kForever ? 0 : w.predicted_start;
    const bool moved = predicted / 60 != t.predicted / 60;
    if (predicted > 0) c += " start~" + IsoMinute(predicted);
    if (c != t.comment && (moved || c.substr(0, c.find(" start~")) != t.comment.substr(0, t.comment.find(" start~")))) {
      // Taken as written; a failure is tried again at the next poll.
      const std::string before = t.comment;
      const Time predicted_before = t.predicted;
      t.comment = c;
      t.predicted = predicted;
      const SlurmJobId sid = j.id;
      OnWorker<Status>([sid, c](slurm::SlurmAdapter& a) { return a.SetComment(sid, c); },
                       [this, sid, c, before, predicted_before](Status st) {
        auto it = tracked_.find(sid);
        if (st || it == tracked_.end() || it->second.comment != c) return;
        it->second.comment = before;
        it->second.predicted = predicted_before;
      });
    }
  }
}

void SlurmExecutor::RenewLease(SlurmJobId sid, Tracked& t, Time now) {
  if (t.lease - now > options_.fallback_delay_s / 2 || t.renewing) return;
  const Time until = std::max(now + options_.fallback_delay_s, t.not_before);
  t.renewing = true;
  OnWorker<Status>([sid, until](slurm::SlurmAdapter& a) { return a.Defer(sid, until, false); },
                   [this, sid, until](Status st) {
    auto it = tracked_.find(sid);
    if (it != tracked_.end()) it->second.renewing = false;
    if (!st) {
      // Retried every poll: one line when it starts failing, one when it works again.
      if (lease_failing_.insert(sid).second)
        PHX_LOG(kWarn) << "slurm mode: job " << sid << ": lease not renewed: " << st.error().ToString();
      return;
    }
    if (lease_failing_.erase(sid) > 0) PHX_LOG(kInfo) << "slurm mode: job " << sid << ": lease renewed again";
    if (it != tracked_.end()) it->second.lease = std::max(it->second.lease, until);
  });
}

// Slurm's partitions as the core's: their nodes that the topology has (a partition of none of
// them, a CPU-only one, is left out: no managed job can run there), state, MaxTime, default.
void SlurmExecutor::SyncPartitions(const std::vector<slurm::SlurmPartition>& partitions) {
  if (partitions.empty() || partitions == partitions_) return;  // none: the config's stay
  partitions_ = partitions;
  const SchedulerConfig& config = host_->core().config();
  std::vector<PartitionConfig> out;
  std::string shown, skipped;
  for (const slurm::SlurmPartition& p : partitions) {
    PartitionConfig c;
    c.name = p.name;
    for (const std::string& n : p.nodes)
      if (topo_.find_node(n).valid()) c.nodes.push_back(n);
    if (c.nodes.empty()) {
      skipped += (skipped.empty() ? "" : ", ") + p.name;
      continue;
    }
    c.state = p.state == slurm::SlurmPartitionState::kUp      ? PartitionState::kUp
              : p.state == slurm::SlurmPartitionState::kDown  ? PartitionState::kDown
              : p.state == slurm::SlurmPartitionState::kDrain ? PartitionState::kDrain
                                                              : PartitionState::kInactive;
    c.max_walltime = p.max_time > 0 ? std::min(p.max_time, kUnlimitedWalltime) : kUnlimitedWalltime;
    // A job without --time gets the config's default walltime, at most the partition's MaxTime.
    c.default_walltime = std::min(config.default_walltime, c.max_walltime);
    c.is_default = p.is_default;
    shown += (shown.empty() ? "" : ", ") + c.name + "(" + std::string(PartitionStateName(c.state)) + ", " +
             std::to_string(c.nodes.size()) + " nodes)";
    out.push_back(std::move(c));
  }
  if (out.empty()) {
    PHX_LOG(kWarn) << "slurm mode: no Slurm partition has a node of the topology (" << skipped
                   << "); the configured partitions stay";
    return;
  }
  // Two Default=YES cannot happen in Slurm; a default left out (no GPU node): the first.
  if (std::count_if(out.begin(), out.end(), [](const PartitionConfig& c) { return c.is_default; }) > 1)
    for (PartitionConfig& c : out) c.is_default = false;
  if (Status st = host_->SetPartitions(std::move(out)); !st) {
    PHX_LOG(kError) << "slurm mode: Slurm's partitions: " << st.error().ToString();
    return;
  }
  PHX_LOG(kInfo) << "slurm mode: partitions from Slurm: " << shown
                 << (skipped.empty() ? "" : "; without a node of the topology: " + skipped);
}

std::vector<std::string> SlurmExecutor::JobPartitions(const SlurmJob& j) const {
  std::vector<std::string> out;
  if (partitions_.empty()) return out;
  const PartitionTable& table = host_->core().partitions();
  std::string_view rest = j.partition;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string name(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (!name.empty() && table.Find(name) && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

void SlurmExecutor::FollowPartition(const SlurmJob& j, Tracked& t, const JobRecord& rec) {
  if (!update_ || t.moving || t.job == kNoJob || rec.state != JobState::kPending) return;
  if (t.partition_known && j.partition == t.partition) return;
  std::vector<std::string> want = JobPartitions(j);
  if (want == rec.spec.partitions) {
    // As submitted (or, after a restart, as stored): nothing to move.
    t.partition = j.partition;
    t.partition_known = true;
    return;
  }
  t.moving = true;
  const SlurmJobId sid = j.id;
  const JobId job = t.job;
  const std::string from = rec.spec.partitions.empty() ? "(default)" : JoinedNames(rec.spec.partitions);
  const std::string to = want.empty() ? "(default)" : JoinedNames(want);
  Scheduler::JobUpdate u;
  u.partitions = std::move(want);
  // The answer may come at once (a refusal): taken on the io thread after this poll's round, when
  // nothing of it holds the job's Tracked any more.
  update_(job, std::move(u), [this, sid, job, from, to, slurm_list = j.partition](CallResult<void> r) {
    boost::asio::post(io_,
                      [this, alive = std::weak_ptr<int>(alive_), sid, job, from, to, slurm_list, r = std::move(r)] {
      if (!alive.expired() && !halted_) Moved(sid, job, from, to, slurm_list, r);
    });
  });
}

void SlurmExecutor::Moved(SlurmJobId sid, JobId job, const std::string& from, const std::string& to,
                          const std::string& slurm_list, const CallResult<void>& r) {
  auto it = tracked_.find(sid);
  if (it == tracked_.end() || it->second.job != job) return;
  Tracked& t = it->second;
  t.moving = false;
  if (!r && r.error().unavailable) return;  // phalanxd stopping, or its store full: tried again
  t.partition = slurm_list;
  t.partition_known = true;
  if (r) {
    PHX_LOG(kInfo) << "slurm mode: job " << job << " (Slurm " << sid << ") moved in Slurm (Partition=" << slurm_list
                   << "): partitions " << from << " -> " << to;
    return;
  }
  // The core refuses it there (a DRAIN partition, MaxTime, ...): Slurm's to schedule, as a
  // submission the core refused.
  PHX_LOG(kWarn) << "slurm mode: job " << job << " (Slurm " << sid << ") moved in Slurm (Partition=" << slurm_list
                 << "): " << r.error().error.ToString() << "; left to Slurm";
  refused_.insert(sid);
  if (cancel_) cancel_(job, "moved in Slurm to partitions the core refuses");
  Unlink(sid);
  if (options_.comments) {
    const std::string c = "phalanx: refused: " + r.error().error.message;
    Act("Slurm job " + std::to_string(sid) + ": comment",
        [sid, c](slurm::SlurmAdapter& a) { return a.SetComment(sid, c); });
  }
}

void SlurmExecutor::SubmitNew(const SlurmJob& j, const slurm::ManagedOptions& o, Tracked& t) {
  if (!submit_) return;
  uint32_t gid = 0;
  const std::string user = UserName(j, &gid);
  auto spec = slurm::ToJobSpec(j, o, user);
  if (!spec) {
    refused_.insert(j.id);
    PHX_LOG(kWarn) << "slurm mode: " << spec.error().ToString() << "; left to Slurm";
    return;
  }
  spec->partitions = JobPartitions(j);
  t.partition = j.partition;
  t.partition_known = true;
  LaunchInfo li;
  li.set_user(user);
  li.set_uid(j.uid);
  li.set_gid(gid);
  li.mutable_spec()->set_name(spec->name);
  li.mutable_spec()->set_checkpoint_signal(o.checkpoint_signal);
  li.mutable_spec()->set_checkpoint_warning_s(o.checkpoint_warning);
  (*li.mutable_spec()->mutable_env())[kSlurmJobEnv] = std::to_string(j.id);
  t.submitting = true;
  const SlurmJobId sid = j.id;
  submit_(std::move(*spec), std::move(li), [this, sid](CallResult<JobId> r) {
    auto it = tracked_.find(sid);
    if (!r) {
      PHX_LOG(kWarn) << "slurm mode: Slurm job " << sid << " refused: " << r.error().error.ToString()
                     << "; left to Slurm";
      refused_.insert(sid);
      if (it != tracked_.end()) it->second.submitting = false;
      if (options_.comments) {
        const std::string c = "phalanx: refused: " + r.error().error.message;
        Act("Slurm job " + std::to_string(sid) + ": comment",
            [sid, c](slurm::SlurmAdapter& a) { return a.SetComment(sid, c); });
      }
      return;
    }
    Link(sid, *r);
    PHX_LOG(kInfo) << "slurm mode: Slurm job " << sid << " is job " << *r;
  });
}

void SlurmExecutor::Release(SlurmJobId sid, JobId job, Tracked& t) {
  const JobRecord* rec = host_->core().job(job);
  if (!Active(rec)) return;
  // A requeue Slurm has not finished (the job still completing its last run): an update now can
  // spoil it (measured: the job ended FAILED); the poll that sees it pending again releases it.
  if (t.requeueing) return;
  const auto nodes = slurm::SlurmNodeList(topo_, rec->gpus);
  const Time now = host_->Now();
  const Time begin = std::max(now, t.not_before);
  const std::string comment = options_.comments ? "phalanx: placed on " + CompressHostlist(nodes) : "";
  // Released from now on (a poll whose snapshot predates the update does not release it twice);
  // undone when Slurm refuses.
  const Time lease_before = t.lease;
  t.released = now;
  t.lease = begin;
  t.comment = comment;
  OnWorker<Status>(
      [sid, nodes, begin, comment](slurm::SlurmAdapter& a) { return a.StartOn(sid, nodes, begin, comment); },
      [this, sid, job, nodes, begin, now, lease_before](Status st) {
    if (st) {
      PHX_LOG(kInfo) << "slurm mode: job " << job << " (Slurm " << sid << ") released on " << CompressHostlist(nodes)
                     << (begin > now ? " from " + std::to_string(begin) + " (requeue delay)" : "");
      return;
    }
    PHX_LOG(kWarn) << "slurm mode: job " << job << " (Slurm " << sid << "): " << st.error().ToString();
    if (auto it = tracked_.find(sid); it != tracked_.end() && it->second.job == job && it->second.released == now) {
      it->second.released = 0;
      it->second.lease = lease_before;
      it->second.comment.clear();
    }
    if (st.error().code == ErrorCode::kNotFound || st.error().code == ErrorCode::kFailedPrecondition) {
      const JobRecord* rec = host_ != nullptr ? host_->core().job(job) : nullptr;
      if (Active(rec)) host_->JobPartsEnded(job, false, -1, "Slurm refused the start: " + st.error().message);
    }
      });
}

void SlurmExecutor::ReportLater(JobId job, bool success, int32_t exit_code, std::string reason) {
  boost::asio::post(io_, [this, job, success, exit_code, reason = std::move(reason)] {
    if (!stopped_ && host_ != nullptr) host_->JobPartsEnded(job, success, exit_code, reason);
  });
}

void SlurmExecutor::StartJob(JobId job, const std::vector<GpuId>&, uint64_t) {
  auto it = by_job_.find(job);
  if (it == by_job_.end()) return ReportLater(job, false, -1, "no Slurm job for it");
  Release(it->second, job, tracked_[it->second]);
}

std::vector<std::string> SlurmExecutor::ShrinkInPlace(const Tracked& t, const std::vector<GpuId>& gpus) const {
  if (t.nodes.empty() || t.gpus_by_node.size() != t.nodes.size() || gpus.empty()) return {};
  std::map<std::string, uint32_t> keep;  // node -> the core's GPUs there
  for (GpuId g : gpus) ++keep[topo_.domain(topo_.node_domain(topo_.node_of(g))).name];
  std::vector<std::string> nodes;
  for (size_t k = 0; k < t.nodes.size(); ++k) {
    auto it = keep.find(t.nodes[k]);
    if (it == keep.end()) continue;
    if (it->second != t.gpus_by_node[k]) return {};  // part of a node: Slurm cannot express it
    nodes.push_back(t.nodes[k]);
  }
  if (nodes.size() != keep.size() || nodes.size() == t.nodes.size()) return {};  // new nodes, or no shrink
  if (!t.batch_host.empty() && std::find(nodes.begin(), nodes.end(), t.batch_host) == nodes.end()) return {};
  return nodes;
}

void SlurmExecutor::RestartJob(JobId job, const std::vector<GpuId>& gpus, uint64_t) {
  auto it = by_job_.find(job);
  if (it == by_job_.end()) return ReportLater(job, false, -1, "no Slurm job for it");
  Tracked& t = tracked_[it->second];
  // A shrink to whole nodes it has (and its batch host): Slurm cuts the running job's node list;
  // the job goes on there (it checkpointed before; its steps on the other nodes are killed).
  const SlurmJobId sid = it->second;
  if (const auto nodes = ShrinkInPlace(t, gpus); !nodes.empty()) {
    t.nodes = nodes;
    t.gpus_by_node.clear();  // the next poll reads them again
    OnWorker<Status>([sid, nodes](slurm::SlurmAdapter& a) { return a.ShrinkTo(sid, nodes); },
                     [this, sid, job, nodes](Status st) {
      if (st) {
        PHX_LOG(kInfo) << "slurm mode: job " << job << " (Slurm " << sid << ") shrunk in place to "
                       << CompressHostlist(nodes);
        return;
      }
      PHX_LOG(kWarn) << "slurm mode: shrink of job " << job << " in place: " << st.error().ToString()
                     << "; requeued instead";
      if (by_job_.contains(job)) RequeueForResize(job, sid);
    });
    return;
  }
  // Else (a grow, part of a node, new nodes): Slurm 22.05 cannot grow a running job; requeue it
  // and start it again on the GPUs the core gives it (the next poll releases it, after Slurm's
  // requeue delay).
  RequeueForResize(job, sid);
}

void SlurmExecutor::RequeueForResize(JobId job, SlurmJobId sid) {
  Tracked& t = tracked_[sid];
  t.released = 0;
  t.requeueing = true;
  OnWorker<Status>([sid](slurm::SlurmAdapter& a) { return a.Requeue(sid); },
                   [this, sid, job](Status st) {
    if (st) return;
    PHX_LOG(kWarn) << "slurm mode: resize of job " << job << ": " << st.error().ToString();
    if (auto it = tracked_.find(sid); it != tracked_.end()) it->second.requeueing = false;
  });
  t.requeued_at = host_->Now();
}

void SlurmExecutor::StopJob(JobId job, const std::string& reason) {
  auto it = by_job_.find(job);
  if (it == by_job_.end()) return;
  const SlurmJobId sid = it->second;
  const JobRecord* rec = host_->core().job(job);
  Tracked& t = tracked_[sid];
  if (rec != nullptr && rec->state == JobState::kPending) {
    // Preempted: the core requeued it; so does Slurm (the job restarts after cred_expire).
    PHX_LOG(kInfo) << "slurm mode: requeue Slurm job " << sid << " (" << reason << ")";
    const Time until = host_->Now() + options_.fallback_delay_s;
    // Requeue, else keep it from Slurm's own scheduling (lease, node list cleared): 0 requeued,
    // 1 deferred instead, 2 neither.
    OnWorker<int>(
        [sid, until](slurm::SlurmAdapter& a) {
      auto st = a.Requeue(sid);
      if (st) return 0;
      PHX_LOG(kWarn) << "slurm mode: requeue of Slurm job " << sid << ": " << st.error().ToString();
      return a.Defer(sid, until, true) ? 1 : 2;
        },
        [this, sid, until](int outcome) {
      auto it = tracked_.find(sid);
      if (it == tracked_.end() || outcome == 0) return;
      it->second.requeueing = false;  // not requeued: what Slurm shows next is what is
      if (outcome == 1) it->second.lease = until;
    });
    t.released = 0;
    t.requeueing = true;
    t.requeued_at = host_->Now();
    return;
  }
  PHX_LOG(kInfo) << "slurm mode: cancel Slurm job " << sid << " (" << reason << ")";
  Act("job " + std::to_string(job), [sid](slurm::SlurmAdapter& a) { return a.Cancel(sid); });
}

void SlurmExecutor::SignalJob(JobId job, int32_t signal, std::optional<Time>) {
  auto it = by_job_.find(job);
  if (it == by_job_.end()) return;
  const SlurmJobId sid = it->second;
  Act("job " + std::to_string(job), [sid, signal](slurm::SlurmAdapter& a) { return a.Signal(sid, signal, true); });
}

NodeReport SlurmExecutor::node(const std::string& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? NodeReport{} : it->second;
}

size_t SlurmExecutor::connected_nodes() const {
  return static_cast<size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const auto& n) { return n.second.connected; }));
}

}  // namespace phalanx::service
