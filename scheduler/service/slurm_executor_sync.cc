// SlurmExecutor, its poll's side: Slurm's nodes, partitions and jobs taken into the core (node
// states, partitions, outside load, Slurm's own jobs for users, managed jobs submitted, followed
// and their leases renewed). Acting on the core's decisions is in slurm_executor.cc.
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstdint>

#include "service/slurm_executor.h"
#include "service/slurm_executor_internal.h"
#include "util/hostlist.h"
#include "util/log.h"
#include "util/numbers.h"

namespace phalanx::service {

using namespace slurm_executor_internal;  // NOLINT(google-build-using-namespace): this class's own helpers

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
    if (running && !HoldsGpus(rec)) {
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
    if (HoldsGpus(rec)) host_->JobPartsEnded(job, false, -1, "Slurm job " + std::to_string(sid) + " is gone");
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
    if (HoldsGpus(rec)) {
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
  if (HoldsGpus(rec)) {
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
    c = SlurmComment(c);
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
    const std::string c = SlurmComment("phalanx: refused: " + r.error().error.message);
    Act("Slurm job " + std::to_string(sid) + ": comment",
        [sid, c](slurm::SlurmAdapter& a) { return a.SetComment(sid, c); });
  }
}

}  // namespace phalanx::service
