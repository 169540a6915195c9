// Scheduler: the scheduling pass (queue order, start, backfill reservations, preemption,
// elastic growth) and the what-if machinery it uses.
#include <algorithm>
#include <bit>
#include <map>

#include "core/placement/simple_placers.h"
#include "core/sched/scheduler.h"
#include "core/sched/what_if.h"

namespace phalanx {

namespace {

uint32_t MinSize(const std::vector<uint32_t>& sizes) { return sizes.empty() ? 0 : sizes.back(); }

}  // namespace

// ---- sizes, shapes, placement ------------------------------------------------------------

std::vector<uint32_t> Scheduler::LegalSizes(const JobRecord& job) const {
  const JobSpec& s = job.spec;
  if (!config_.elastic || !s.elastic()) return {s.shape.gpus};
  std::vector<uint32_t> out;
  // Sizes above the cluster can never run: start from the cluster's size (a maximum of 2^32 must
  // not cost 2^32 steps per pass).
  const uint32_t top = std::min<uint32_t>(s.shape.gpus, static_cast<uint32_t>(topo_->gpu_count()));
  for (uint32_t g = top; g >= s.min_gpus && g >= 1; --g) {
    const bool ok = s.step_kind == ElasticStep::kAny || (s.step_kind == ElasticStep::kMultiple && g % s.step == 0) ||
                    (s.step_kind == ElasticStep::kPowerOfTwo && std::has_single_bit(g));
    if (ok) out.push_back(g);
  }
  if (out.empty()) out.push_back(s.shape.gpus);  // no legal size in range: run at the maximum
  return out;
}

uint32_t Scheduler::MinLegalSize(const JobRecord& job) const {
  // LegalSizes(job).back() without building the list (called for every pending job in a pass).
  const JobSpec& s = job.spec;
  if (!config_.elastic || !s.elastic()) return s.shape.gpus;
  const uint32_t top = std::min<uint32_t>(s.shape.gpus, static_cast<uint32_t>(topo_->gpu_count()));
  for (uint32_t g = std::max<uint32_t>(s.min_gpus, 1); g <= top; ++g) {
    const bool ok = s.step_kind == ElasticStep::kAny || (s.step_kind == ElasticStep::kMultiple && g % s.step == 0) ||
                    (s.step_kind == ElasticStep::kPowerOfTwo && std::has_single_bit(g));
    if (ok) return g;
  }
  return s.shape.gpus;
}

PlacementRequest Scheduler::ShapeFor(const JobRecord& job, uint32_t gpus) const {
  PlacementRequest r = job.spec.shape;
  if (r.nodes == 0) r.gpus = gpus;
  return r;
}

std::optional<Placement> Scheduler::PlaceNow(const PlacementRequest& request) const {
  PlaceOutcome out;
  switch (config_.placement) {
    case PlacementMode::kTopology: out = placer_->Place(request); break;
    case PlacementMode::kNodeBestFit: out = PlaceNodeBestFit(*topo_, placer_->model(), *placer_, request); break;
    case PlacementMode::kFirstFit: out = PlaceFirstFit(*topo_, placer_->model(), *placer_, request); break;
  }
  if (out.status != PlaceStatus::kPlaced) return std::nullopt;
  return std::move(out.placement);
}

Duration Scheduler::RemainingWalltime(const JobRecord& job) const { return std::max<Duration>(1, job.walltime - job.progress); }

Time Scheduler::ReleaseTime(const JobRecord& r) const {
  Time t = r.expected_end();
  if (r.state == JobState::kCheckpointing && r.after_checkpoint == JobRecord::After::kPreempt) t = std::min(t, r.checkpoint_deadline);
  return std::max(t, now_);
}

Scheduler::~Scheduler() = default;

void Scheduler::ClearStartBlocks() {
  if (start_blocks_) start_blocks_->Unblock();
  blocks_applied_ = 0;
}

void Scheduler::SetStartBlocks(Time end, JobId except) {
  if (!start_blocks_) start_blocks_ = std::make_unique<WhatIf>(*topo_);
  bool own = false;
  for (const Reservation& r : reservations_) own = own || r.job == except;
  if (res_order_dirty_ || own) {
    ClearStartBlocks();
    res_order_.resize(reservations_.size());
    for (size_t i = 0; i < res_order_.size(); ++i) res_order_[i] = i;
    std::stable_sort(res_order_.begin(), res_order_.end(),
                     [&](size_t a, size_t b) { return reservations_[a].start < reservations_[b].start; });
    res_order_dirty_ = false;
  }
  if (own) {
    // A preemptor must not be blocked by its own claim: block the others one by one.
    for (size_t i : res_order_) {
      if (reservations_[i].start < end && reservations_[i].job != except) start_blocks_->Block(reservations_[i].gpus);
    }
    res_order_dirty_ = true;  // the stack no longer matches a prefix
    blocks_applied_ = 0;
    return;
  }
  const size_t want = static_cast<size_t>(
      std::partition_point(res_order_.begin(), res_order_.end(), [&](size_t i) { return reservations_[i].start < end; }) -
      res_order_.begin());
  while (blocks_applied_ > want) {
    start_blocks_->PopBlock();
    --blocks_applied_;
  }
  while (blocks_applied_ < want) start_blocks_->Block(reservations_[res_order_[blocks_applied_++]].gpus);
}

const std::vector<std::pair<Time, JobId>>& Scheduler::Ends() {
  if (ends_dirty_) {
    ends_.clear();
    for (JobId id : active_) ends_.push_back({ReleaseTime(jobs_.at(id)), id});
    std::sort(ends_.begin(), ends_.end());
    ends_dirty_ = false;
  }
  return ends_;
}

std::optional<Placement> Scheduler::TryStartNow(const JobRecord& job, Time now) {
  SetStartBlocks(now + RemainingWalltime(job), job.spec.id);
  const std::vector<uint32_t> sizes = LegalSizes(job);  // largest first
  const uint32_t min = sizes.back();
  // The block promised to this job in the previous pass, when it is all still free: starting
  // there keeps the promises made to the jobs after it.
  if (auto it = promised_.find(job.spec.id); it != promised_.end() && !job.spec.shape.exclusive && it->second.size() == min &&
                                             std::all_of(it->second.begin(), it->second.end(), [&](GpuId g) { return topo_->is_free(g); })) {
    Placement p;
    p.gpus = it->second;
    p.prediction = placer_->model().Predict(p.gpus);
    if (p.prediction.busbw_gbs > 0 || p.gpus.size() == 1) return p;
  }
  auto smallest = PlaceNow(ShapeFor(job, min));
  if (!smallest || sizes.size() == 1) return smallest;
  // Larger elastic sizes are opportunistic: they may not take blocks promised to other jobs.
  // Feasibility is monotone in size, so binary search the sizes above the minimum.
  WhatIf promised(*topo_);
  for (const auto& [other, gpus] : promised_) {
    if (other != job.spec.id) promised.Block(gpus);
  }
  std::optional<Placement> best;
  size_t lo = 0, hi = sizes.size() - 1;  // candidates sizes[lo..hi), descending
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (auto p = PlaceNow(ShapeFor(job, sizes[mid]))) {
      best = std::move(p);
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return best ? best : smallest;
}

DomainPlanner* Scheduler::Plan(Time now) {
  if (plan_built_) return plan_ ? &*plan_ : nullptr;
  plan_built_ = true;
  plan_.emplace(*topo_, now);
  auto fail = [&]() -> DomainPlanner* {
    plan_.reset();
    return nullptr;
  };
  std::vector<GpuId> up, down;
  for (JobId id : active_) {
    const JobRecord& j = jobs_.at(id);
    up.clear();
    down.clear();
    for (GpuId g : j.gpus) (topo_->node_state(topo_->node_of(g)) == NodeState::kUp ? up : down).push_back(g);
    const Time end = ReleaseTime(j);
    if (!up.empty() && end > now && !plan_->AddAllocation(up, now, end)) return fail();
    if (!down.empty() && !plan_->AddAllocation(down, now, kForever)) return fail();
  }
  std::vector<GpuId> unavailable;
  for (uint32_t g = 0; g < topo_->gpu_count(); ++g) {
    if (topo_->owner(GpuId(g)) == kNoJob && !topo_->is_free(GpuId(g))) unavailable.push_back(GpuId(g));
  }
  if (!unavailable.empty() && !plan_->AddAllocation(unavailable, now, kForever)) return fail();
  for (const Reservation& r : reservations_) {
    // Preemption claims overlap their victims' running allocations; leaving them out keeps
    // the plan optimistic, which is all a filter needs.
    if (!r.for_preemption && !plan_->AddAllocation(r.gpus, r.start, r.end)) return fail();
  }
  return &*plan_;
}

std::optional<Reservation> Scheduler::Reserve(const JobRecord& job, Time now) {
  const Duration w = RemainingWalltime(job);
  const uint32_t n = MinLegalSize(job);
  const PlacementRequest request = ShapeFor(job, n);
  // No reservation can exist when the nodes that take new work cannot hold the job, even empty
  // (e.g. right after a daemon restart, while every node waits for its agent): walking every
  // release time would find nothing, at great cost. Node states do not change during a pass.
  if (!up_gpus_) {
    uint32_t usable = 0;
    for (uint32_t i = 0; i < topo_->node_count(); ++i) {
      if (topo_->node_state(NodeId(i)) == NodeState::kUp) usable += topo_->node_gpu_count(NodeId(i));
    }
    up_gpus_ = usable;
  }
  if (*up_gpus_ < n) return std::nullopt;
  ClearStartBlocks();
  const std::vector<std::pair<Time, JobId>> ends = Ends();
  std::vector<Time> times{now};
  for (const auto& e : ends) times.push_back(e.first);
  for (const Reservation& r : reservations_) {
    times.push_back(r.start);
    times.push_back(r.end);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());

  // The planner tells, from GPU counts alone, the earliest time some domain the job may live in
  // has n GPUs free for its whole walltime: a necessary condition, so every time it skips would
  // have failed. Each candidate is then checked with the Placer on the what-if state at t.
  // (Only multi-node jobs ask it: for a job that fits one node, counts almost never decide.)
  DomainPlanner* plan = n > topo_->max_gpus_per_node() ? Plan(now) : nullptr;
  // (Groups are not planned: a job that must fit in a group must fit in its node.)
  const Level max_level = request.fit == FitMode::kRequire ? std::max(request.level, Level::kNode) : Level::kCore;
  WhatIf what_if(*topo_);
  // Blocks kept incrementally as t advances: an overlapping reservation holds whichever of its
  // GPUs are free (more become free as jobs are released); blocks promised in the last pass to
  // jobs not re-planned yet are held the same way. Declared after `what_if`: undone first.
  struct Held {
    Topology& t;
    std::vector<std::vector<GpuId>> sets;
    ~Held() {
      for (auto& v : sets) (void)t.Unhold(v);
    }
    void Add(size_t i, const std::vector<GpuId>& gpus) {
      std::vector<GpuId> add;
      for (GpuId g : gpus) {
        if (t.is_free(g)) add.push_back(g);
      }
      if (!add.empty() && t.Hold(add)) sets[i].insert(sets[i].end(), add.begin(), add.end());
    }
    void Drop(size_t i) {
      (void)t.Unhold(sets[i]);
      sets[i].clear();
    }
  } held{*topo_, std::vector<std::vector<GpuId>>(reservations_.size() + 1)};
  const size_t kPromised = reservations_.size();
  size_t next = 0;
  for (size_t ti = 0; ti < times.size(); ++ti) {
    Time t = times[ti];
    if (t < now) continue;
    if (plan) {
      const auto c = plan->EarliestBlock(max_level, n, w, t, Level::kNode);
      if (!c) return std::nullopt;
      if (c->first > t) {
        ti = static_cast<size_t>(std::lower_bound(times.begin(), times.end(), c->first) - times.begin());
        if (ti == times.size()) return std::nullopt;
        t = times[ti];
      }
    }
    while (next < ends.size() && ends[next].first <= t) what_if.ReleaseJob(ends[next++].second);
    // Drops first: two reservations may share GPUs at different times, and a GPU one of them
    // lets go of may be the other's to hold.
    held.Drop(kPromised);
    auto overlaps = [&](const Reservation& r) { return r.start < t + w && r.end > t; };
    for (size_t i = 0; i < kPromised; ++i) {
      if (!overlaps(reservations_[i]) && !held.sets[i].empty()) held.Drop(i);
    }
    for (size_t i = 0; i < kPromised; ++i) {
      if (overlaps(reservations_[i])) held.Add(i, reservations_[i].gpus);
    }
    if (topo_->free_gpus(topo_->root()) < n) continue;
    // Stability keeps conservative backfill's promises: the job's own block from the last pass
    // if it is free at t; else a block that avoids those promised to jobs not re-planned yet;
    // else any block.
    std::optional<Placement> p;
    if (auto own = promised_.find(job.spec.id); own != promised_.end() && !request.exclusive && own->second.size() == n &&
                                                std::all_of(own->second.begin(), own->second.end(), [&](GpuId g) { return topo_->is_free(g); })) {
      p = Placement{own->second, {}, placer_->model().Predict(own->second)};
    }
    if (!p) {
      for (const auto& [other, gpus] : promised_) {
        if (other != job.spec.id && !planned_.contains(other)) held.Add(kPromised, gpus);
      }
      p = PlaceNow(request);
    }
    if (!p && !held.sets[kPromised].empty()) {
      held.Drop(kPromised);
      p = PlaceNow(request);
    }
    if (!p) continue;
    Reservation res{job.spec.id, t, t + w, p->gpus};
    res.gpus.insert(res.gpus.end(), p->held.begin(), p->held.end());
    if (config_.whole_node_reservations) {
      // Slurm reserves whole nodes.
      std::vector<GpuId> whole;
      for (GpuId g : res.gpus) {
        const Domain& node = topo_->domain(topo_->node_domain(topo_->node_of(g)));
        for (uint32_t i = node.first_gpu; i < node.first_gpu + node.gpu_count; ++i) whole.push_back(GpuId(i));
      }
      std::sort(whole.begin(), whole.end());
      whole.erase(std::unique(whole.begin(), whole.end()), whole.end());
      res.gpus = std::move(whole);
    }
    std::sort(res.gpus.begin(), res.gpus.end());
    return res;
  }
  return std::nullopt;
}

// ---- the pass ----------------------------------------------------------------------------

std::vector<Decision> Scheduler::Schedule(Time now) {
  now = std::max(now, now_);
  now_ = now;
  // Decisions made by events since the last pass, unless a later event made them moot (a job
  // resized by a node failure that then ended; a requeued job that was then cancelled).
  std::vector<Decision> out;
  for (Decision& d : outbox_) {
    const JobRecord* j = job(d.job);
    if (!j) continue;
    if (d.kind == DecisionKind::kResize && j->state != JobState::kRunning && j->state != JobState::kCheckpointing) continue;
    if (d.kind == DecisionKind::kPreempt && IsFinal(j->state)) continue;
    out.push_back(std::move(d));
  }
  outbox_.clear();
  ChargeUsage(now);
  Timers(now, out);
  promised_.clear();
  for (Reservation& r : reservations_) {
    if (!r.for_preemption) promised_[r.job] = std::move(r.gpus);
  }
  reservations_.clear();
  failed_shapes_.clear();
  plan_.reset();
  plan_built_ = false;
  ClearStartBlocks();
  res_order_dirty_ = true;
  ends_dirty_ = true;
  victim_cache_.clear();
  failed_preempts_.clear();
  up_gpus_.reset();
  blocked_ = false;
  first_blocked_ = kNoJob;
  // One walk over the pending jobs, in id order, touching each record once (tens of thousands
  // of records do not stay in cache from one walk to the next): claims become reservations and
  // priorities are computed; then the queue is sorted on the keys.
  queue_keys_.clear();
  const uint32_t cluster = static_cast<uint32_t>(topo_->gpu_count());
  std::map<std::pair<std::string_view, std::string_view>, double> fairshare;  // a user's factor, once per pass
  for (const auto& [id, jp] : pending_.Walk()) {
    JobRecord& j = *jp;
    // GPUs freed by victims, and those their victims still hold, stay with the preemptor.
    if (!j.claim.empty() || !j.victims.empty()) {
      std::erase_if(j.claim, [&](GpuId g) { return topo_->owner(g) != kNoJob; });
      std::vector<GpuId> gpus = j.claim;
      for (JobId v : j.victims) {
        const JobRecord& vj = jobs_.at(v);
        if (vj.after_checkpoint == JobRecord::After::kShrink) {
          std::set_difference(vj.gpus.begin(), vj.gpus.end(), vj.shrink_to.begin(), vj.shrink_to.end(), std::back_inserter(gpus));
        } else {
          gpus.insert(gpus.end(), vj.gpus.begin(), vj.gpus.end());
        }
      }
      if (!gpus.empty()) {
        std::sort(gpus.begin(), gpus.end());
        if (j.victims.empty()) gpus = TrimClaim(j, std::move(gpus));
        reservations_.push_back({id, now, now + RemainingWalltime(j), std::move(gpus), true});
      }
    }
    if (config_.order == QueueOrder::kFifo) {
      j.priority = 0;
    } else {
      PriorityInputs in;
      in.class_factor = classes_.class_factor(PriorityClassId(static_cast<uint32_t>(j.class_rank)));
      in.submit = j.spec.submit;
      in.gpus = j.spec.shape.gpus;
      in.cluster_gpus = cluster;
      auto [f, added] = fairshare.try_emplace({j.spec.user, j.spec.account}, 0.0);
      if (added) f->second = fairshare_.UserFactor(j.spec.user, j.spec.account, now);
      in.fairshare_factor = f->second;
      j.priority = JobPriority(in, config_.weights, now);
    }
    queue_keys_.push_back({j.priority, j.spec.submit, id, &j});
  }
  OrderQueue();
  planned_.clear();
  // A job's Wait is final once it was scheduled (later jobs change only themselves and running
  // jobs); the Waits go after every other decision, in queue order.
  waits_.clear();
  for (JobRecord* jp : queue_jobs_) {
    JobRecord& job = *jp;
    if (job.state == JobState::kPending) ScheduleJob(job, now, out);
    // Reserve asks only about jobs promised a block in the last pass.
    if (promised_.contains(job.spec.id)) planned_.insert(job.spec.id);
    if (job.state != JobState::kPending || !config_.wait_decisions) continue;
    Decision& d = waits_.emplace_back();
    d.kind = DecisionKind::kWait;
    d.job = job.spec.id;
    d.at = now;
    d.wait = job.wait;
  }
  ClearStartBlocks();
  GrowElastic(now, out);
  out.reserve(out.size() + waits_.size());
  std::move(waits_.begin(), waits_.end(), std::back_inserter(out));
  waits_.clear();
  return out;
}

void Scheduler::ChargeUsage(Time now) {
  // Running jobs are charged every charge_period (Slurm's PriorityCalcPeriod); a job that ends is
  // charged to its end exactly (StopJob). Keeps the pass from walking every running job.
  if (last_charge_ != 0 && now - last_charge_ < config_.charge_period) return;
  last_charge_ = now;
  for (JobId id : active_) {
    const JobRecord& j = jobs_.at(id);
    Time& since = charged_until_[id];
    if (now > since) {
      (void)fairshare_.Charge(j.spec.user, j.spec.account, static_cast<double>(now - since) * static_cast<double>(j.gpus.size()), now);
      since = now;
    }
  }
}

Time Scheduler::NextTimer(const JobRecord& job) const {
  Time t = job.expected_end();
  if (job.state == JobState::kCheckpointing) t = std::min(t, job.checkpoint_deadline);
  const Duration interval = job.spec.checkpoint_interval > 0 ? job.spec.checkpoint_interval : config_.periodic_checkpoint;
  if (job.state == JobState::kRunning && interval > 0) t = std::min(t, std::max(job.last_checkpoint, job.last_checkpoint_request) + interval);
  return t;
}

void Scheduler::Timers(Time now, std::vector<Decision>& out) {
  // next_timer_ is a lower bound on every active job's next walltime, checkpoint deadline or
  // periodic checkpoint (NoteTimer lowers it whenever a job gets an earlier one): until then
  // there is nothing to do.
  if (now < next_timer_) return;
  next_timer_ = kForever;
  const std::vector<JobId> active(active_.begin(), active_.end());
  for (JobId id : active) {
    JobRecord& job = jobs_.at(id);
    struct Note {
      Scheduler* s;
      const JobRecord& j;
      ~Note() {
        if (!IsFinal(j.state) && j.state != JobState::kPending) s->NoteTimer(s->NextTimer(j));
      }
    } note{this, job};
    if (now >= job.expected_end()) {
      StopJob(job, now);
      job.state = JobState::kKilled;
      job.end = now;
      Decision d;
      d.kind = DecisionKind::kKill;
      d.job = id;
      d.at = now;
      d.reason = "walltime of " + std::to_string(job.run_walltime) + "s exceeded";
      out.push_back(std::move(d));
      continue;
    }
    if (job.state == JobState::kCheckpointing && now >= job.checkpoint_deadline) {
      // No checkpoint in time: the work since the last one is lost.
      if (job.after_checkpoint == JobRecord::After::kPreempt) {
        Requeue(job, now, "checkpoint deadline passed; preempted for job " + std::to_string(job.preempted_for), out);
      } else if (job.after_checkpoint == JobRecord::After::kShrink) {
        job.gpu_seconds_lost += static_cast<double>(job.gpus.size()) * static_cast<double>(now - job.last_checkpoint);
        job.last_checkpoint = now;
        FinishShrink(job, now, out);
      } else {
        job.state = JobState::kRunning;
      }
      continue;
    }
    const Duration interval = job.spec.checkpoint_interval > 0 ? job.spec.checkpoint_interval : config_.periodic_checkpoint;
    if (job.state == JobState::kRunning && interval > 0 && now - std::max(job.last_checkpoint, job.last_checkpoint_request) >= interval) {
      job.last_checkpoint_request = now;
      Decision d;
      d.kind = DecisionKind::kCheckpoint;
      d.job = id;
      d.at = now;
      d.deadline = now + CheckpointGrace(job);
      d.reason = "periodic";
      out.push_back(std::move(d));
    }
  }
}

void Scheduler::OrderQueue() {
  // Sorts keys, not ids: comparing ids looked both jobs up in jobs_ (every job ever known),
  // O(n log n) lookups, most of a pass with tens of thousands of pending jobs. The order is
  // the same: priority, then submit time, then id (a total order, so the sort is unique).
  std::sort(queue_keys_.begin(), queue_keys_.end(), [](const QueueKey& a, const QueueKey& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.submit != b.submit) return a.submit < b.submit;
    return a.id < b.id;
  });
  queue_.clear();
  queue_jobs_.clear();
  for (const QueueKey& k : queue_keys_) {
    queue_.push_back(k.id);
    queue_jobs_.push_back(k.job);
  }
}

void Scheduler::ScheduleJob(JobRecord& job, Time now, std::vector<Decision>& out) {
  const JobId id = job.spec.id;
  job.wait = {};
  auto wait = [&](WaitKind kind, std::string detail = {}, Time start = kForever) {
    job.wait = WaitReason{kind, std::move(detail), start};
  };
  if (job.spec.held) return wait(WaitKind::kHeld);
  for (JobId dep : job.spec.after_ok) {
    const JobRecord& d = jobs_.at(dep);
    if (d.state == JobState::kFailed || d.state == JobState::kCancelled || d.state == JobState::kKilled) {
      (void)limits_.RemovePending(job.spec.user, job.spec.account);
      pending_.Erase(id);
      job.state = JobState::kKilled;
      job.end = now;
      Decision k;
      k.kind = DecisionKind::kKill;
      k.job = id;
      k.at = now;
      k.reason = "dependency: job " + std::to_string(dep) + " " + std::string(JobStateName(d.state));
      out.push_back(std::move(k));
      return;
    }
    if (d.state != JobState::kCompleted) return wait(WaitKind::kDependency, "afterok:" + std::to_string(dep));
  }
  const uint32_t n = MinLegalSize(job);
  if (std::string why = placer_->Unsatisfiable(ShapeFor(job, n)); !why.empty()) return wait(WaitKind::kUnsatisfiable, why);
  if (auto why = limits_.CheckStart(job.spec.user, job.spec.account, n)) {
    const size_t colon = why->find(": ");
    return wait(why->rfind("Account", 0) == 0 ? WaitKind::kAccountLimit : WaitKind::kUserLimit,
                colon == std::string::npos ? *why : why->substr(colon + 2));
  }
  // A preemptor's own claim is a reservation of its own: it is not blocked by it, so neither the
  // strict order nor another job's failure says anything about it.
  const bool own = std::any_of(reservations_.begin(), reservations_.end(), [&](const Reservation& r) { return r.job == id; });
  if (config_.backfill == BackfillMode::kNone && blocked_ && !own) {
    return wait(WaitKind::kPriority, "behind job " + std::to_string(first_blocked_));
  }

  // Start now, unless a job of the same shape class that was no bigger and no longer failed.
  const ShapeKey key{job.spec.shape.level, job.spec.shape.fit, job.spec.shape.exclusive, job.spec.shape.rail_aligned,
                     job.spec.shape.gpus_per_node};
  const Duration w = RemainingWalltime(job);
  bool dominated = false;
  for (const auto& f : failed_shapes_) {
    if (!own && f.key == key && f.gpus <= n && f.walltime <= w) {
      dominated = true;
      break;
    }
  }
  if (!dominated) {
    if (auto p = TryStartNow(job, now)) {
      StartJob(job, *p, now, out);
      return;
    }
    if (!own) failed_shapes_.push_back({key, n, w});
  }
  if (!blocked_) first_blocked_ = id;
  blocked_ = true;
  blocked_since_ = now;

  if (!job.victims.empty()) return wait(WaitKind::kPreempting, std::to_string(job.victims.size()) + " jobs checkpointing");
  if (TryPreempt(job, now, out)) return wait(WaitKind::kPreempting, std::to_string(job.victims.size()) + " jobs checkpointing");

  size_t made = 0;
  for (const Reservation& r : reservations_) made += !r.for_preemption;
  const size_t depth = config_.backfill == BackfillMode::kEasy           ? 1
                       : config_.backfill == BackfillMode::kConservative ? (config_.reserve_depth == 0 ? SIZE_MAX : config_.reserve_depth)
                                                                         : 0;
  const size_t blocked = start_blocks_ ? start_blocks_->blocked_gpus() : 0;
  WaitKind kind = topo_->free_gpus(topo_->root()) + blocked < n ? WaitKind::kResources : WaitKind::kTopologyBlock;
  std::string detail;
  if (kind == WaitKind::kTopologyBlock) {
    detail = job.spec.shape.fit == FitMode::kRequire ? std::string(LevelName(job.spec.shape.level))
                                                     : "no block of " + std::to_string(n) + " free GPUs fits";
  }
  // Starvation guard beyond the depth (EASY keeps one reservation): large jobs and jobs that
  // waited long get a reservation of their own, up to reserve_depth in all.
  const bool guarded = (config_.reserve_large_gpus > 0 && n >= config_.reserve_large_gpus) ||
                       (config_.reserve_after_wait > 0 && now - job.spec.submit >= config_.reserve_after_wait);
  const size_t guard_cap = config_.reserve_depth == 0 ? SIZE_MAX : config_.reserve_depth;
  if (made >= depth && !(guarded && made < guard_cap)) {
    // Beyond the reservation depth: higher-priority jobs hold the reservations.
    if (made > 0) {
      kind = WaitKind::kPriority;
      detail.clear();
    }
    return wait(kind, detail);
  }
  ClearStartBlocks();
  if (kind == WaitKind::kTopologyBlock && !reservations_.empty() && PlaceNow(ShapeFor(job, n))) {
    // It would fit, but only on GPUs promised to others.
    for (const Reservation& r : reservations_) {
      if (r.job != id && r.start < now + w) {
        kind = WaitKind::kReservedFor;
        detail = "job " + std::to_string(r.job);
        break;
      }
    }
  }
  if (auto r = Reserve(job, now)) {
    const Time start = r->start;
    if (plan_ && !plan_->AddAllocation(r->gpus, r->start, r->end)) plan_.reset();
    reservations_.push_back(std::move(*r));
    res_order_dirty_ = true;
    return wait(kind, detail, start);
  }
  return wait(kind, detail);
}

std::vector<GpuId> Scheduler::TrimClaim(const JobRecord& job, std::vector<GpuId> claim) {
  // Keep only the GPUs the preemptor would use: place it with everything else blocked.
  std::vector<GpuId> others;
  for (uint32_t g = 0; g < topo_->gpu_count(); ++g) {
    if (topo_->is_free(GpuId(g)) && !std::binary_search(claim.begin(), claim.end(), GpuId(g))) others.push_back(GpuId(g));
  }
  WhatIf what_if(*topo_);
  what_if.Block(others);
  auto p = PlaceNow(ShapeFor(job, MinLegalSize(job)));
  if (!p) return claim;
  std::vector<GpuId> used = p->gpus;
  used.insert(used.end(), p->held.begin(), p->held.end());
  std::sort(used.begin(), used.end());
  return used;
}

void Scheduler::StartJob(JobRecord& job, const Placement& p, Time now, std::vector<Decision>& out) {
  std::vector<GpuId> all = p.gpus;
  all.insert(all.end(), p.held.begin(), p.held.end());
  std::sort(all.begin(), all.end());
  if (!topo_->Allocate(job.spec.id, all, p.prediction.busbw_gbs)) return;  // cannot happen: placed on free GPUs
  const JobId id = job.spec.id;
  job.gpus = std::move(all);
  job.state = JobState::kRunning;
  job.start = now;
  job.last_checkpoint = now;
  job.last_checkpoint_request = now;
  job.run_walltime = RemainingWalltime(job);
  job.busbw_gbs = p.prediction.busbw_gbs;
  job.claim.clear();
  job.victims.clear();
  job.wait = {};
  // Its claim (if it preempted) is no longer a reservation.
  if (std::erase_if(reservations_, [&](const Reservation& r) { return r.job == id && r.for_preemption; }) > 0) {
    ClearStartBlocks();
    res_order_dirty_ = true;
  }
  pending_.Erase(id);
  active_.insert(id);
  if (!ends_dirty_) {
    const std::pair<Time, JobId> e{ReleaseTime(job), id};
    ends_.insert(std::upper_bound(ends_.begin(), ends_.end(), e), e);
  }
  (void)limits_.RemovePending(job.spec.user, job.spec.account);
  limits_.AddRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(job.gpus.size()));
  charged_until_[id] = now;
  NoteTimer(NextTimer(job));
  Decision d;
  d.kind = DecisionKind::kStart;
  d.job = id;
  d.at = now;
  d.gpus = p.gpus;
  char buf[64];
  std::snprintf(buf, sizeof buf, "busbw %.1f GB/s", p.prediction.busbw_gbs);
  d.reason = buf;
  if (job.checkpoint_epoch > 0) d.reason += ", resume from checkpoint " + std::to_string(job.checkpoint_epoch);
  out.push_back(std::move(d));
}

// ---- preemption and shrinking ------------------------------------------------------------

bool Scheduler::TryPreempt(JobRecord& job, Time now, std::vector<Decision>& out) {
  if (!config_.preemption) return false;
  const PriorityClassId cls(static_cast<uint32_t>(job.class_rank));
  const uint32_t n = MinLegalSize(job);
  const PlacementRequest request = ShapeFor(job, n);
  const ShapeKey key{request.level, request.fit, request.exclusive, request.rail_aligned, request.gpus_per_node};
  for (const FailedPreempt& f : failed_preempts_) {
    if (f.class_rank == job.class_rank && f.key == key && f.gpus <= n) return false;
  }
  auto it = victim_cache_.find(job.class_rank);
  if (it == victim_cache_.end()) {
    std::vector<JobId> ids;
    for (JobId vid : active_) {
      const JobRecord& v = jobs_.at(vid);
      if (v.state == JobState::kRunning && v.preempted_for == kNoJob && classes_.CanPreempt(cls, PriorityClassId(static_cast<uint32_t>(v.class_rank)))) {
        ids.push_back(vid);
      }
    }
    it = victim_cache_.emplace(job.class_rank, std::move(ids)).first;
  }
  if (it->second.empty()) return false;
  ClearStartBlocks();
  const bool ok = PreemptFor(job, n, request, it->second, now, out);
  if (ok) {
    victim_cache_.clear();
    ends_dirty_ = true;
  } else {
    failed_preempts_.push_back({job.class_rank, key, n});
  }
  return ok;
}

bool Scheduler::PreemptFor(JobRecord& job, uint32_t n, const PlacementRequest& request, const std::vector<JobId>& candidates,
                           Time now, std::vector<Decision>& out) {
  struct Victim {
    JobId id;
    bool shrink;
    uint32_t removable;  // GPUs it can give up
    double cost;         // GPU-seconds of work lost
  };
  std::vector<Victim> victims;
  for (JobId vid : candidates) {
    const JobRecord& v = jobs_.at(vid);
    if (v.state != JobState::kRunning || v.preempted_for != kNoJob) continue;
    const PriorityClassId vcls(static_cast<uint32_t>(v.class_rank));
    const double g = static_cast<double>(v.gpus.size());
    if (config_.elastic && v.spec.elastic() && !v.spec.shape.exclusive) {
      const std::vector<uint32_t> vs = LegalSizes(v);
      const uint32_t keep = MinSize(vs);
      if (keep < v.gpus.size()) {
        // A shrink goes through a checkpoint: only the restart is lost.
        victims.push_back({vid, true, static_cast<uint32_t>(v.gpus.size()) - keep, g * static_cast<double>(v.spec.restart_cost)});
        continue;
      }
    }
    if (!v.preemptible || now - v.start < classes_.min_runtime_before_preemption(vcls)) continue;
    victims.push_back({vid, false, static_cast<uint32_t>(v.gpus.size()),
                       g * static_cast<double>(now - v.last_checkpoint + v.spec.restart_cost)});
  }
  if (victims.empty()) return false;

  // Candidate blocks: domains above the victims' GPUs that are big enough and allowed.
  const Level min_level = n <= topo_->max_gpus_per_node() ? Level::kGroup : Level::kNode;
  std::map<DomainId, std::vector<std::pair<size_t, uint32_t>>> in_domain;  // domain -> (victim, GPUs inside)
  for (size_t i = 0; i < victims.size(); ++i) {
    std::map<DomainId, uint32_t> count;
    for (GpuId g : jobs_.at(victims[i].id).gpus) {
      for (DomainId a = topo_->domain(topo_->gpu_domain(g)).parent; a.valid(); a = topo_->domain(a).parent) count[a]++;
    }
    for (const auto& [d, c] : count) {
      const Domain& dom = topo_->domain(d);
      if (dom.gpu_count < n || dom.level < min_level) continue;
      if (request.fit == FitMode::kRequire && dom.level > request.level) continue;
      in_domain[d].push_back({i, c});
    }
  }
  struct Option {
    double cost;
    DomainId domain;
    std::vector<std::pair<size_t, uint32_t>> chosen;  // victim, GPUs to free inside the domain
  };
  std::vector<Option> options;
  for (auto& [d, list] : in_domain) {
    // Cheapest work lost per GPU freed inside the block first.
    std::sort(list.begin(), list.end(), [&](const auto& a, const auto& b) {
      const double ca = victims[a.first].cost / std::min(a.second, victims[a.first].removable);
      const double cb = victims[b.first].cost / std::min(b.second, victims[b.first].removable);
      return ca != cb ? ca < cb : victims[a.first].id < victims[b.first].id;
    });
    uint32_t have = topo_->free_gpus(d);
    Option o{0, d, {}};
    for (const auto& [i, inside] : list) {
      if (have >= n) break;
      const uint32_t freed = std::min(inside, victims[i].removable);
      o.chosen.push_back({i, freed});
      o.cost += victims[i].cost;
      have += freed;
    }
    if (have >= n && !o.chosen.empty()) options.push_back(std::move(o));
  }
  std::sort(options.begin(), options.end(), [&](const Option& a, const Option& b) {
    if (a.cost != b.cost) return a.cost < b.cost;
    const Domain &da = topo_->domain(a.domain), &db = topo_->domain(b.domain);
    return da.level != db.level ? da.level < db.level : a.domain < b.domain;
  });
  constexpr size_t kVerify = 8;
  for (size_t k = 0; k < options.size() && k < kVerify; ++k) {
    const Option& o = options[k];
    // Which GPUs each victim keeps (shrinks keep what is outside the block first).
    std::vector<std::vector<GpuId>> keep(o.chosen.size());
    WhatIf what_if(*topo_);
    const Time end = now + RemainingWalltime(job);
    for (const Reservation& r : reservations_) {
      if (r.job != job.spec.id && r.start < end) what_if.Block(r.gpus);
    }
    for (size_t c = 0; c < o.chosen.size(); ++c) {
      const Victim& v = victims[o.chosen[c].first];
      const JobRecord& vj = jobs_.at(v.id);
      what_if.ReleaseJob(v.id);
      if (v.shrink) {
        std::vector<GpuId> outside, inside;
        for (GpuId g : vj.gpus) (topo_->contains(o.domain, g) ? inside : outside).push_back(g);
        std::vector<GpuId> kept = outside;
        kept.insert(kept.end(), inside.begin(), inside.end());
        kept.resize(vj.gpus.size() - o.chosen[c].second);
        // Round down to a legal size.
        uint32_t legal = 0;
        for (uint32_t s : LegalSizes(vj)) {
          if (s <= kept.size()) {
            legal = s;
            break;
          }
        }
        kept.resize(legal);
        keep[c] = kept;
        what_if.Block(kept);
      }
    }
    PlacementRequest inside = request;
    if (inside.fit != FitMode::kRequire || inside.level > topo_->domain(o.domain).level) {
      inside.level = topo_->domain(o.domain).level;
      inside.fit = FitMode::kRequire;
    }
    if (!PlaceNow(inside)) continue;
    what_if.Undo();
    for (size_t c = 0; c < o.chosen.size(); ++c) {
      const Victim& v = victims[o.chosen[c].first];
      JobRecord& vj = jobs_.at(v.id);
      vj.state = JobState::kCheckpointing;
      vj.after_checkpoint = v.shrink ? JobRecord::After::kShrink : JobRecord::After::kPreempt;
      vj.shrink_to = keep[c];
      vj.preempted_for = job.spec.id;
      vj.checkpoint_deadline = now + CheckpointGrace(vj);
      NoteTimer(vj.checkpoint_deadline);
      job.victims.push_back(v.id);
      Decision d;
      d.kind = DecisionKind::kCheckpoint;
      d.job = v.id;
      d.at = now;
      d.deadline = vj.checkpoint_deadline;
      d.reason = std::string(v.shrink ? "shrink" : "preempt") + " for job " + std::to_string(job.spec.id);
      out.push_back(std::move(d));
    }
    return true;
  }
  return false;
}

void Scheduler::GrowElastic(Time now, std::vector<Decision>& out) {
  if (!config_.elastic) return;
  if (blocked_ || topo_->free_gpus(topo_->root()) == 0) {
    idle_since_ = now;
    return;
  }
  if (idle_since_ < last_freed_) idle_since_ = last_freed_;  // GPUs freed since: idle from then
  if (now - idle_since_ < config_.grow_after_idle) return;
  for (JobId id : std::vector<JobId>(active_.begin(), active_.end())) {
    JobRecord& job = jobs_.at(id);
    if (job.state != JobState::kRunning || !job.spec.elastic() || job.spec.shape.exclusive) continue;
    const std::vector<uint32_t> sizes = LegalSizes(job);
    std::optional<Placement> grown;
    {
      WhatIf what_if(*topo_);
      what_if.ReleaseJob(id);
      for (uint32_t s : sizes) {
        if (s <= job.gpus.size()) break;
        if ((grown = PlaceNow(ShapeFor(job, s)))) break;
      }
    }
    if (!grown) continue;
    std::vector<GpuId> before = job.gpus;
    Decision d;
    d.kind = DecisionKind::kResize;
    d.job = id;
    d.at = now;
    std::vector<GpuId> after = grown->gpus;
    std::sort(after.begin(), after.end());
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(d.added));
    std::set_difference(before.begin(), before.end(), after.begin(), after.end(), std::back_inserter(d.removed));
    (void)limits_.RemoveRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(before.size()));
    limits_.AddRunning(job.spec.user, job.spec.account, static_cast<uint32_t>(after.size()));
    SetAllocation(job, after);
    job.busbw_gbs = grown->prediction.busbw_gbs;
    job.resizes++;
    d.gpus = job.gpus;
    d.reason = "grow: GPUs idle for " + std::to_string(now - idle_since_) + "s";
    out.push_back(std::move(d));
  }
}

}  // namespace phalanx
