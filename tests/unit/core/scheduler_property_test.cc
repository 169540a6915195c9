// Randomized properties of the Scheduler, driven the way a simulator or the daemon drives it.
//
// A seeded workload (mt19937 with our own range helpers, so a seed means the same workload with
// any standard library) is played on a generated fabric: submits, job ends at their exact
// runtime, checkpoint reports, cancels, node down/drain/up. After every batch of events at one
// time the harness calls Schedule(now) and acts on the decisions as a glue would. Every pass is
// checked against an independent ledger built only from decisions and events (see SimRun::Check).
// The properties (reservations honoured, no starvation, fragmentation) are measured on runs of
// the same harness. Each run also writes the events it played as a scenario script
// (tests/scenarios/*.scn format), so a failing seed becomes a reproducer for the golden tests.
// Knobs for investigating a failure (environment): PHALANX_SHRINK=1 shrinks a broken promise to
// a smallest job set; PHALANX_PROMISE_RIGID=1 runs the promise test without elastic jobs;
// PHALANX_SIM_TRACE=1 prints the decision log of random runs with every pass's reservations.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"

namespace phalanx {
namespace {

// ---- workload ---------------------------------------------------------------------------------

struct SimOptions {
  std::string fabric = "demo";
  uint32_t seed = 1;
  BackfillMode backfill = BackfillMode::kConservative;
  PlacementMode placement = PlacementMode::kTopology;
  bool best_fit = true;
  uint32_t reserve_depth = 100;
  bool preemption = true;
  bool elastic = true;
  int jobs = 150;
  Duration mean_interarrival = 60;  // 0: every job is submitted at t=0
  bool exact_walltime = false;      // walltime = runtime (else over-estimates, some too short)
  bool failures = false;            // node down/drain/up events
  bool cancels = false;
  bool checkpoints = false;         // some jobs ask for periodic checkpoints
  bool one_user = false;            // one user and account: queue order never changes
  bool shapes = true;               // node-shaped, level=leaf and elastic jobs
  uint32_t max_gpus = 64;
  Duration tick = 60;               // a pass at least this often while jobs run
  // When the scripted events run out with jobs still pending (nothing runs, so nothing else
  // would happen), keep passing every `tick` for up to this long, so a job that is never
  // started shows up as not done instead of the run just stopping.
  Duration drain = 24 * 3600;
};

class Rng {
 public:
  explicit Rng(uint32_t seed) : g_(seed) {}
  int64_t Uniform(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(g_() % static_cast<uint64_t>(hi - lo + 1)); }
  bool Chance(double p) { return static_cast<double>(g_()) < p * 4294967296.0; }
  // Exponential with the given mean, in whole seconds (>= 1).
  int64_t Exp(double mean) {
    const double u = (static_cast<double>(g_()) + 0.5) / 4294967296.0;
    return std::max<int64_t>(1, static_cast<int64_t>(-mean * std::log(u)));
  }

 private:
  std::mt19937 g_;
};

struct SimJob {
  JobSpec spec;
  Duration runtime = 0;
  enum class St { kPending, kRunning, kCheckpointing, kDone } st = St::kPending;
  bool cancelled = false;      // done by a cancel (the others ended or were killed at walltime)
  bool preempt_asked = false;  // told to checkpoint for a preemption
  uint64_t gen = 0;            // run generation: events of an older run are dropped
  uint64_t epoch = 0;
  Duration saved = 0;          // work saved by checkpoints
  Time run_start = 0, last_ckpt = 0;
  Time first_start = -1;
  double busbw = 0;            // predicted ring bandwidth of the first start
  Time ckpt_request = -1;      // last checkpoint request for a shrink
  Time started_at = 0;         // the Start decision of the current run
  Duration saved_at_start = 0; // `saved` then: the core's walltime budget is walltime - this
  Time min_promise = kForever;  // earliest predicted start of a reservation it held
  Time first_promise = kForever;
};

struct Event {
  enum class Kind { kSubmit, kEnd, kCheckpointDone, kCancel, kNode, kTick } kind = Kind::kTick;
  JobId job = kNoJob;
  uint64_t gen = 0;
  std::string node;
  NodeState state = NodeState::kUp;
};

struct Level2 {
  Level level;
  std::vector<DomainId> domains;
};

struct SimResult {
  std::string error;     // first violated check, with the time; empty when all held
  std::string log;       // every decision, FormatDecision lines
  std::string scenario;  // the run as a scenario script
  std::map<JobId, SimJob> jobs;
  Time end = 0;
  int passes = 0;
  // Time integrals (GPU-seconds) for utilization and fragmentation.
  double busy_gpu_seconds = 0;
  std::map<Level, double> largest_free_block_seconds;  // per level: max over its domains of free GPUs
  size_t gpus = 0;
};

std::string ClassOf(Rng& rng) {
  const int64_t r = rng.Uniform(0, 99);
  return r < 20 ? "low" : r < 75 ? "normal" : r < 93 ? "high" : "urgent";
}

uint32_t SizeOf(Rng& rng, uint32_t max_gpus) {
  const int64_t r = rng.Uniform(0, 99);
  uint32_t n = r < 35   ? static_cast<uint32_t>(rng.Uniform(1, 4))
               : r < 60 ? 8
               : r < 75 ? 16
               : r < 87 ? 32
               : r < 95 ? static_cast<uint32_t>(8 * rng.Uniform(5, 7))
                        : 64;
  return std::min(n, max_gpus);
}

class SimRun {
 public:
  explicit SimRun(SimOptions o) : o_(std::move(o)), rng_(o_.seed) {}

  // Builds the scheduler. `jobs` (optional) replaces the generated workload.
  SimResult Run(std::vector<std::pair<Time, JobSpec>> fixed = {}, std::vector<Duration> runtimes = {}) {
    auto spec = GenerateByName(o_.fabric);
    if (!spec) return Error("fabric: " + spec.error().ToString());
    auto topo = Topology::Build(*spec);
    if (!topo) return Error("topology: " + topo.error().ToString());
    SchedulerConfig c;
    c.backfill = o_.backfill;
    c.placement = o_.placement;
    c.best_fit = o_.best_fit;
    c.reserve_depth = o_.reserve_depth;
    c.preemption = o_.preemption;
    c.elastic = o_.elastic;
    auto s = Scheduler::Create(std::move(*topo), c);
    if (!s) return Error("scheduler: " + s.error().ToString());
    sched_ = std::move(*s);
    const Topology& t = sched_->topology();
    owner_.assign(t.gpu_count(), kNoJob);
    node_state_.assign(t.node_count(), NodeState::kUp);
    for (Level l : {Level::kNode, Level::kNvlDomain, Level::kLeaf, Level::kSpine}) {
      Level2 lv{l, {}};
      for (uint32_t d = 0; d < t.domain_count(); ++d) {
        if (t.domain(DomainId(d)).level == l) lv.domains.push_back(DomainId(d));
      }
      if (!lv.domains.empty()) levels_.push_back(std::move(lv));
    }
    for (uint32_t d = 0; d < t.domain_count(); ++d) {
      if (t.domain(DomainId(d)).level == Level::kLeaf) max_leaf_ = std::max(max_leaf_, t.domain(DomainId(d)).gpu_count);
    }
    res_.gpus = t.gpu_count();
    scn_ << "# generated by scheduler_property_test, seed " << o_.seed << "\n";
    if (o_.placement != PlacementMode::kTopology) scn_ << "# placement: first-fit or node best-fit (scenario files cannot set it; replays differ)\n";
    scn_ << "topology gen:" << o_.fabric << "\n";
    scn_ << "set backfill=" << (o_.backfill == BackfillMode::kNone ? "none" : o_.backfill == BackfillMode::kEasy ? "easy" : "conservative")
         << " reserve_depth=" << o_.reserve_depth << " preemption=" << (o_.preemption ? "on" : "off")
         << " elastic=" << (o_.elastic ? "on" : "off") << "\n";

    if (fixed.empty()) {
      Time at = 0;
      for (int i = 0; i < o_.jobs; ++i) {
        if (o_.mean_interarrival > 0 && i > 0) at += rng_.Exp(static_cast<double>(o_.mean_interarrival));
        AddJob(at, NewJob(static_cast<JobId>(i + 1)));
      }
    } else {
      for (size_t i = 0; i < fixed.size(); ++i) {
        SimJob j;
        j.spec = fixed[i].second;
        j.runtime = runtimes[i];
        AddJob(fixed[i].first, std::move(j));
      }
    }
    if (o_.failures) AddFailures();
    Loop();
    res_.scenario = scn_.str();
    res_.jobs = std::move(jobs_);
    return std::move(res_);
  }

 private:
  SimResult Error(std::string e) {
    res_.error = std::move(e);
    return std::move(res_);
  }

  SimJob NewJob(JobId id) {
    const Topology& t = sched_->topology();
    SimJob j;
    JobSpec& s = j.spec;
    s.id = id;
    const uint32_t user = o_.one_user ? 0 : static_cast<uint32_t>(rng_.Uniform(0, 7));
    s.user = "u" + std::to_string(user);
    s.account = "a" + std::to_string(user % 3);
    s.priority_class = ClassOf(rng_);
    uint32_t n = SizeOf(rng_, std::min<uint32_t>(o_.max_gpus, static_cast<uint32_t>(t.gpu_count())));
    s.shape.gpus = n;
    const uint32_t gpn = t.max_gpus_per_node();
    const int64_t shape = o_.shapes ? rng_.Uniform(0, 99) : 99;
    if (shape < 15 && n >= gpn) {
      s.shape.gpus_per_node = rng_.Chance(0.7) ? gpn : gpn / 2;
      s.shape.nodes = std::max<uint32_t>(1, n / s.shape.gpus_per_node);
      // Never more nodes than the fabric has (8 half-nodes would not fit the 4-node demo).
      s.shape.nodes = std::min<uint32_t>(s.shape.nodes, static_cast<uint32_t>(t.node_count()));
      s.shape.gpus = s.shape.nodes * s.shape.gpus_per_node;
    } else if (shape < 30 && max_leaf_ > 0 && n <= max_leaf_) {
      s.shape.level = Level::kLeaf;
      s.shape.fit = FitMode::kRequire;
    } else if (shape < 45 && o_.elastic) {
      if (rng_.Chance(0.5)) {
        s.step_kind = ElasticStep::kMultiple;
        s.step = 8;
        s.shape.gpus = std::max<uint32_t>(16, (n + 7) / 8 * 8);
        s.min_gpus = 8;
      } else {
        s.step_kind = ElasticStep::kPowerOfTwo;
        s.shape.gpus = std::max<uint32_t>(2, std::bit_ceil(n));
        s.min_gpus = std::max<uint32_t>(1, s.shape.gpus / 4);
      }
      s.shape.gpus = std::min<uint32_t>(s.shape.gpus, static_cast<uint32_t>(t.gpu_count()) / 8 * 8);
      if (s.min_gpus >= s.shape.gpus) s.min_gpus = 0;
    }
    const int64_t pre = rng_.Uniform(0, 9);
    if (pre < 3) s.preemptible = true;
    else if (pre < 5) s.preemptible = false;
    j.runtime = std::min<Duration>(6 * 3600, 60 + rng_.Exp(900));
    if (o_.exact_walltime) {
      s.walltime = j.runtime;
    } else {
      const int64_t w = rng_.Uniform(0, 9);
      s.walltime = w < 7 ? j.runtime + rng_.Uniform(0, j.runtime) : w < 9 ? (j.runtime / 3600 + 1) * 3600 : j.runtime * 7 / 10;
    }
    if (o_.checkpoints && rng_.Chance(0.3)) s.checkpoint_interval = rng_.Uniform(200, 900);
    return j;
  }

  void AddJob(Time at, SimJob j) {
    Event e{Event::Kind::kSubmit, j.spec.id, 0, {}, NodeState::kUp};
    jobs_.emplace(j.spec.id, std::move(j));
    Push(at, std::move(e));
    if (o_.cancels && rng_.Chance(0.08)) Push(at + rng_.Uniform(1, 4000), Event{Event::Kind::kCancel, e.job, 0, {}, NodeState::kUp});
  }

  void AddFailures() {
    const Topology& t = sched_->topology();
    const Time horizon = std::max<Time>(3600, o_.mean_interarrival * o_.jobs);
    const int count = 2 + static_cast<int>(rng_.Uniform(0, 4));
    for (int i = 0; i < count; ++i) {
      const NodeId n(static_cast<uint32_t>(rng_.Uniform(0, static_cast<int64_t>(t.node_count()) - 1)));
      const std::string name = t.domain(t.node_domain(n)).name;
      const Time at = rng_.Uniform(1, horizon);
      Push(at, Event{Event::Kind::kNode, kNoJob, 0, name, rng_.Chance(0.6) ? NodeState::kDown : NodeState::kDrain});
      Push(at + rng_.Uniform(300, 3000), Event{Event::Kind::kNode, kNoJob, 0, name, NodeState::kUp});
    }
  }

  void Push(Time at, Event e) { events_.emplace(std::make_pair(at, seq_++), std::move(e)); }

  void Fail(const std::string& what) {
    if (!res_.error.empty()) return;
    res_.error = "seed " + std::to_string(o_.seed) + " " + o_.fabric + " t=" + std::to_string(now_) + " pass " +
                 std::to_string(res_.passes) + ": " + what;
  }

  // ---- the loop -------------------------------------------------------------------------------

  void Loop() {
    constexpr int kMaxPasses = 60000;
    Time drain_until = -1;  // set when the events first run out with jobs not done
    while (res_.error.empty() && res_.passes < kMaxPasses) {
      if (events_.empty()) {
        // Nothing runs (a running job always has its end or a tick queued): unless every job is
        // done, pass again later, up to o_.drain after the events ran out.
        const bool all_done = std::all_of(jobs_.begin(), jobs_.end(), [](const auto& kv) { return kv.second.st == SimJob::St::kDone; });
        if (all_done || o_.drain <= 0) break;
        if (drain_until < 0) drain_until = now_ + o_.drain;
        if (now_ + o_.tick > drain_until) break;
        Push(now_ + o_.tick, Event{});
      }
      const Time t = events_.begin()->first.first;
      Accumulate(t);
      now_ = t;
      while (!events_.empty() && events_.begin()->first.first == t) {
        Event e = std::move(events_.begin()->second);
        events_.erase(events_.begin());
        Apply(e);
      }
      if (!res_.error.empty()) break;
      scn_ << "at " << now_ << " schedule\n";
      std::map<JobId, std::string> before;
      for (const auto& [id, r] : sched_->jobs()) before.emplace(id, Record(r));
      std::set<JobId> may_change = MayChange();
      std::vector<Decision> ds = sched_->Schedule(now_);
      ++res_.passes;
      CheckUntouched(ds, before, may_change);
      Check(ds);
      if (active_ > 0 && (events_.empty() || events_.begin()->first.first > now_ + o_.tick)) {
        Push(now_ + o_.tick, Event{});
      }
    }
    res_.end = now_;
    if (res_.passes >= kMaxPasses) Fail("too many passes");
  }

  void Accumulate(Time until) {
    if (until <= now_ || !sched_) return;
    const double dt = static_cast<double>(until - now_);
    const Topology& t = sched_->topology();
    res_.busy_gpu_seconds += dt * static_cast<double>(held_gpus_);
    for (const Level2& lv : levels_) {
      uint32_t best = 0;
      for (DomainId d : lv.domains) best = std::max(best, t.free_gpus(d));
      res_.largest_free_block_seconds[lv.level] += dt * best;
    }
  }

  void Apply(const Event& e) {
    SimJob* j = e.job != kNoJob ? &jobs_.at(e.job) : nullptr;
    switch (e.kind) {
      case Event::Kind::kTick: return;
      case Event::Kind::kSubmit: {
        const JobSpec& s = j->spec;
        scn_ << "at " << now_ << " submit id=" << s.id << " user=" << s.user << " account=" << s.account << " class=" << s.priority_class;
        if (s.shape.nodes > 0) scn_ << " nodes=" << s.shape.nodes << " gpn=" << s.shape.gpus_per_node;
        else scn_ << " gpus=" << s.shape.gpus;
        if (s.min_gpus > 0) scn_ << " min=" << s.min_gpus << " step=" << (s.step_kind == ElasticStep::kPowerOfTwo ? "pow2" : std::to_string(s.step));
        if (s.shape.fit == FitMode::kRequire) scn_ << " level=" << LevelName(s.shape.level);
        if (s.preemptible) scn_ << " preemptible=" << (*s.preemptible ? "yes" : "no");
        if (s.checkpoint_interval > 0) scn_ << " ckpt_every=" << s.checkpoint_interval;
        scn_ << " time=" << s.walltime << "   # runtime " << j->runtime << "\n";
        JobSpec copy = s;
        copy.submit = now_;
        if (auto st = sched_->Submit(std::move(copy), now_); !st) Fail("submit refused: " + st.error().ToString());
        return;
      }
      case Event::Kind::kEnd:
        if (e.gen != j->gen || (j->st != SimJob::St::kRunning && j->st != SimJob::St::kCheckpointing)) return;
        scn_ << "at " << now_ << " end id=" << e.job << "\n";
        if (auto st = sched_->JobEnded(e.job, now_, true); !st) return Fail("end refused: " + st.error().ToString());
        Release(e.job);
        j->st = SimJob::St::kDone;
        j->gen++;
        return;
      case Event::Kind::kCheckpointDone: {
        if (e.gen != j->gen || (j->st != SimJob::St::kRunning && j->st != SimJob::St::kCheckpointing)) return;
        const JobRecord* r = sched_->job(e.job);
        // The job may have been requeued by a node failure whose Preempt is not out yet.
        if (r->state != JobState::kRunning && r->state != JobState::kCheckpointing) return;
        scn_ << "at " << now_ << " checkpoint id=" << e.job << " epoch=" << j->epoch + 1 << "\n";
        if (auto st = sched_->CheckpointDone(e.job, now_, ++j->epoch, "ckpt"); !st) return Fail("checkpoint refused: " + st.error().ToString());
        j->saved += now_ - j->last_ckpt;
        j->last_ckpt = now_;
        if (r->progress != j->saved) Fail("job " + std::to_string(e.job) + ": progress " + std::to_string(r->progress) + " != saved " + std::to_string(j->saved));
        return;
      }
      case Event::Kind::kCancel:
        if (j->st == SimJob::St::kDone || sched_->job(e.job) == nullptr || IsFinal(sched_->job(e.job)->state)) return;
        scn_ << "at " << now_ << " cancel id=" << e.job << "\n";
        if (auto st = sched_->Cancel(e.job, now_); !st) return Fail("cancel refused: " + st.error().ToString());
        Release(e.job);
        j->st = SimJob::St::kDone;
        j->cancelled = true;
        j->gen++;
        return;
      case Event::Kind::kNode: {
        scn_ << "at " << now_ << " node " << e.node << " " << NodeStateName(e.state) << "\n";
        if (auto st = sched_->SetNodeState(e.node, e.state, now_); !st) return Fail("node event refused: " + st.error().ToString());
        const Topology& t = sched_->topology();
        node_state_[t.find_node(e.node).value] = e.state;
        return;
      }
    }
  }

  void Release(JobId id) {
    auto it = ledger_.find(id);
    if (it == ledger_.end()) return;
    for (GpuId g : it->second) owner_[g.value] = kNoJob;
    held_gpus_ -= it->second.size();
    ledger_.erase(it);
    --active_;
  }

  void Take(JobId id, const std::vector<GpuId>& gpus, const char* what) {
    for (GpuId g : gpus) {
      if (g.value >= owner_.size()) return Fail(std::string(what) + " job " + std::to_string(id) + ": GPU out of range");
      if (owner_[g.value] != kNoJob) {
        return Fail(std::string(what) + " job " + std::to_string(id) + ": GPU " + std::to_string(g.value) + " already held by job " +
                    std::to_string(owner_[g.value]));
      }
      owner_[g.value] = id;
    }
    if (!ledger_.contains(id)) ++active_;
    auto& mine = ledger_[id];
    mine.insert(mine.end(), gpus.begin(), gpus.end());
    std::sort(mine.begin(), mine.end());
    held_gpus_ += gpus.size();
  }

  bool LegalSize(const JobSpec& s, size_t n) const {
    if (!o_.elastic || !s.elastic()) return n == s.shape.gpus;
    if (n < s.min_gpus || n > s.shape.gpus) return false;
    if (s.step_kind == ElasticStep::kMultiple) return n % s.step == 0;
    if (s.step_kind == ElasticStep::kPowerOfTwo) return std::has_single_bit(n);
    return true;
  }

  // The shape a Start or Resize must respect (the baselines' placers ignore levels).
  void CheckShape(const JobSpec& s, const std::vector<GpuId>& gpus, const char* what) {
    const Topology& t = sched_->topology();
    const std::string who = std::string(what) + " job " + std::to_string(s.id) + ": ";
    std::map<uint32_t, uint32_t> per_node;
    for (GpuId g : gpus) {
      per_node[t.node_of(g).value]++;
      if (node_state_[t.node_of(g).value] != NodeState::kUp) Fail(who + "GPU on a node that is " + std::string(NodeStateName(node_state_[t.node_of(g).value])));
    }
    if (s.shape.nodes > 0) {
      if (per_node.size() != s.shape.nodes) return Fail(who + "on " + std::to_string(per_node.size()) + " nodes, asked " + std::to_string(s.shape.nodes));
      for (const auto& [n, c] : per_node) {
        if (c != s.shape.gpus_per_node) return Fail(who + "node with " + std::to_string(c) + " GPUs, asked " + std::to_string(s.shape.gpus_per_node));
      }
    }
    if (s.shape.fit == FitMode::kRequire && o_.placement == PlacementMode::kTopology && !gpus.empty()) {
      DomainId top = t.gpu_domain(gpus.front());
      for (GpuId g : gpus) top = t.lowest_common_ancestor(top, t.gpu_domain(g));
      if (t.domain(top).level > s.shape.level) Fail(who + "spans a " + std::string(LevelName(t.domain(top).level)) + ", required " + std::string(LevelName(s.shape.level)));
    }
  }

  // A job record without the fields every pass recomputes (priority, wait).
  static std::string Record(const JobRecord& r) {
    std::ostringstream o;
    const JobSpec& s = r.spec;
    auto ids = [&](const auto& v) {
      for (const auto& x : v) o << x.value << ',';
      o << ';';
    };
    o << s.id << ';' << s.name << ';' << s.user << ';' << s.account << ';' << s.priority_class << ';' << s.shape.gpus << ';'
      << s.shape.nodes << ';' << s.shape.gpus_per_node << ';' << static_cast<int>(s.shape.level) << ';' << static_cast<int>(s.shape.fit)
      << ';' << s.min_gpus << ';' << s.walltime << ';' << s.preemptible.value_or(false) << s.preemptible.has_value() << ';'
      << s.checkpoint_interval << ';' << s.held << ';' << s.submit << ';';
    for (JobId d : s.after_ok) o << d << ',';
    o << '|' << static_cast<int>(r.state) << ';';
    ids(r.gpus);
    o << r.start << ';' << r.end << ';' << r.walltime << ';' << r.class_rank << ';' << r.preemptible << ';' << r.checkpoint_epoch << ';'
      << r.checkpoint_path << ';' << r.last_checkpoint << ';' << r.progress << ';' << r.last_checkpoint_request << ';'
      << r.checkpoint_deadline << ';' << static_cast<int>(r.after_checkpoint) << ';';
    ids(r.shrink_to);
    o << r.preempted_for << ';';
    for (JobId v : r.victims) o << v << ',';
    o << ';';
    ids(r.claim);
    o << r.preemptions << ';' << r.resizes << ';' << r.gpu_seconds_lost << ';' << r.idle_since << ';' << r.run_walltime << ';'
      << r.busbw_gbs;
    return o.str();
  }

  // Jobs Scheduler::Schedule may change without naming them: active, or pending with a claim or victims.
  std::set<JobId> MayChange() const {
    std::set<JobId> out;
    for (const auto& [id, r] : sched_->jobs()) {
      if (r.state == JobState::kRunning || r.state == JobState::kCheckpointing || !r.claim.empty() || !r.victims.empty()) out.insert(id);
    }
    return out;
  }

  // Schedule's contract: other jobs change only through its decisions (and their links).
  void CheckUntouched(const std::vector<Decision>& ds, const std::map<JobId, std::string>& before, std::set<JobId> may) {
    for (const Decision& d : ds) {
      if (d.kind == DecisionKind::kWait) continue;
      may.insert(d.job);
      if (const JobRecord* r = sched_->job(d.job)) {
        may.insert(r->victims.begin(), r->victims.end());
        if (r->preempted_for != kNoJob) may.insert(r->preempted_for);
      }
    }
    for (const auto& [id, r] : sched_->jobs()) {
      if (may.contains(id)) continue;
      auto it = before.find(id);
      if (it == before.end()) return Fail("job " + std::to_string(id) + " appeared during a pass");
      if (it->second != Record(r)) {
        return Fail("job " + std::to_string(id) + " changed during a pass without a decision naming it:\n  before " + it->second +
                    "\n  after  " + Record(r));
      }
    }
  }

  bool IsReserved(JobId id) const {
    for (const Reservation& r : sched_->reservations()) {
      if (r.job == id && !r.for_preemption) return true;
    }
    return false;
  }

  int ClassRank(const std::string& c) const { return c == "low" ? 0 : c == "normal" ? 1 : c == "high" ? 2 : 3; }

  // Checks one pass and acts on it like a glue.
  void Check(const std::vector<Decision>& ds) {
    const Topology& t = sched_->topology();
    if (std::string bad = sched_->CheckInvariants(); !bad.empty()) return Fail("CheckInvariants:\n" + bad);
    std::map<JobId, int> waits;
    for (const Decision& d : ds) {
      res_.log += FormatDecision(d, t);
      res_.log += '\n';
      if (d.at != now_) return Fail("decision at t=" + std::to_string(d.at));
      auto it = jobs_.find(d.job);
      if (it == jobs_.end()) return Fail("decision for unknown job " + std::to_string(d.job));
      SimJob& j = it->second;
      const std::string who = std::string(DecisionKindName(d.kind)) + " job " + std::to_string(d.job) + ": ";
      switch (d.kind) {
        case DecisionKind::kStart: {
          if (j.st != SimJob::St::kPending) return Fail(who + "not pending");
          if (!LegalSize(j.spec, d.gpus.size())) return Fail(who + "illegal size " + std::to_string(d.gpus.size()));
          if (!std::is_sorted(d.gpus.begin(), d.gpus.end())) return Fail(who + "GPUs not sorted");
          CheckShape(j.spec, d.gpus, "start");
          Take(d.job, d.gpus, "start");
          j.st = SimJob::St::kRunning;
          j.preempt_asked = false;
          j.gen++;
          j.run_start = j.last_ckpt = j.started_at = now_;
          j.saved_at_start = j.saved;
          if (j.first_start < 0) {
            j.first_start = now_;
            j.busbw = sched_->job(d.job)->busbw_gbs;
          }
          const Duration remaining = j.runtime - j.saved;
          const Duration limit = std::max<Duration>(1, j.spec.walltime - j.saved);
          Push(now_ + remaining, Event{Event::Kind::kEnd, d.job, j.gen, {}, NodeState::kUp});
          if (limit < remaining) Push(now_ + limit, Event{});
          scn_ << "#   t=" << now_ << " start " << d.job << " -> ends at " << now_ + remaining << "\n";
          break;
        }
        case DecisionKind::kCheckpoint: {
          if (j.st != SimJob::St::kRunning && j.st != SimJob::St::kCheckpointing) return Fail(who + "not running");
          if (d.deadline != now_ + sched_->config().checkpoint_grace) return Fail(who + "deadline " + std::to_string(d.deadline));
          const bool preempt = d.reason.rfind("preempt for job ", 0) == 0, shrink = d.reason.rfind("shrink for job ", 0) == 0;
          if (preempt || shrink) {
            if (!o_.preemption) return Fail(who + "preemption is off");
            const JobId by = std::stoull(d.reason.substr(preempt ? 16 : 15));
            const SimJob& p = jobs_.at(by);
            if (ClassRank(p.spec.priority_class) <= ClassRank(j.spec.priority_class)) return Fail(who + "preemptor " + std::to_string(by) + " not of a higher class");
            if (preempt && !j.spec.preemptible.value_or(ClassRank(j.spec.priority_class) <= 1)) return Fail(who + "not preemptible");
            if (preempt && now_ - j.started_at < 600) return Fail(who + "preempted before its minimum runtime");
            if (shrink && !j.spec.elastic()) return Fail(who + "shrink of a rigid job");
            j.st = SimJob::St::kCheckpointing;
            j.preempt_asked = j.preempt_asked || preempt;
            if (shrink) j.ckpt_request = now_;
          } else if (d.reason != "periodic") {
            return Fail(who + "unknown reason '" + d.reason + "'");
          }
          Push(d.deadline, Event{});
          if (rng_.Chance(0.8)) {
            Push(now_ + rng_.Uniform(1, std::max<Duration>(1, sched_->config().checkpoint_grace - 1)),
                 Event{Event::Kind::kCheckpointDone, d.job, j.gen, {}, NodeState::kUp});
          }
          break;
        }
        case DecisionKind::kPreempt: {
          if (j.st != SimJob::St::kRunning && j.st != SimJob::St::kCheckpointing) return Fail(who + "not running");
          const bool node = d.reason.rfind("node ", 0) == 0;
          if (!node && !j.preempt_asked) return Fail(who + "preempted without a checkpoint request (" + d.reason + ")");
          if (!node && !o_.preemption) return Fail(who + "preemption is off");
          Release(d.job);
          j.st = SimJob::St::kPending;
          j.gen++;
          break;
        }
        case DecisionKind::kResize: {
          if (j.st != SimJob::St::kRunning && j.st != SimJob::St::kCheckpointing) return Fail(who + "not running");
          if (!LegalSize(j.spec, d.gpus.size()) || !j.spec.elastic()) return Fail(who + "illegal size " + std::to_string(d.gpus.size()));
          std::vector<GpuId> expect;
          const std::vector<GpuId> before = ledger_[d.job];
          std::set_difference(before.begin(), before.end(), d.removed.begin(), d.removed.end(), std::back_inserter(expect));
          expect.insert(expect.end(), d.added.begin(), d.added.end());
          std::sort(expect.begin(), expect.end());
          if (expect != d.gpus) return Fail(who + "gpus != before - removed + added");
          for (GpuId g : d.removed) {
            if (!std::binary_search(before.begin(), before.end(), g)) return Fail(who + "removes a GPU it did not hold");
          }
          Release(d.job);
          Take(d.job, d.gpus, "resize");
          if (d.added.empty()) {
            // Every shrink restarts the job on the smaller set from its last checkpoint (the one
            // it just took for the shrink, or an older one after a missed deadline or a node
            // failure: the work since is lost). A new run: its walltime budget starts again.
            j.gen++;
            j.run_start = j.last_ckpt = j.started_at = now_;
            j.saved_at_start = j.saved;
            Push(now_ + (j.runtime - j.saved), Event{Event::Kind::kEnd, d.job, j.gen, {}, NodeState::kUp});
            scn_ << "#   t=" << now_ << " restart " << d.job << " after a shrink -> ends at " << now_ + (j.runtime - j.saved) << "\n";
          }
          if (!d.added.empty()) CheckShape(j.spec, d.added, "resize");
          j.st = SimJob::St::kRunning;
          break;
        }
        case DecisionKind::kKill: {
          if (j.st != SimJob::St::kRunning && j.st != SimJob::St::kCheckpointing) return Fail(who + "not running");
          if (j.spec.walltime >= j.runtime) return Fail(who + "killed though its walltime covers its runtime");
          if (now_ < j.started_at + std::max<Duration>(1, j.spec.walltime - j.saved_at_start)) return Fail(who + "killed before its walltime");
          Release(d.job);
          j.st = SimJob::St::kDone;
          j.gen++;
          break;
        }
        case DecisionKind::kWait: {
          if (j.st != SimJob::St::kPending) return Fail(who + "not pending");
          if (d.wait.kind == WaitKind::kNone) return Fail(who + "reason None");
          if (++waits[d.job] > 1) return Fail(who + "two waits in one pass");
          if (d.wait.predicted_start != kForever && d.wait.predicted_start < now_) return Fail(who + "predicted start in the past");
          if (IsReserved(d.job)) {
            bool match = false;
            for (const Reservation& r : sched_->reservations()) match |= r.job == d.job && r.start == d.wait.predicted_start;
            if (!match) return Fail(who + "predicted start differs from its reservation");
            j.min_promise = std::min(j.min_promise, d.wait.predicted_start);
            if (j.first_promise == kForever) j.first_promise = d.wait.predicted_start;
          }
          if (!o_.preemption && d.wait.kind == WaitKind::kPreempting) return Fail(who + "Preempting with preemption off");
          break;
        }
      }
      if (!res_.error.empty()) return;
    }
    if (std::getenv("PHALANX_SIM_TRACE")) {
      for (const Reservation& r : sched_->reservations()) {
        res_.log += "  reservation job=" + std::to_string(r.job) + " [" + std::to_string(r.start) + "," + std::to_string(r.end) + ") " +
                    (r.for_preemption ? "claim " : "") + FormatGpus(r.gpus, t) + "\n";
      }
    }
    // Whole-state agreement between the ledger and the core.
    for (const auto& [id, j] : jobs_) {
      const JobRecord* r = sched_->job(id);
      if (r == nullptr) continue;  // not submitted yet
      const std::string who = "job " + std::to_string(id) + ": ";
      const bool pending = j.st == SimJob::St::kPending;
      if (pending != (r->state == JobState::kPending)) return Fail(who + "core says " + std::string(JobStateName(r->state)));
      if (pending && waits[id] != 1) return Fail(who + "pending without exactly one wait");
      if ((j.st == SimJob::St::kRunning || j.st == SimJob::St::kCheckpointing) != (r->state == JobState::kRunning || r->state == JobState::kCheckpointing)) {
        return Fail(who + "core says " + std::string(JobStateName(r->state)));
      }
      auto it = ledger_.find(id);
      const std::vector<GpuId> mine = it == ledger_.end() ? std::vector<GpuId>{} : it->second;
      if (mine != r->gpus) return Fail(who + "ledger GPUs " + FormatGpus(mine, t) + " != core " + FormatGpus(r->gpus, t));
    }
  }

  SimOptions o_;
  Rng rng_;
  std::unique_ptr<Scheduler> sched_;
  std::map<std::pair<Time, uint64_t>, Event> events_;
  uint64_t seq_ = 0;
  Time now_ = 0;
  std::map<JobId, SimJob> jobs_;
  std::vector<JobId> owner_;
  std::map<JobId, std::vector<GpuId>> ledger_;
  size_t held_gpus_ = 0;
  size_t active_ = 0;
  std::vector<NodeState> node_state_;
  std::vector<Level2> levels_;
  uint32_t max_leaf_ = 0;
  std::ostringstream scn_;
  SimResult res_;
};

// On failure: the run as a scenario script, for the lead.
std::string Dump(const SimResult& r, const std::string& name) {
  std::string file = name;
  for (char& c : file) if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  const std::string path = ::testing::TempDir() + file + ".scn";
  std::ofstream(path) << r.scenario;
  return r.error + "\n(scenario script written to " + path + ")";
}

std::string ModeName(BackfillMode m) { return m == BackfillMode::kNone ? "none" : m == BackfillMode::kEasy ? "easy" : "conservative"; }

const char* const kFabrics[] = {"demo", "leafspine:16:4:2", "superpod:2:8", "nvl72:2", "mixed"};

// Broken promises of a run: "job J promised t=.., started t=..", one per line.
std::string BrokenPromises(const SimResult& r) {
  std::string broken;
  for (const auto& [id, j] : r.jobs) {
    if (j.min_promise == kForever) continue;
    if (j.first_start < 0 || j.first_start > j.min_promise) {
      broken += "  job " + std::to_string(id) + " promised t=" + std::to_string(j.min_promise) + " (first promise t=" +
                std::to_string(j.first_promise) + "), started t=" + std::to_string(j.first_start) + "\n";
    }
  }
  return broken;
}

// Greedy shrinking of a run whose jobs are all submitted at t=0 that breaks a promise: drops
// jobs one at a time while some promise stays broken. Returns the smallest run found.
SimResult ShrinkPromiseFailure(const SimOptions& o, const SimResult& failing) {
  std::vector<std::pair<Time, JobSpec>> jobs;
  std::vector<Duration> runtimes;
  for (const auto& [id, j] : failing.jobs) {
    jobs.push_back({0, j.spec});
    runtimes.push_back(j.runtime);
  }
  SimResult best = failing;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto j2 = jobs;
      auto r2 = runtimes;
      j2.erase(j2.begin() + static_cast<std::ptrdiff_t>(i));
      r2.erase(r2.begin() + static_cast<std::ptrdiff_t>(i));
      SimResult r = SimRun(o).Run(j2, r2);
      if (r.error.empty() && !BrokenPromises(r).empty()) {
        jobs = std::move(j2);
        runtimes = std::move(r2);
        best = std::move(r);
        progress = true;
        --i;
      }
    }
  }
  return best;
}

// ---- 1. every pass of random runs ---------------------------------------------------------------

class RandomRuns : public ::testing::TestWithParam<std::tuple<const char*, BackfillMode>> {};

TEST_P(RandomRuns, EveryPassKeepsTheLedgerAndTheCoreInAgreement) {
  const auto [fabric, mode] = GetParam();
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    SimOptions o;
    o.fabric = fabric;
    o.seed = seed * 7919 + static_cast<uint32_t>(mode);
    o.backfill = mode;
    o.jobs = 120;
    o.mean_interarrival = 45;
    o.failures = true;
    o.cancels = true;
    o.checkpoints = true;
    o.preemption = seed != 3;
    o.placement = seed == 2 ? PlacementMode::kFirstFit : PlacementMode::kTopology;
    SimResult r = SimRun(o).Run();
    ASSERT_TRUE(r.error.empty()) << Dump(r, "random_" + o.fabric + "_" + std::to_string(o.seed));
    // Liveness: the workload is feasible (every job fits the fabric, and every node that goes
    // down comes back), so the run ends with every job done: ended, killed at its walltime, or
    // cancelled, and every job that was not cancelled ran. The loop keeps passing for a day of
    // simulated time after the events run out (SimOptions::drain), so a job the scheduler never
    // starts is left pending here.
    ASSERT_EQ(r.jobs.size(), static_cast<size_t>(o.jobs));
    std::string not_done;
    for (const auto& [id, j] : r.jobs) {
      if (j.st != SimJob::St::kDone) {
        not_done += " " + std::to_string(id) + (j.st == SimJob::St::kPending ? "(pending, " : "(running, ") +
                    std::to_string(j.spec.shape.gpus) + " GPUs, class " + j.spec.priority_class + ")";
      } else if (!j.cancelled && j.first_start < 0) {
        not_done += " " + std::to_string(id) + "(done without ever starting)";
      }
    }
    EXPECT_EQ(not_done, "") << "seed " << o.seed << " " << fabric << " " << ModeName(mode) << ": jobs not done at t=" << r.end
                            << ":" << not_done << "\n" << Dump(r, "random_" + o.fabric + "_" + std::to_string(o.seed));
    if (std::getenv("PHALANX_SIM_TRACE")) std::cout << r.log;
  }
}

INSTANTIATE_TEST_SUITE_P(Fabrics, RandomRuns,
                         ::testing::Combine(::testing::ValuesIn(kFabrics),
                                            ::testing::Values(BackfillMode::kNone, BackfillMode::kEasy, BackfillMode::kConservative)),
                         [](const auto& info) {
                           std::string n = std::string(std::get<0>(info.param)) + "_" + ModeName(std::get<1>(info.param));
                           for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(SchedulerProperty, SameSeedSameDecisionsByteForByte) {
  for (BackfillMode mode : {BackfillMode::kEasy, BackfillMode::kConservative}) {
    SimOptions o;
    o.fabric = "mixed";
    o.seed = 4242;
    o.backfill = mode;
    o.failures = o.cancels = o.checkpoints = true;
    const SimResult a = SimRun(o).Run(), b = SimRun(o).Run();
    ASSERT_TRUE(a.error.empty()) << Dump(a, "determinism");
    EXPECT_GT(a.log.size(), 1000u);
    EXPECT_TRUE(a.log == b.log) << "two runs of seed 4242 (" << ModeName(mode) << ") differ";
  }
}

// ---- 2. reservations are honoured ---------------------------------------------------------------
//
// The property: with exact walltimes (every job ends exactly at start + walltime), no
// preemption, no cancels, no node failures, and a queue order that never changes during the run
// (all jobs submitted at t=0 by one user in one account, so age and fairshare shift every job's
// priority by the same amount and the order is class, then size, then id), no job that arrives
// later can outrank a reserved one. Then a reservation is a promise: if at any pass the
// scheduler reserved GPUs for job J starting at time s (J in reservations(), its Wait says
// start=s), J starts at or before s. We assert start(J) <= the earliest such s. With EASY only
// the head job is reserved; with conservative the first reserve_depth blocked jobs are.
class Promises : public ::testing::TestWithParam<std::tuple<const char*, BackfillMode>> {};

TEST_P(Promises, NoJobStartsLaterThanItsReservation) {
  const auto [fabric, mode] = GetParam();
  int promised = 0;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SimOptions o;
    o.fabric = fabric;
    o.seed = seed * 104729 + static_cast<uint32_t>(mode);
    o.backfill = mode;
    o.jobs = 80;
    o.mean_interarrival = 0;
    o.exact_walltime = true;
    o.preemption = false;
    o.one_user = true;
    o.elastic = std::getenv("PHALANX_PROMISE_RIGID") == nullptr;
    SimResult r = SimRun(o).Run();
    ASSERT_TRUE(r.error.empty()) << Dump(r, "promise_" + o.fabric + "_" + std::to_string(o.seed));
    for (const auto& [id, j] : r.jobs) promised += j.min_promise != kForever;
    const std::string broken = BrokenPromises(r);
    if (broken.empty()) continue;
    if (!std::getenv("PHALANX_SHRINK")) {
      ADD_FAILURE() << "seed " << o.seed << " " << fabric << " " << ModeName(mode) << ": reservations broken\n"
                    << broken << Dump(r, "promise_" + o.fabric + "_" + std::to_string(o.seed))
                    << "\n(set PHALANX_SHRINK=1 for the smallest reproducer)";
      continue;
    }
    const SimResult small = ShrinkPromiseFailure(o, r);
    ADD_FAILURE() << "seed " << o.seed << " " << fabric << " " << ModeName(mode) << ": reservations broken\n"
                  << broken << "smallest reproducer (" << small.jobs.size() << " jobs):\n"
                  << BrokenPromises(small) << small.scenario << "\n" << small.log;
  }
  EXPECT_GT(promised, 0);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, Promises,
                         ::testing::Combine(::testing::ValuesIn(kFabrics), ::testing::Values(BackfillMode::kEasy, BackfillMode::kConservative)),
                         [](const auto& info) {
                           std::string n = std::string(std::get<0>(info.param)) + "_" + ModeName(std::get<1>(info.param));
                           for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });


// ---- 3. no starvation of a large gang under a stream of small jobs ------------------------------
//
// A 112-GPU job (of 128) arrives at t=600 into a cluster kept full by a stream of 1-8 GPU jobs
// that arrive faster than they finish (about twice the cluster's capacity), all with exact
// walltimes of at most 1800 s. With EASY and conservative backfill the large job is the head of
// the queue (oldest, largest, its user has no usage), so it gets a reservation that backfill may
// not delay: it must start by its first promise and within 1800 s of its arrival. The contrast:
// with no backfill (strict order) it starts no later, but while it waits no small job starts at
// all, so the GPUs the large job waits for sit idle; backfill runs small jobs in that window.
struct StarvationRun {
  Time big_start = -1, big_promise = kForever;
  size_t small_started_while_waiting = 0;
  double idle_gpu_seconds_while_waiting = 0;
  std::string error;
};

StarvationRun RunStarvation(BackfillMode mode) {
  constexpr JobId kBig = 100000;
  constexpr Time kBigAt = 600;
  SimOptions o;
  o.fabric = "leafspine:16:4:2";
  o.backfill = mode;
  o.preemption = false;
  o.elastic = false;
  o.exact_walltime = true;
  Rng rng(2024);
  std::vector<std::pair<Time, JobSpec>> jobs;
  std::vector<Duration> runtimes;
  std::map<JobId, Time> arrival;
  Time at = 0;
  for (JobId id = 1; at < 3600; ++id) {
    at += rng.Exp(15);
    if (at >= kBigAt && !arrival.contains(kBig)) {
      JobSpec big;
      big.id = kBig;
      big.user = "big";
      big.account = "big";
      big.shape.gpus = 112;
      big.walltime = 3600;
      jobs.push_back({kBigAt, big});
      runtimes.push_back(3600);
      arrival[kBig] = kBigAt;
    }
    JobSpec s;
    s.id = id;
    s.user = "s" + std::to_string(rng.Uniform(0, 9));
    s.account = "small";
    s.shape.gpus = static_cast<uint32_t>(rng.Uniform(1, 8));
    s.walltime = rng.Uniform(300, 1800);
    jobs.push_back({at, s});
    runtimes.push_back(s.walltime);
    arrival[id] = at;
  }
  SimResult r = SimRun(o).Run(jobs, runtimes);
  StarvationRun out;
  out.error = r.error;
  const SimJob& big = r.jobs.at(kBig);
  out.big_start = big.first_start;
  out.big_promise = big.first_promise;
  const Time from = kBigAt, to = big.first_start < 0 ? r.end : big.first_start;
  double busy = 0;
  for (const auto& [id, j] : r.jobs) {
    if (id == kBig || j.first_start < 0) continue;
    out.small_started_while_waiting += j.first_start >= from && j.first_start < to;
    const Time a = std::max(from, j.first_start), b = std::min(to, j.first_start + j.runtime);
    if (b > a) busy += static_cast<double>(b - a) * j.spec.shape.gpus;
  }
  out.idle_gpu_seconds_while_waiting = 128.0 * static_cast<double>(to - from) - busy;
  return out;
}

TEST(SchedulerProperty, LargeGangIsNotStarvedByAStreamOfSmallJobs) {
  std::map<BackfillMode, StarvationRun> runs;
  for (BackfillMode mode : {BackfillMode::kNone, BackfillMode::kEasy, BackfillMode::kConservative}) {
    StarvationRun r = RunStarvation(mode);
    ASSERT_TRUE(r.error.empty()) << ModeName(mode) << ": " << r.error;
    std::cout << "backfill=" << ModeName(mode) << ": 112-GPU job submitted t=600, first promise t="
              << (r.big_promise == kForever ? std::string("-") : std::to_string(r.big_promise)) << ", started t=" << r.big_start
              << "; small jobs started while it waited: " << r.small_started_while_waiting
              << ", idle GPU-hours while it waited: " << r.idle_gpu_seconds_while_waiting / 3600.0 << "\n";
    ASSERT_GE(r.big_start, 600) << ModeName(mode) << ": the large job never started";
    EXPECT_LE(r.big_start, 600 + 1800) << ModeName(mode);
    runs[mode] = r;
  }
  for (BackfillMode mode : {BackfillMode::kEasy, BackfillMode::kConservative}) {
    const StarvationRun& r = runs[mode];
    EXPECT_NE(r.big_promise, kForever) << ModeName(mode) << ": the head job got no reservation";
    EXPECT_LE(r.big_start, r.big_promise) << ModeName(mode) << ": started after its promise";
    EXPECT_GT(r.small_started_while_waiting, 0u) << ModeName(mode) << ": backfill ran nothing";
    EXPECT_LT(r.idle_gpu_seconds_while_waiting, runs[BackfillMode::kNone].idle_gpu_seconds_while_waiting) << ModeName(mode);
  }
  EXPECT_EQ(runs[BackfillMode::kNone].small_started_while_waiting, 0u) << "strict order let a small job pass";
}

// ---- 4. fragmentation-aware choice, measured --------------------------------------------------
//
// Among placements of equal bandwidth the placer picks the fullest domains (best fit). The same
// seeded workload (plain GPU counts, the size mix of SizeOf, ~90% offered load) is played with
// best-fit and with worst-fit tie-breaking (the same bandwidth objective, ties broken towards the
// emptiest domains) and, for context, with first-fit placement (no topology). Measured: the time
// average of the largest free block at each level (max over the level's domains of free GPUs).
// Claim: best fit keeps larger node- and leaf-level blocks than worst fit.
TEST(SchedulerProperty, BestFitTieBreakingKeepsLargerFreeBlocks) {
  for (const char* fabric : {"superpod:2:8", "leafspine:16:4:2"}) {
    struct Sum {
      std::map<Level, double> block_seconds;
      double seconds = 0, busy = 0, gpus = 0, busbw_weighted = 0, multi_node_gpus = 0;
    };
    const std::vector<std::pair<std::string, std::pair<PlacementMode, bool>>> variants = {
        {"topology, best fit ", {PlacementMode::kTopology, true}},
        {"topology, worst fit", {PlacementMode::kTopology, false}},
        {"first fit          ", {PlacementMode::kFirstFit, true}}};
    std::map<std::string, Sum> sums;
    for (const auto& [name, v] : variants) {
      for (uint32_t seed : {77u, 78u, 79u, 80u, 81u, 82u, 83u, 84u}) {
        SimOptions o;
        o.fabric = fabric;
        o.seed = seed;
        o.placement = v.first;
        o.best_fit = v.second;
        o.backfill = BackfillMode::kConservative;
        o.preemption = false;
        o.elastic = false;
        o.shapes = false;
        o.jobs = 300;
        o.mean_interarrival = 135;
        SimResult r = SimRun(o).Run();
        ASSERT_TRUE(r.error.empty()) << Dump(r, "fragmentation");
        Sum& s = sums[name];
        for (const auto& [level, val] : r.largest_free_block_seconds) s.block_seconds[level] += val;
        s.seconds += static_cast<double>(r.end);
        s.busy += r.busy_gpu_seconds;
        s.gpus = static_cast<double>(r.gpus);
        for (const auto& [id, j] : r.jobs) {
          if (j.first_start < 0 || j.spec.shape.gpus <= 8) continue;
          s.busbw_weighted += j.busbw * j.spec.shape.gpus;
          s.multi_node_gpus += j.spec.shape.gpus;
        }
      }
    }
    std::cout << fabric << ", 3 seeds x 300 jobs, time-averaged largest free block (GPUs):\n";
    for (const auto& [name, v] : variants) {
      const Sum& s = sums[name];
      std::cout << "  " << name << ":";
      for (const auto& [level, val] : s.block_seconds) std::cout << " " << LevelName(level) << " " << val / s.seconds;
      std::cout << "  | utilization " << 100.0 * s.busy / (s.seconds * s.gpus) << "%, mean busbw of >8-GPU jobs "
                << s.busbw_weighted / s.multi_node_gpus << " GB/s\n";
    }
    const Sum &best = sums[variants[0].first], &worst = sums[variants[1].first];
    for (Level level : {Level::kNode, Level::kLeaf}) {
      EXPECT_GT(best.block_seconds.at(level) / best.seconds, worst.block_seconds.at(level) / worst.seconds)
          << fabric << " " << LevelName(level) << ": best-fit tie-breaking should keep larger free blocks";
    }
    // The bandwidth objective itself is what separates topology placement from first fit.
    EXPECT_GT(best.busbw_weighted / best.multi_node_gpus, sums[variants[2].first].busbw_weighted / sums[variants[2].first].multi_node_gpus);
  }
}

}  // namespace
}  // namespace phalanx
