#include "service/slurm_executor.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstdint>
#include <ctime>

#include "service/slurm_executor_internal.h"
#include "util/hostlist.h"
#include "util/log.h"
#include "util/numbers.h"

namespace phalanx::service {

using namespace slurm_executor_internal;  // NOLINT(google-build-using-namespace): this class's own helpers

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
// The answers slurm_executor_sync.cc waits for (it sees only the declaration).
template void SlurmExecutor::OnWorker<Status>(std::function<Status(slurm::SlurmAdapter&)>, std::function<void(Status)>);
template void SlurmExecutor::OnWorker<Result<SlurmJob>>(std::function<Result<SlurmJob>(slurm::SlurmAdapter&)>,
                                                        std::function<void(Result<SlurmJob>)>);

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
        const std::string c = SlurmComment("phalanx: refused: " + r.error().error.message);
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
  if (!HoldsGpus(rec)) return;
  // A requeue Slurm has not finished (the job still completing its last run): an update now can
  // spoil it (measured: the job ended FAILED); the poll that sees it pending again releases it.
  if (t.requeueing) return;
  const auto nodes = slurm::SlurmNodeList(topo_, rec->gpus);
  const Time now = host_->Now();
  const Time begin = std::max(now, t.not_before);
  const std::string comment = options_.comments ? SlurmComment("phalanx: placed on " + CompressHostlist(nodes)) : "";
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
      if (HoldsGpus(rec)) host_->JobPartsEnded(job, false, -1, "Slurm refused the start: " + st.error().message);
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
