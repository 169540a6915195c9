// Simulator: the event loop over the scheduling core. See simulator.h and docs/simulator.md.
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_set>

#include "core/placement/placer.h"
#include "core/sched/scheduler.h"
#include "core/topology/fragmentation.h"
#include "core/topology/topology.h"
#include "sim/random.h"

namespace phalanx {
namespace {

enum class Ev : uint8_t {
  kEnd = 0,     // the job's work is done
  kAnswer = 1,  // the job answers a Checkpoint decision
  kSelfCheckpoint = 2,
  kNode = 3,
  kWakeDeadline = 4,  // a checkpoint deadline (pass if the job is still checkpointing)
  kWakeWalltime = 5,  // a walltime end (pass if the same run is still going)
  kWake = 6,          // a reservation start or an elastic growth check
  kRelease = 7,       // a requeued job's delay is over (SimOptions::requeue_delay)
};

struct Event {
  Time t;
  Ev kind;
  uint64_t seq;
  size_t job;  // trace index, or node event index
  uint64_t gen;
  bool operator>(const Event& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

struct SimJob {
  double work_total = 0;  // GPU-seconds
  double work_done = 0;   // at seg_start
  double work_saved = 0;  // at the last checkpoint
  Time seg_start = 0;
  uint32_t rate = 0;  // GPUs computing (0 when not running)
  uint32_t held = 0;  // GPUs held (incl. exclusive spares)
  uint64_t gen = 0;   // bumps on every start/resize/stop: invalidates End events
  uint64_t run = 0;   // bumps on every start/stop: invalidates checkpoint events
  double busbw = 0, busbw_static = 0;
  double speed = 1;              // work per GPU-second in this segment (runtime model, <= 1)
  double scale = 1;              // elastic scaling: work per GPU-second at this size vs at the trace size
  uint32_t size0 = 0;            // the trace size (elastic scaling's g0)
  Duration walltime0 = 0;        // the walltime asked at submission
  Duration ckpt_interval = 0;    // the class rule's: checkpoints reported to the core
  Duration save_interval = 0;    // periodic saves of the work model (SimOptions::checkpoint_interval)
  Time compute_start = 0;        // when the current run began computing (after its restart overhead)
  bool answers = true;           // answers checkpoint signals (SimOptions::checkpoint_answer_share)
  Time signal_at = -1;           // the pending Checkpoint decision's signal (-1: none)
  bool saved_at_signal = false;  // the last save answered a signal: work since then is overhead
  bool failure = false;          // the trace says it failed: reported as a failed end
};

class Sim {
 public:
  Sim(const Trace& trace, const SimOptions& options) : trace_(trace), opt_(options) {}

  Result<SimResult> Run(const TopologySpec& spec, SchedulerConfig config) {
    // Job specs first: the largest walltime raises the configured maximum (a modelling choice,
    // not a rule: the trace's jobs ran, so none may be refused for its length).
    std::vector<JobSpec> specs;
    std::vector<Duration> ckpt_intervals;
    specs.reserve(trace_.jobs.size());
    ckpt_intervals.reserve(trace_.jobs.size());
    WalltimeModel walltime = opt_.walltime;
    if (walltime.mode == WalltimeModel::Mode::kModel && walltime.limit == 0) {
      // The site's limit: a week, or the longest job rounded up to a day (it did run).
      Duration longest = 0;
      for (const TraceJob& j : trace_.jobs) longest = std::max(longest, j.duration);
      walltime.limit = std::max<Duration>(7 * 24 * 3600, (longest + 86399) / 86400 * 86400);
    }
    for (size_t i = 0; i < trace_.jobs.size(); ++i) {
      MappedJob m = MapTraceJob(trace_.jobs[i], i, opt_.seed, walltime, opt_.rules, opt_.elastic_share);
      config.max_walltime = std::max(config.max_walltime, m.spec.walltime);
      specs.push_back(std::move(m.spec));
      ckpt_intervals.push_back(m.checkpoint_interval);
    }
    // Room for walltimes the runtime model extends (ExtendWalltime caps at this).
    if (opt_.comm_share > 0) config.max_walltime *= 4;
    max_walltime_ = config.max_walltime;
    PHX_ASSIGN_OR_RETURN(auto topo, Topology::Build(spec));
    PHX_ASSIGN_OR_RETURN(auto mirror, Topology::Build(spec));  // stays empty: the best placements, static bandwidth
    mirror_ = std::make_unique<Topology>(std::move(mirror));
    mirror_placer_ = std::make_unique<Placer>(*mirror_, config.model);
    // A Wait per pending job and pass is only printed (--decisions); the pass reads whether any
    // job waits for GPUs from the records (WaitsForGpus).
    config.wait_decisions = opt_.record_decisions;
    config.record_priorities = false;  // no output shows a job's priority
    PHX_ASSIGN_OR_RETURN(auto sched, Scheduler::Create(std::move(topo), config));
    sched_ = std::move(sched);
    if (opt_.record_decisions) script_ << "set max_walltime=" << config.max_walltime << "\n";
    const Topology& t = sched_->topology();
    res_.policy = config.name;
    if (opt_.pass_clock) res_.pass_profile.emplace();
    res_.topology = t.name();
    res_.cluster_gpus = static_cast<uint32_t>(t.gpu_count());

    std::vector<uint32_t> sizes;
    jobs_.resize(trace_.jobs.size());
    res_.jobs.resize(trace_.jobs.size());
    for (size_t i = 0; i < trace_.jobs.size(); ++i) {
      const TraceJob& tj = trace_.jobs[i];
      sizes.push_back(tj.gpus);
      jobs_[i].work_total = static_cast<double>(tj.gpus) * static_cast<double>(std::max<Duration>(tj.duration, 1));
      jobs_[i].failure = StatusIsFailure(tj.status);
      jobs_[i].size0 = tj.gpus;
      jobs_[i].ckpt_interval = ckpt_intervals[i];
      jobs_[i].save_interval = ckpt_intervals[i] > 0 ? ckpt_intervals[i] : opt_.checkpoint_interval;
      jobs_[i].answers = SeededUniform(opt_.seed ^ 0x636b7074ull, i, 0) < opt_.checkpoint_answer_share;
      jobs_[i].walltime0 = specs[i].walltime;
      JobOutcome& o = res_.jobs[i];
      o.id = tj.id;
      o.gpus = tj.gpus;
      o.submit = tj.submit;
      o.duration = tj.duration;
      o.elastic = specs[i].elastic();
      o.user = tj.user;
      o.priority_class = specs[i].priority_class.empty() ? config.classes.default_class : specs[i].priority_class;
      res_.counters.work_gpu_s += static_cast<double>(tj.gpus) * static_cast<double>(tj.duration);
    }
    probe_ = std::make_unique<FragmentationProbe>(t, ShapeMix(sizes));
    Horizon();
    NodeFailures();

    size_t next_submit = 0;
    Time prev = 0;
    const size_t n = trace_.jobs.size();
    size_t progress_step = 0;
    while (next_submit < n || !heap_.empty()) {
      if (next_submit >= n && finished_ == n) break;  // only timers left
      Time now = heap_.empty() ? kForever : heap_.top().t;
      if (next_submit < n) now = std::min(now, trace_.jobs[next_submit].submit);
      Advance(prev, now);
      prev = now;
      bool pass = false;
      uint8_t asked = 0;  // what asked for the pass (PassProfile)
      while (!heap_.empty() && heap_.top().t == now) {
        const Event e = heap_.top();
        heap_.pop();
        bool asks = false;
        PHX_RETURN_IF_ERROR(Deliver(e, now, asks));
        if (asks && e.kind == Ev::kEnd) asked |= PassProfile::kAskEnd;
        pass = pass || asks;
      }
      while (next_submit < n && trace_.jobs[next_submit].submit == now) {
        Submit(next_submit, std::move(specs[next_submit]), now);
        ++next_submit;
        pass = true;
        asked |= PassProfile::kAskSubmit;
      }
      if (opt_.progress && n > 0 && next_submit * 200 / n > progress_step) {
        progress_step = next_submit * 200 / n;
        opt_.progress(static_cast<double>(next_submit) / static_cast<double>(n));
      }
      if (pass) {
        PHX_RETURN_IF_ERROR(Pass(now, asked));
      }
    }
    Advance(prev, prev);
    TakeSample(prev);
    res_.counters.end = prev;
    res_.counters.idle_cycles_skipped = sched_->idle_cycles_skipped();
    res_.counters.floored_walks = sched_->floored_walks();
    res_.counters.floor_jumps = sched_->floor_jumps();
    res_.counters.floor_releases_kept = sched_->floor_releases_kept();
    res_.counters.floor_tops_kept = sched_->floor_tops_kept();
    res_.counters.walk_known_tops = sched_->walk_known_tops();
    res_.counters.walk_print_mismatches = sched_->walk_print_mismatches();
    res_.counters.kept_order_passes = sched_->kept_order_passes();
    res_.counters.keyed_skips = sched_->keyed_skips();
    for (size_t i = 0; i < n; ++i) {
      const JobRecord* r = sched_->job(static_cast<JobId>(i + 1));
      if (!r) continue;
      JobOutcome& o = res_.jobs[i];
      o.state = r->state;
      o.preemptible = r->preemptible;
      o.preemptions = r->preemptions;
      o.resizes = r->resizes;
      o.lost_gpu_s = r->gpu_seconds_lost;
      if (IsFinal(r->state)) o.end = r->end;
    }
    if (opt_.record_decisions) {
      log_ << "final:";
      for (const auto& [id, job] : sched_->jobs()) {
        log_ << " " << id << "=" << JobStateName(job.state);
        if (!job.gpus.empty()) log_ << "[" << job.gpus.size() << "]";
      }
      log_ << "\n";
      res_.decision_log = log_.str();
      res_.event_script = script_.str();
    }
    return std::move(res_);
  }

 private:
  void Push(Time t, Ev kind, size_t job, uint64_t gen) { heap_.push({t, kind, seq_++, job, gen}); }
  // A pass at `t`, asked by the pass that runs now. Each pass asks anew for what its plan has
  // coming due (Pass clears `due_` first), so a wake that no later pass asked for again is stale
  // and runs no pass: a reservation that moved, a patience bound that changed with the queue.
  void Wake(Time t) {
    due_.push_back(t);  // sorted once the pass has asked for all (Pass)
    if (wakes_.insert(t).second) Push(t, Ev::kWake, 0, 0);
  }

  // The sample interval and the horizon of random node failures.
  void Horizon() {
    Time last = 0;
    for (const TraceJob& j : trace_.jobs) last = std::max(last, j.submit + j.duration);
    horizon_ = last;
    interval_ = opt_.sample_interval > 0 ? opt_.sample_interval : std::max<Duration>(60, (last / 1000 + 59) / 60 * 60);
  }

  void NodeFailures() {
    for (const NodeEvent& e : opt_.node_events) nodes_.push_back(e);
    if (opt_.node_mtbf > 0) {
      const Topology& t = sched_->topology();
      for (uint32_t n = 0; n < t.node_count(); ++n) {
        const std::string& name = t.domain(t.node_domain(NodeId(n))).name;
        Time at = 0;
        for (uint64_t k = 0;; ++k) {
          const double u = SeededUniform(opt_.seed ^ 0x6e6f6465ull, n, k);
          at += static_cast<Time>(std::ceil(-std::log1p(-u) * static_cast<double>(opt_.node_mtbf)));
          if (at > horizon_) break;
          nodes_.push_back({at, name, NodeState::kDown});
          at += opt_.node_repair;
          nodes_.push_back({at, name, NodeState::kUp});
        }
      }
    }
    std::stable_sort(nodes_.begin(), nodes_.end(), [](const NodeEvent& a, const NodeEvent& b) { return a.at < b.at; });
    for (size_t i = 0; i < nodes_.size(); ++i) Push(nodes_[i].at, Ev::kNode, i, 0);
  }

  // Samples for the grid points before `now`, and the busy-GPU integral up to `now`.
  void Advance(Time prev, Time now) {
    res_.counters.busy_gpu_s += static_cast<double>(busy_) * static_cast<double>(now - prev);
    while (next_sample_ < now) {
      TakeSample(next_sample_);
      next_sample_ += interval_;
    }
  }

  void TakeSample(Time at) {
    const Topology& t = sched_->topology();
    Sample s;
    s.t = at;
    s.busy_gpus = busy_;
    s.free_gpus = t.free_gpus(t.root());
    s.running_jobs = running_;
    for (JobId id : sched_->queue()) {
      const JobRecord* r = sched_->job(id);
      if (r && r->state == JobState::kPending) {
        s.pending_jobs++;
        s.pending_gpus += r->spec.shape.gpus;
      }
    }
    s.frag_gpus = probe_->FragmentedGpus(t);
    s.largest_free = LargestFreeByLevel(t);
    res_.series.push_back(s);
  }

  double WorkAt(const SimJob& j, Time t) const {
    return std::min(j.work_total, j.work_done + static_cast<double>(j.rate) * j.speed * j.scale *
                                                    static_cast<double>(t - j.seg_start));
  }

  double Best(uint32_t g) {
    auto it = best_.find(g);
    if (it != best_.end()) return it->second;
    PlacementRequest r;
    r.gpus = g;
    const PlaceOutcome o = mirror_placer_->Place(r);
    const double b = o.status == PlaceStatus::kPlaced ? o.placement.prediction.busbw_gbs : 0;
    best_[g] = b;
    return b;
  }

  // The job's own periodic saves (save_interval of computing in the current run) up to `t` in
  // the current segment: the last one becomes its saved work.
  void PeriodicSave(size_t i, Time t) {
    SimJob& j = jobs_[i];
    if (j.save_interval <= 0 || j.rate == 0 || t <= j.compute_start) return;
    const Time last = j.compute_start + (t - j.compute_start) / j.save_interval * j.save_interval;
    if (last <= j.compute_start || last < j.seg_start) return;
    const double w = WorkAt(j, last);
    if (w > j.work_saved) {
      j.work_saved = w;
      j.saved_at_signal = false;
    }
  }

  // Back to the saved work (a stop or a shrink restarts from the last save): what was done
  // since is overhead when the save answered the signal (the job wrote it as of the signal,
  // then computed on while writing), else lost.
  void Rollback(size_t i) {
    SimJob& j = jobs_[i];
    const double since = j.work_done - j.work_saved;
    if (since > 0) (j.saved_at_signal ? res_.counters.overhead_gpu_s : res_.counters.lost_work_gpu_s) += since;
    j.work_done = std::min(j.work_done, j.work_saved);
  }

  // Closes the current placement segment at `t` (placement efficiency, work done).
  void CloseSegment(size_t i, Time t) {
    PeriodicSave(i, t);
    SimJob& j = jobs_[i];
    if (j.rate > 1 && t > j.seg_start)
      res_.counters.slow_gpu_s += static_cast<double>(j.rate) * static_cast<double>(t - j.seg_start) * (1 - j.speed);
    if (j.rate > 1) {
      const double w = static_cast<double>(j.rate) * static_cast<double>(t - j.seg_start);
      const double best = Best(j.rate);
      if (best > 0 && w > 0) {
        res_.counters.placement_weight += w;
        res_.counters.placement_score += w * std::min(1.0, j.busbw / best);
        res_.jobs[i].placement_weight += w;
        res_.jobs[i].placement_score += w * std::min(1.0, j.busbw / best);
        res_.counters.placement_score_static += w * std::min(1.0, j.busbw_static / best);
      }
    }
    j.work_done = WorkAt(j, t);
    j.seg_start = t;
  }

  // Starts a placement segment of `gpus` computing GPUs at `t` and schedules the job's end.
  void OpenSegment(size_t i, Time t, const std::vector<GpuId>& gpus, double busbw, bool restart) {
    SimJob& j = jobs_[i];
    j.rate = static_cast<uint32_t>(gpus.size());
    j.seg_start = t;
    j.busbw = busbw;
    j.busbw_static = mirror_placer_->model().Predict(gpus).busbw_gbs;
    j.speed = 1 / Slowdown(j.rate, busbw > 0 ? busbw : j.busbw_static);
    j.scale = 1;
    if (opt_.elastic_scaling != 1 && j.rate > 0 && j.size0 > 0 && j.rate != j.size0) {
      const double g = static_cast<double>(j.rate), g0 = static_cast<double>(j.size0);
      j.scale = std::pow(g / g0, opt_.elastic_scaling) * g0 / g;
    }
    ++j.gen;
    const double left = j.work_total - j.work_done;
    Duration dt = static_cast<Duration>(std::ceil(left / (static_cast<double>(j.rate) * j.speed * j.scale) - 1e-9));
    if (restart) dt += opt_.restart_overhead;
    dt = std::max<Duration>(dt, 1);
    if (restart && opt_.restart_overhead > 0) {
      // The restart's seconds compute nothing: start counting work after them.
      j.seg_start = t + opt_.restart_overhead;
      res_.counters.overhead_gpu_s += static_cast<double>(j.rate) * static_cast<double>(opt_.restart_overhead);
    }
    Push(t + dt, Ev::kEnd, i, j.gen);
    const JobRecord* r = sched_->job(static_cast<JobId>(i + 1));
    if (restart && r && r->expected_end() < t + dt) ExtendForRestart(i, t, t + dt);
    if (r && r->expected_end() < t + dt) Push(r->expected_end(), Ev::kWakeWalltime, i, j.run);
  }

  // A resumed or resized run needs its restart overhead and the work lost since its last save
  // on top of what is left: its walltime grows so the run can end (Slurm gives a requeued job
  // its whole time limit again; the core's run limit is the walltime less the saved progress).
  // Through Scheduler::Update, like ExtendWalltime; counted as a walltime extension.
  void ExtendForRestart(size_t i, Time now, Time end) {
    const JobId id = static_cast<JobId>(i + 1);
    const JobRecord* r = sched_->job(id);
    if (!r) return;
    const Duration wall = std::min<Duration>(max_walltime_, r->walltime + (end - r->expected_end()));
    if (wall <= r->walltime) return;
    ++res_.counters.walltime_extensions;
    if (opt_.record_decisions) script_ << "at " << now << " update id=" << id << " time=" << wall << "\n";
    Scheduler::JobUpdate u;
    u.walltime = wall;
    if (auto s = sched_->Update(id, u, now); !s) Refused("update", now, s.error());
  }

  // Step time at `busbw` relative to the best placement of `gpus` GPUs (>= 1).
  double Slowdown(uint32_t gpus, double busbw) {
    if (opt_.comm_share <= 0 || gpus <= 1 || busbw <= 0) return 1;
    const double best = Best(gpus);
    if (best <= busbw) return 1;
    return (1 - opt_.comm_share) + opt_.comm_share * best / busbw;
  }

  // A job slowed by its placement gets a walltime in proportion (never lowered): the user's
  // estimate was for the run at the best placement. Goes through the core like a user's
  // `phalanx job update`, so plans and backfill see it.
  void ExtendWalltime(size_t i, Time now) {
    SimJob& j = jobs_[i];
    if (j.speed >= 1) return;
    const JobId id = static_cast<JobId>(i + 1);
    const JobRecord* r = sched_->job(id);
    if (!r) return;
    const double want = std::ceil(static_cast<double>(j.walltime0) / j.speed - 1e-9);
    const Duration wall = static_cast<Duration>(std::min(want, static_cast<double>(max_walltime_)));
    if (wall <= r->walltime) return;
    ++res_.counters.walltime_extensions;
    if (opt_.record_decisions) script_ << "at " << now << " update id=" << id << " time=" << wall << "\n";
    Scheduler::JobUpdate u;
    u.walltime = wall;
    if (auto s = sched_->Update(id, u, now); !s) {
      Refused("update", now, s.error());
    } else if (r = sched_->job(id); r) {
      Push(r->expected_end(), Ev::kWakeWalltime, i, j.run);
    }
  }

  void StopRunning(size_t i, Time t) {
    CloseSegment(i, t);
    SimJob& j = jobs_[i];
    busy_ -= j.held;
    if (j.held > 0) --running_;
    j.held = 0;
    elastic_running_.erase(i);
    j.rate = 0;
    ++j.gen;
    ++j.run;
  }

  void SetHeld(size_t i) {
    const JobRecord* r = sched_->job(static_cast<JobId>(i + 1));
    const uint32_t now_held = r ? static_cast<uint32_t>(r->gpus.size()) : 0;
    SimJob& j = jobs_[i];
    if (j.held == 0 && now_held > 0) ++running_;
    if (j.held > 0 && now_held == 0) --running_;
    busy_ = busy_ - j.held + now_held;
    j.held = now_held;
    if (res_.jobs[i].elastic) {
      if (now_held > 0) elastic_running_.insert(i);
      else elastic_running_.erase(i);
    }
  }

  void Refused(std::string_view what, Time now, const Error& e) {
    if (opt_.record_decisions) log_ << "t=" << now << " refused " << what << ": " << e.ToString() << "\n";
  }

  void Submit(size_t i, JobSpec spec, Time now) {
    ++res_.counters.events;
    if (opt_.record_decisions) {
      script_ << "at " << now << " submit id=" << spec.id << " gpus=" << spec.shape.gpus << " time=" << spec.walltime
              << " user=" << spec.user << " account=" << spec.account;
      if (!spec.priority_class.empty()) script_ << " class=" << spec.priority_class;
      if (spec.preemptible) script_ << " preemptible=" << (*spec.preemptible ? "yes" : "no");
      if (spec.min_gpus > 0) {
        script_ << " min=" << spec.min_gpus;
        if (spec.step_kind == ElasticStep::kPowerOfTwo) script_ << " step=pow2";
        if (spec.step_kind == ElasticStep::kMultiple) script_ << " step=" << spec.step;
      }
      script_ << " restart=" << spec.restart_cost << "\n";
    }
    if (auto s = sched_->Submit(std::move(spec), now); !s) {
      res_.jobs[i].rejected = true;
      ++finished_;
      Refused("submit", now, s.error());
    }
  }

  Status Deliver(const Event& e, Time now, bool& pass) {
    if (e.kind == Ev::kNode) {
      const NodeEvent& ne = nodes_[e.job];
      ++res_.counters.events;
      ++res_.counters.node_events;
      if (opt_.record_decisions) {
        script_ << "at " << now << " node " << ne.node << " "
                << (ne.state == NodeState::kUp     ? "up"
                    : ne.state == NodeState::kDown ? "down"
                                                   : "drain")
                << "\n";
      }
      if (auto s = sched_->SetNodeState(ne.node, ne.state, now); !s) Refused("node", now, s.error());
      pass = true;
      return {};
    }
    if (e.kind == Ev::kWake) {
      wakes_.erase(e.t);
      if (std::binary_search(due_.begin(), due_.end(), e.t)) pass = true;
      return {};
    }
    if (e.kind == Ev::kRelease) {
      const JobId rid = static_cast<JobId>(e.job + 1);
      const JobRecord* rr = sched_->job(rid);
      if (!rr || rr->state != JobState::kPending || !rr->spec.held || e.gen != jobs_[e.job].run) return {};
      ++res_.counters.events;
      if (opt_.record_decisions) script_ << "at " << now << " release id=" << rid << "\n";
      if (auto s = sched_->Release(rid, now); !s) Refused("release", now, s.error());
      pass = true;
      return {};
    }
    const size_t i = e.job;
    SimJob& j = jobs_[i];
    const JobId id = static_cast<JobId>(i + 1);
    const JobRecord* r = sched_->job(id);
    if (!r) return {};
    const bool active = HoldsGpus(r->state);
    switch (e.kind) {
      case Ev::kEnd: {
        if (e.gen != j.gen || !active) return {};
        StopRunning(i, now);
        ++res_.counters.events;
        if (opt_.record_decisions) script_ << "at " << now << " end id=" << id << (j.failure ? " fail" : "") << "\n";
        if (auto s = sched_->JobEnded(id, now, !j.failure); !s) {
          Refused("end", now, s.error());
        }
        ++finished_;
        pass = true;
        return {};
      }
      case Ev::kAnswer:
      case Ev::kSelfCheckpoint: {
        if (e.gen != j.run || !active) return {};
        if (r->state == JobState::kCheckpointing) pass = true;  // completes a preemption or shrink
        const uint64_t epoch = r->checkpoint_epoch + 1;
        ++res_.counters.events;
        if (opt_.record_decisions) script_ << "at " << now << " checkpoint id=" << id << " epoch=" << epoch << "\n";
        if (auto s = sched_->CheckpointDone(id, now, epoch, "sim"); !s) {
          Refused("checkpoint", now, s.error());
        } else if (e.kind == Ev::kAnswer && j.signal_at >= j.seg_start) {
          // Saved as of the signal; the seconds spent writing it are overhead if the job stops.
          j.work_saved = std::max(j.work_saved, WorkAt(j, j.signal_at));
          j.saved_at_signal = true;
          j.signal_at = -1;
        } else {
          j.work_saved = std::max(j.work_saved, WorkAt(j, now));
          j.saved_at_signal = false;
        }
        if (e.kind == Ev::kSelfCheckpoint && j.ckpt_interval > 0)
          Push(now + j.ckpt_interval, Ev::kSelfCheckpoint, i, j.run);
        return {};
      }
      case Ev::kWakeDeadline:
        if (e.gen == j.run && r->state == JobState::kCheckpointing && r->checkpoint_deadline <= now) pass = true;
        return {};
      case Ev::kWakeWalltime:
        if (e.gen == j.run && active && r->expected_end() <= now) pass = true;
        return {};
      default: return {};
    }
  }

  Status Pass(Time now, uint8_t asked) {
    ++res_.counters.passes;
    if (opt_.record_decisions) script_ << "at " << now << " schedule\n";
    std::vector<Decision> decisions;
    if (res_.pass_profile) {
      const size_t pending = sched_->pending_count();
      const double t0 = opt_.pass_clock();
      decisions = sched_->Schedule(now);
      res_.pass_profile->Add(now, pending, asked, opt_.pass_clock() - t0);
    } else {
      decisions = sched_->Schedule(now);
    }
    due_.clear();  // this pass's plan says what comes due next (Wake)
    const bool waiting_for_gpus = WaitsForGpus();
    for (const Decision& d : decisions) {
      if (opt_.record_decisions) Print(d);
      if (d.kind == DecisionKind::kWait) continue;
      const size_t i = static_cast<size_t>(d.job - 1);
      if (i >= jobs_.size()) continue;
      SimJob& j = jobs_[i];
      const JobRecord* r = sched_->job(d.job);
      switch (d.kind) {
        case DecisionKind::kStart: {
          ++res_.counters.starts;
          JobOutcome& o = res_.jobs[i];
          const bool resume = o.first_start >= 0;
          if (!resume) o.first_start = now;
          j.work_done = j.work_saved;
          ++j.run;
          j.signal_at = -1;
          SetHeld(i);
          OpenSegment(i, now, d.gpus, r ? r->busbw_gbs : 0, resume);
          j.compute_start = j.seg_start;
          ExtendWalltime(i, now);
          if (j.ckpt_interval > 0) Push(now + j.ckpt_interval, Ev::kSelfCheckpoint, i, j.run);
          break;
        }
        case DecisionKind::kCheckpoint:
          ++res_.counters.checkpoints_requested;
          if (j.answers) {
            j.signal_at = now;
            Push(now + opt_.checkpoint_delay, Ev::kAnswer, i, j.run);
          }
          Push(d.deadline, Ev::kWakeDeadline, i, j.run);
          break;
        case DecisionKind::kPreempt:
          ++res_.counters.preemptions;
          StopRunning(i, now);
          Rollback(i);
          if (!d.requeue) ++finished_;
          if (d.requeue && opt_.requeue_delay > 0 && r && r->state == JobState::kPending && !r->spec.held) {
            // Slurm holds a requeued batch job back (its begin time) before it may start again.
            if (opt_.record_decisions) script_ << "at " << now << " hold id=" << d.job << "\n";
            if (auto s = sched_->Hold(d.job, now); !s) {
              Refused("hold", now, s.error());
            } else {
              Push(now + opt_.requeue_delay, Ev::kRelease, i, j.run);
            }
          }
          break;
        case DecisionKind::kKill:
          ++res_.counters.kills;
          if (j.held > 0) StopRunning(i, now);
          ++finished_;
          break;
        case DecisionKind::kResize: {
          ++res_.counters.resizes;
          CloseSegment(i, now);
          if (!d.removed.empty()) Rollback(i);  // restart from the checkpoint
          j.signal_at = -1;
          SetHeld(i);
          OpenSegment(i, now, d.gpus, mirror_placer_->model().Predict(d.gpus).busbw_gbs, true);
          if (!d.removed.empty()) j.compute_start = j.seg_start;
          ExtendWalltime(i, now);
          break;
        }
        case DecisionKind::kWait: break;  // above
      }
    }
    // Wake the core when what it planned comes due.
    if (opt_.wake_for_reservations) {
      for (const Reservation& r : sched_->reservations()) {
        if (r.start > now) Wake(r.start);
      }
    }
    // A job held back for a good block starts on a slower one at its bound.
    if (const Time due = sched_->next_patience_deadline(); due < kForever && opt_.wake_for_reservations)
      Wake(std::max(now + 1, due));
    // Slurm's backfill runs on its own clock (bf_interval): wake for the next cycle while jobs
    // wait for GPUs.
    if (waiting_for_gpus && sched_->next_backfill() < kForever) Wake(std::max(now + 1, sched_->next_backfill()));
    const SchedulerConfig& c = sched_->config();
    if (c.elastic && !waiting_for_gpus && sched_->topology().free_gpus(sched_->topology().root()) > 0) {
      if (elastic_below_max()) Wake(now + std::max<Duration>(c.grow_after_idle, 1));
    }
    std::sort(due_.begin(), due_.end());
    if (opt_.check_invariants) {
      if (std::string bad = sched_->CheckInvariants(); !bad.empty())
        return Fail("t=" + std::to_string(now), "core invariant broken:\n" + bad);
    }
    return {};
  }

  // Whether a job of the last pass's queue still waits for GPUs (not held, not for a dependency,
  // not unsatisfiable). Stops at the first: most passes look at one or two records.
  bool WaitsForGpus() const {
    return sched_->FindQueued([](const JobRecord& r) {
      const WaitKind k = r.wait.kind;
      return k != WaitKind::kHeld && k != WaitKind::kDependency && k != WaitKind::kUnsatisfiable;
    }) != nullptr;
  }

  bool elastic_below_max() const {
    for (size_t i : elastic_running_) {
      if (jobs_[i].rate < res_.jobs[i].gpus) return true;
    }
    return false;
  }

  // The scenario runner's log format: waits only when they change.
  void Print(const Decision& d) {
    if (d.kind == DecisionKind::kWait) {
      std::string& last = last_wait_[d.job];
      const std::string now = d.wait.ToString();
      if (now == last) return;
      last = now;
    } else {
      last_wait_.erase(d.job);
    }
    log_ << FormatDecision(d, sched_->topology()) << "\n";
  }

  const Trace& trace_;
  const SimOptions& opt_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<Topology> mirror_;
  std::unique_ptr<Placer> mirror_placer_;
  std::unique_ptr<FragmentationProbe> probe_;
  std::map<uint32_t, double> best_;
  Duration max_walltime_ = 0;
  std::vector<SimJob> jobs_;
  std::vector<NodeEvent> nodes_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap_;
  std::unordered_set<Time> wakes_;  // times with a kWake in the heap (asked again at every pass)
  // The times the last pass asked to be woken at, sorted (one per reservation, every pass: a
  // vector cleared and sorted costs less than a set's node for each).
  std::vector<Time> due_;
  std::set<size_t> elastic_running_;
  uint64_t seq_ = 0;
  size_t finished_ = 0;
  uint32_t busy_ = 0, running_ = 0;
  Time horizon_ = 0, next_sample_ = 0;
  Duration interval_ = 3600;
  SimResult res_;
  std::ostringstream log_, script_;
  std::map<JobId, std::string> last_wait_;
};

}  // namespace

JobSpec MakeJobSpec(const TraceJob& job, size_t index, const SimOptions& options) {
  return MapTraceJob(job, index, options.seed, options.walltime, options.rules, options.elastic_share).spec;
}

Result<SimResult> Simulate(const Trace& trace, const TopologySpec& topology, const SchedulerConfig& config,
                           const SimOptions& options) {
  return Sim(trace, options).Run(topology, config);
}

}  // namespace phalanx
