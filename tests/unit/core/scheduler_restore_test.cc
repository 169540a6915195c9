// Scheduler::Restore / FinishRestore (rebuilding the core from the store after a restart);
// Scheduler::ValidateSpec has its own file (scheduler_validate_spec_test.cc).
//
// The strongest check: a scheduler restored from another's records (the fields the store keeps;
// the core's own fields cleared) makes the same decisions, FormatDecision text for text, as the
// original for the same further events, pass after pass. The core keeps a little soft state
// that the store does not save (docs/scheduling.md, "Restoring after a restart"): the blocks
// promised in the last pass, the elastic idle clock, fairshare usage and the traffic history of
// the fabric on oversubscribed links. The configurations here give fairshare no weight, and
// exact comparisons start only where the rest provably cannot differ (QuietPoint, SameTraffic);
// at every other snapshot the restored state is compared field by field and one pass run on it
// is checked. Dedicated tests cover the traffic, the idle clock, errors and dangling links.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sched/scheduler.h"
#include "core/topology/node_models.h"
#include "scheduler_test_util.h"

namespace phalanx {
namespace {

using testing::Dump;
using testing::Ids;
using testing::Job;
using testing::Make;
using testing::Persistent;
using testing::TestConfig;

// ---- builders and views -------------------------------------------------------------------------

// Differences in jobs, GPU owners and node states; empty when the two agree.
std::string StateDiff(const Scheduler& a, const Scheduler& b) {
  std::ostringstream out;
  if (a.jobs().size() != b.jobs().size()) out << a.jobs().size() << " jobs vs " << b.jobs().size() << "\n";
  for (const auto& [id, ja] : a.jobs()) {
    const JobRecord* jb = b.job(id);
    if (jb == nullptr) {
      out << "job " << id << " missing\n";
      continue;
    }
    if (Persistent(ja) != Persistent(*jb))
      out << "job " << id << ":\n  " << Persistent(ja) << "\n  " << Persistent(*jb) << "\n";
  }
  const Topology &ta = a.topology(), &tb = b.topology();
  for (uint32_t g = 0; g < ta.gpu_count(); ++g) {
    if (ta.owner(GpuId(g)) != tb.owner(GpuId(g)))
      out << "GPU " << g << " owner " << ta.owner(GpuId(g)) << " vs " << tb.owner(GpuId(g)) << "\n";
  }
  for (uint32_t n = 0; n < ta.node_count(); ++n) {
    if (ta.node_state(NodeId(n)) != tb.node_state(NodeId(n))) out << "node " << n << " state differs\n";
  }
  return out.str();
}

// What the store gives back: every record with the fields the core recomputes cleared.
std::vector<JobRecord> Records(const Scheduler& s) {
  std::vector<JobRecord> out;
  for (const auto& [id, j] : s.jobs()) {
    JobRecord r = j;
    r.priority = 0;
    r.class_rank = 0;
    r.preemptible = false;
    r.wait = {};
    r.busbw_gbs = 0;
    out.push_back(std::move(r));
  }
  return out;
}

enum class Order { kById, kReversed, kShuffled };

// The daemon's restart: node states first, then every record in `order`, then FinishRestore.
std::unique_ptr<Scheduler> RestoreFrom(const TopologySpec& spec, const Scheduler& from, Order order,
                                       uint32_t seed = 1) {
  auto s = Make(spec, from.config());
  const Time now = from.now();
  const Topology& t = from.topology();
  for (uint32_t n = 0; n < t.node_count(); ++n) {
    const NodeState st = t.node_state(NodeId(n));
    if (st == NodeState::kUp) continue;
    if (auto r = s->SetNodeState(t.domain(t.node_domain(NodeId(n))).name, st, now); !r)
      ADD_FAILURE() << r.error().ToString();
  }
  std::vector<JobRecord> records = Records(from);
  if (order == Order::kReversed) std::reverse(records.begin(), records.end());
  if (order == Order::kShuffled) std::shuffle(records.begin(), records.end(), std::mt19937(seed));
  for (JobRecord& r : records) {
    if (auto st = s->Restore(std::move(r), now); !st) ADD_FAILURE() << "restore: " << st.error().ToString();
  }
  auto notes = s->FinishRestore(now);
  if (!notes) {
    ADD_FAILURE() << notes.error().ToString();
  } else {
    for (const std::string& n : *notes) ADD_FAILURE() << "unexpected note: " << n;
  }
  return s;
}

std::string Format(const std::vector<Decision>& ds, const Topology& t) {
  std::string out;
  for (const Decision& d : ds) out += FormatDecision(d, t) + "\n";
  return out;
}

// After the pass that returned `ds`, the soft state the store does not keep cannot make a
// restored copy differ from `original`: no blocks were promised in that pass (they steer the
// next one), and the elastic idle clock restarted at that pass in the original too (a job
// waited for GPUs, or none were free; FinishRestore restarts it at `now`), unless growth does
// not wait at all. The traffic is checked once the copy exists (SameTraffic).
bool QuietPoint(const Scheduler& original, const std::vector<Decision>& ds) {
  for (const Reservation& r : original.reservations()) {
    if (!r.for_preemption) return false;
  }
  const Topology& t = original.topology();
  const SchedulerConfig& c = original.config();
  if (c.elastic && c.grow_after_idle > 0 && t.free_gpus(t.root()) > 0) {
    for (const Decision& d : ds) {
      const WaitKind k = d.wait.kind;
      if (d.kind == DecisionKind::kWait &&
          (k == WaitKind::kPriority || k == WaitKind::kResources || k == WaitKind::kTopologyBlock ||
           k == WaitKind::kReservedFor || k == WaitKind::kPreempting)) {
        return true;  // blocked
      }
    }
    return false;
  }
  return true;
}

// Recomputing the traffic gave what the original charged (placements depend on it).
bool SameTraffic(const Scheduler& original, const Scheduler& restored) {
  for (const auto& [id, j] : original.jobs()) {
    if (!j.gpus.empty() && original.topology().job_ring_gbs(id) != restored.topology().job_ring_gbs(id)) return false;
  }
  return true;
}

// ---- a glue driving an original scheduler and its restored copies with the same events ----------

constexpr uint64_t kCurrentRun = ~uint64_t{0};

struct Ev {
  enum class Kind { kSubmit, kEnd, kCheckpointDone, kCancel, kRelease, kNode, kTick } kind = Kind::kTick;
  JobId job = kNoJob;
  uint64_t gen = 0;  // run generation: events of an older run are dropped
  bool success = true;
  std::string node;
  NodeState state = NodeState::kUp;
  JobSpec spec;
};

Ev MakeEv(Ev::Kind kind, JobId job = kNoJob, uint64_t gen = 0) {
  Ev e;
  e.kind = kind;
  e.job = job;
  e.gen = gen;
  return e;
}

Ev EndEv(JobId job, uint64_t gen, bool success) {
  Ev e = MakeEv(Ev::Kind::kEnd, job, gen);
  e.success = success;
  return e;
}

Ev NodeEv(std::string node, NodeState state) {
  Ev e = MakeEv(Ev::Kind::kNode);
  e.node = std::move(node);
  e.state = state;
  return e;
}

class Driver {
 public:
  Driver(TopologySpec spec, SchedulerConfig config, uint32_t seed)
      : spec_(std::move(spec)), a_(Make(spec_, config)), rng_(seed) {
    // Without oversubscribed links a ring's prediction never depends on other jobs' traffic, so
    // the recomputed traffic must equal the original's; with them it depends on the history.
    const Topology& t = a_->topology();
    for (uint32_t d = 0; d < t.domain_count(); ++d)
      exact_traffic_ = exact_traffic_ && t.domain(DomainId(d)).oversubscription <= 1.0;
  }

  Scheduler& original() { return *a_; }
  void At(Time t, Ev e) { events_.emplace(std::make_pair(t, seq_++), std::move(e)); }
  void SetRuntime(JobId job, Duration runtime) { runtime_[job] = runtime; }
  // Probability that a job answers a checkpoint request before its deadline.
  void set_checkpoint_answers(double p) { answer_ = p; }

  // A copy restored from the original's records now (after a pass). The restored state must
  // equal the original's. With `compare`, at a QuietPoint with the same traffic, the copy is
  // kept and compared with the original at each of the next `passes` passes (returns true);
  // otherwise one pass is run on it and checked for consistency.
  bool Fork(Order order, bool compare = true, int passes = 400) {
    auto b = RestoreFrom(spec_, *a_, order, static_cast<uint32_t>(rng_()));
    ++restores_;
    if (std::string d = StateDiff(*a_, *b); !d.empty())
      ADD_FAILURE() << "t=" << a_->now() << ": restored state differs\n" << d;
    if (std::string bad = b->CheckInvariants(); !bad.empty())
      ADD_FAILURE() << "t=" << a_->now() << ": restored invariants\n" << bad;
    const bool same_traffic = SameTraffic(*a_, *b);
    if (exact_traffic_ && !same_traffic) {
      ADD_FAILURE() << "t=" << a_->now() << ": recomputed traffic differs on a fabric without oversubscription";
    }
    if (!compare || !QuietPoint(*a_, last_) || !same_traffic) {
      b->Schedule(a_->now());
      if (std::string bad = b->CheckInvariants(); !bad.empty())
        ADD_FAILURE() << "t=" << a_->now() << ": after a pass\n" << bad;
      return false;
    }
    forks_.push_back({std::move(b), a_->now(), passes});
    return true;
  }
  bool quiet() const { return QuietPoint(*a_, last_); }

  // Runs events and a pass at every event time until no event is left or `until`; reacts to
  // the original's decisions as a glue would. `after_pass` may fork.
  void Run(Time until, const std::function<void(const std::vector<Decision>&)>& after_pass = {}) {
    while (!events_.empty() && events_.begin()->first.first <= until && !::testing::Test::HasFatalFailure()) {
      const Time now = events_.begin()->first.first;
      while (!events_.empty() && events_.begin()->first.first == now) {
        Ev e = std::move(events_.begin()->second);
        events_.erase(events_.begin());
        ApplyEvent(now, e);
      }
      const std::vector<Decision> ds = Pass(now);
      React(now, ds);
      if (after_pass) after_pass(ds);
    }
  }

  std::vector<Decision> Pass(Time now) {
    std::vector<Decision> ds = a_->Schedule(now);
    ++passes_;
    if (std::string bad = a_->CheckInvariants(); !bad.empty())
      ADD_FAILURE() << "t=" << now << ": original invariants\n" << bad;
    last_ = ds;
    const std::string text = Format(ds, a_->topology());
    for (auto it = forks_.begin(); it != forks_.end();) {
      const std::string other = Format(it->s->Schedule(now), it->s->topology());
      std::string diff = other == text ? StateDiff(*a_, *it->s) : "";
      if (other != text) diff = "decisions differ:\n--- original\n" + text + "--- restored\n" + other;
      if (!diff.empty()) {
        ADD_FAILURE() << "copy restored at t=" << it->at << " diverges at t=" << now << ": " << diff;
        it = forks_.erase(it);
        continue;
      }
      ++compared_passes_;
      it = --it->passes_left > 0 ? it + 1 : forks_.erase(it);
    }
    return ds;
  }

  int passes() const { return passes_; }
  int restores() const { return restores_; }
  int compared_passes() const { return compared_passes_; }
  size_t forks() const { return forks_.size(); }

 private:
  // Applies `f` to the original and every copy; all must agree on the outcome.
  template <typename F>
  void All(Time now, const char* what, F f, bool may_refuse = false) {
    const Status first = f(*a_);
    if (!first && !may_refuse) ADD_FAILURE() << "t=" << now << " " << what << " refused: " << first.error().ToString();
    for (const Fork_& b : forks_) {
      const Status s = f(*b.s);
      if (s.has_value() != first.has_value() || (!s && s.error().ToString() != first.error().ToString())) {
        ADD_FAILURE() << "t=" << now << " " << what << ": the restored copy answered differently";
      }
    }
  }

  void ApplyEvent(Time now, const Ev& e) {
    const JobRecord* j = e.job != kNoJob ? a_->job(e.job) : nullptr;
    const bool active = j && (j->state == JobState::kRunning || j->state == JobState::kCheckpointing);
    switch (e.kind) {
      case Ev::Kind::kTick: return;
      case Ev::Kind::kSubmit:  // may hit the pending-job limit
        return All(
            now, "submit", [&](Scheduler& s) { return s.Submit(e.spec, now); }, true);
      case Ev::Kind::kEnd:
        if (!active || gen_[e.job] != e.gen) return;
        gen_[e.job]++;
        return All(now, "end", [&](Scheduler& s) { return s.JobEnded(e.job, now, e.success); });
      case Ev::Kind::kCheckpointDone: {
        if (!active || (e.gen != kCurrentRun && gen_[e.job] != e.gen)) return;
        const uint64_t epoch = j->checkpoint_epoch + 1;
        return All(now, "checkpoint",
                   [&](Scheduler& s) { return s.CheckpointDone(e.job, now, epoch, "ckpt-" + std::to_string(epoch)); });
      }
      case Ev::Kind::kCancel:
        if (!j || IsFinal(j->state)) return;
        gen_[e.job]++;
        return All(now, "cancel", [&](Scheduler& s) { return s.Cancel(e.job, now); });
      case Ev::Kind::kRelease:
        if (!j || j->state != JobState::kPending || !j->spec.held) return;
        return All(now, "release", [&](Scheduler& s) { return s.Release(e.job, now); });
      case Ev::Kind::kNode: return All(now, "node", [&](Scheduler& s) { return s.SetNodeState(e.node, e.state, now); });
    }
  }

  Duration Remaining(JobId id) {
    const JobRecord* j = a_->job(id);
    auto it = runtime_.find(id);
    const Duration runtime = it == runtime_.end() ? 3600 : it->second;
    return std::max<Duration>(1, runtime - j->progress);
  }

  void React(Time now, const std::vector<Decision>& ds) {
    for (const Decision& d : ds) {
      const JobRecord* j = a_->job(d.job);
      switch (d.kind) {
        case DecisionKind::kStart:
          gen_[d.job]++;
          At(now + Remaining(d.job), EndEv(d.job, gen_[d.job], rng_() % 20 != 0));
          At(j->expected_end(), Ev{});  // the walltime timer
          break;
        case DecisionKind::kCheckpoint:
          At(d.deadline, Ev{});
          if (static_cast<double>(rng_() % 1000) < answer_ * 1000) {
            At(now + 1 + static_cast<Time>(rng_() % 200), MakeEv(Ev::Kind::kCheckpointDone, d.job, gen_[d.job]));
          }
          break;
        case DecisionKind::kResize:
          if (d.added.empty()) {  // a shrink restarts the job from its checkpoint
            gen_[d.job]++;
            At(now + Remaining(d.job), EndEv(d.job, gen_[d.job], true));
            At(j->expected_end(), Ev{});
          }
          break;
        case DecisionKind::kPreempt:
        case DecisionKind::kKill: gen_[d.job]++; break;
        case DecisionKind::kWait: break;
      }
    }
    // A pass at least every 60 s while jobs run (growth, periodic checkpoints).
    bool running = false;
    for (const auto& [id, j] : a_->jobs()) running = running || !j.gpus.empty();
    if (running && (events_.empty() || events_.begin()->first.first > now + 60)) At(now + 60, Ev{});
  }

  struct Fork_ {
    std::unique_ptr<Scheduler> s;
    Time at;
    int passes_left;
  };
  TopologySpec spec_;
  std::unique_ptr<Scheduler> a_;
  std::vector<Fork_> forks_;
  std::vector<Decision> last_;  // the decisions of the last pass
  std::map<std::pair<Time, uint64_t>, Ev> events_;
  uint64_t seq_ = 0;
  std::map<JobId, uint64_t> gen_;
  std::map<JobId, Duration> runtime_;
  double answer_ = 0.8;
  bool exact_traffic_ = true;
  std::mt19937 rng_;
  int passes_ = 0, restores_ = 0, compared_passes_ = 0;
};

Ev Submit(JobSpec spec) {
  Ev e = MakeEv(Ev::Kind::kSubmit, spec.id);
  e.spec = std::move(spec);
  return e;
}

// The job reports a checkpoint at that time, whatever run it is in.
Ev CheckpointDone(JobId job) { return MakeEv(Ev::Kind::kCheckpointDone, job, kCurrentRun); }

// ---- 1. a scripted scenario ---------------------------------------------------------------------
//
// On the demo cluster (4 DGX H100, 32 GPUs): a low-priority job, an elastic job at 16 GPUs, a
// job that finishes, one that depends on it, one that depends on it and a running job, a held
// job; then an urgent 24-GPU job preempts at t=700. Snapshot there (victims checkpointing, the
// urgent job Preempting), restore in three orders, and play the same events on all four
// schedulers until the queue drains.
TEST(SchedulerRestore, ScriptedScenarioContinuesIdentically) {
  SchedulerConfig c = TestConfig();
  c.grow_after_idle = 120;
  Driver drv(DemoCluster(), c, 7);
  drv.set_checkpoint_answers(0);  // scripted below
  JobSpec low = Job(1, 8, "low", "alice");
  low.preemptible = true;
  JobSpec elastic = Job(2, 16, "normal", "bob");
  elastic.min_gpus = 8;
  elastic.step_kind = ElasticStep::kMultiple;
  elastic.step = 8;
  JobSpec first = Job(3, 8, "normal", "carol");
  JobSpec held = Job(5, 2, "normal", "dave");
  held.held = true;
  JobSpec after = Job(4, 4, "normal", "carol");
  after.after_ok = {3};
  JobSpec urgent = Job(6, 24, "urgent", "erin");
  JobSpec chained = Job(7, 2, "normal", "carol");
  chained.after_ok = {3, 1};  // a finished job and a running one
  drv.SetRuntime(1, 4000);
  drv.SetRuntime(2, 5000);
  drv.SetRuntime(3, 100);
  drv.SetRuntime(4, 3000);
  drv.SetRuntime(5, 600);
  drv.SetRuntime(6, 1500);
  drv.SetRuntime(7, 300);
  for (const JobSpec& s : {low, elastic, first, held}) drv.At(0, Submit(s));
  drv.At(50, Submit(after));
  drv.At(60, Submit(chained));
  drv.At(700, Submit(urgent));
  drv.Run(700);

  Scheduler& a = drv.original();
  ASSERT_EQ(a.now(), 700);
  EXPECT_EQ(a.job(3)->state, JobState::kCompleted);
  EXPECT_NE(a.job(4)->gpus.size(), 0u);
  EXPECT_EQ(a.job(6)->state, JobState::kPending);
  EXPECT_EQ(a.job(6)->wait.kind, WaitKind::kPreempting) << a.job(6)->wait.ToString();
  EXPECT_FALSE(a.job(6)->victims.empty());
  bool shrink = false, preempt = false;
  for (JobId v : a.job(6)->victims) {
    EXPECT_EQ(a.job(v)->state, JobState::kCheckpointing);
    EXPECT_EQ(a.job(v)->preempted_for, 6u);
    shrink = shrink || a.job(v)->after_checkpoint == JobRecord::After::kShrink;
    preempt = preempt || a.job(v)->after_checkpoint == JobRecord::After::kPreempt;
  }
  EXPECT_TRUE(shrink) << "the elastic job should be shrunk";
  EXPECT_TRUE(preempt) << "a rigid job should be preempted";
  EXPECT_TRUE(a.job(5)->spec.held);
  EXPECT_EQ(a.job(7)->wait.kind, WaitKind::kDependency) << a.job(7)->wait.ToString();

  // The restore, in three orders (victims before their preemptor and after it).
  for (Order order : {Order::kById, Order::kReversed, Order::kShuffled}) ASSERT_TRUE(drv.Fork(order, true, 1 << 30));
  // The victims answer: job 2 (the shrink) in time, the rigid ones let the deadline pass.
  drv.At(720, CheckpointDone(2));
  drv.At(1100, MakeEv(Ev::Kind::kRelease, 5));
  drv.Run(100000);
  EXPECT_EQ(drv.forks(), 3u) << "a restored copy diverged";
  EXPECT_GT(drv.compared_passes(), 3 * 60);
  for (const auto& [id, j] : a.jobs()) EXPECT_TRUE(IsFinal(j.state)) << "job " << id << " " << JobStateName(j.state);
  EXPECT_EQ(a.job(6)->state, JobState::kCompleted);
  EXPECT_GT(a.job(1)->preemptions + a.job(4)->preemptions, 0u);
}

// ---- 2. randomized runs with snapshots at random points -----------------------------------------

struct RandomOptions {
  std::string fabric = "demo";
  BackfillMode backfill = BackfillMode::kConservative;
  uint32_t seed = 1;
  bool failures = true;
  Duration grow_after_idle = 300;
  int jobs = 90;
  int wave = 30;  // jobs arrive in waves of this many, with a long gap between them
};

struct RandomStats {
  int passes = 0, restores = 0, exact_forks = 0, compared_passes = 0;
  int busy_forks = 0;           // exact copies made while jobs ran and others waited
  int checkpointing_forks = 0;  // ... while a job was checkpointing
};

RandomStats RandomRun(const RandomOptions& o) {
  auto spec = GenerateByName(o.fabric);
  if (!spec) throw std::runtime_error(spec.error().ToString());
  SchedulerConfig c = TestConfig();
  c.backfill = o.backfill;
  c.grow_after_idle = o.grow_after_idle;
  // Limits make the restored pending and running counters matter.
  c.limits.default_user = {.max_running_gpus = static_cast<uint32_t>(Topology::Build(*spec)->gpu_count() / 2),
                           .max_pending_jobs = 12};
  Driver drv(*spec, c, o.seed);
  std::mt19937 rng(o.seed * 2654435761u);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  auto chance = [&](double p) { return static_cast<double>(rng() % 10000) < p * 10000; };
  const Topology probe = Topology::Build(*spec).value();
  const uint32_t cluster = static_cast<uint32_t>(probe.gpu_count()), gpn = probe.max_gpus_per_node();
  const char* classes[] = {"low", "normal", "normal", "high", "urgent"};
  Time at = 0;
  for (int i = 1; i <= o.jobs; ++i) {
    at += i % o.wave == 0 ? 6000 : uniform(1, 90);
    const JobId id = static_cast<JobId>(i);
    const int64_t size = uniform(0, 99);
    uint32_t n = size < 40 ? static_cast<uint32_t>(uniform(1, 4)) : size < 70 ? 8 : size < 90 ? 16 : 32;
    n = std::min(n, cluster);
    JobSpec s = Job(id, n, classes[uniform(0, 4)], "u" + std::to_string(uniform(0, 3)));
    s.account = "a" + std::to_string(uniform(0, 1));
    const int64_t shape = uniform(0, 99);
    if (shape < 12 && n >= gpn) {
      s.shape.nodes = n / gpn;
      s.shape.gpus_per_node = gpn;
      s.shape.gpus = 0;  // normalised by the core
    } else if (shape < 22) {
      s.shape.level = Level::kLeaf;
      s.shape.fit = FitMode::kRequire;
    } else if (shape < 42 && n >= 2) {
      s.shape.gpus = std::min<uint32_t>(cluster, std::bit_ceil(n) * 2);
      s.min_gpus = std::max<uint32_t>(1, s.shape.gpus / 4);
      s.step_kind = ElasticStep::kPowerOfTwo;
    }
    if (chance(0.3)) s.preemptible = chance(0.7);
    const Duration runtime = 60 + uniform(0, 2400);
    s.walltime = chance(0.85) ? runtime + uniform(0, runtime) : runtime * 2 / 3;  // some are killed
    if (chance(0.2)) s.checkpoint_interval = uniform(200, 900);
    s.restart_cost = uniform(30, 300);
    if (chance(0.08)) {
      s.held = true;
      drv.At(at + uniform(100, 3000), MakeEv(Ev::Kind::kRelease, id));
    }
    if (i > 3 && chance(0.12)) s.after_ok = {static_cast<JobId>(uniform(1, i - 1))};
    drv.SetRuntime(id, runtime);
    drv.At(at, Submit(s));
    if (chance(0.06)) drv.At(at + uniform(1, 4000), MakeEv(Ev::Kind::kCancel, id));
  }
  if (o.failures) {
    for (int i = 0; i < 3; ++i) {
      const NodeId n(static_cast<uint32_t>(uniform(0, static_cast<int64_t>(probe.node_count()) - 1)));
      const std::string name = probe.domain(probe.node_domain(n)).name;
      const Time t = uniform(300, at);
      drv.At(t, NodeEv(name, chance(0.6) ? NodeState::kDown : NodeState::kDrain));
      drv.At(t + uniform(300, 2000), NodeEv(name, NodeState::kUp));
    }
  }
  RandomStats st;
  drv.Run(kForever, [&](const std::vector<Decision>&) {
    // Quiet points: a copy compared pass for pass (at most 3 at a time), at about one in 4.
    // Any point: a restored copy checked, at about one pass in 15.
    if (drv.quiet() && drv.forks() < 3 && chance(0.25)) {
      if (!drv.Fork(static_cast<Order>(uniform(0, 2)))) return;
      ++st.exact_forks;
      bool running = false, pending = false, checkpointing = false;
      for (const auto& [id, j] : drv.original().jobs()) {
        running = running || j.state == JobState::kRunning;
        pending = pending || j.state == JobState::kPending;
        checkpointing = checkpointing || j.state == JobState::kCheckpointing;
      }
      st.busy_forks += running && pending;
      st.checkpointing_forks += checkpointing;
    } else if (chance(1.0 / 15)) {
      (void)drv.Fork(static_cast<Order>(uniform(0, 2)), false);
    }
  });
  st.passes = drv.passes();
  st.restores = drv.restores();
  st.compared_passes = drv.compared_passes();
  return st;
}

class RandomRestore : public ::testing::TestWithParam<std::tuple<const char*, BackfillMode>> {};

TEST_P(RandomRestore, RestoredCopiesDecideLikeTheOriginal) {
  const auto [fabric, mode] = GetParam();
  RandomStats total;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    RandomOptions o;
    o.fabric = fabric;
    o.backfill = mode;
    o.seed = seed * 7919 + static_cast<uint32_t>(mode);
    o.failures = seed != 2;
    o.grow_after_idle = seed == 3 ? 0 : 300;
    const RandomStats st = RandomRun(o);
    ASSERT_FALSE(::testing::Test::HasFailure()) << fabric << " seed " << o.seed;
    total.passes += st.passes;
    total.restores += st.restores;
    total.exact_forks += st.exact_forks;
    total.compared_passes += st.compared_passes;
    total.busy_forks += st.busy_forks;
    total.checkpointing_forks += st.checkpointing_forks;
  }
  std::cout << fabric << ": " << total.passes << " passes, " << total.restores << " restores, " << total.exact_forks
            << " compared pass for pass over " << total.compared_passes << " passes (" << total.busy_forks
            << " made while jobs ran and others waited, " << total.checkpointing_forks
            << " while a job checkpointed)\n";
  EXPECT_GE(total.restores, 10);
  EXPECT_GE(total.exact_forks, 2);
  EXPECT_GE(total.compared_passes, 100);
}

const char* const kFabrics[] = {"demo", "superpod:2:8", "mixed", "leafspine:16:4:2"};

INSTANTIATE_TEST_SUITE_P(Fabrics, RandomRestore,
                         ::testing::Combine(::testing::ValuesIn(kFabrics),
                                            ::testing::Values(BackfillMode::kNone, BackfillMode::kEasy,
                                                              BackfillMode::kConservative)),
                         [](const auto& info) {
  std::string n = std::string(std::get<0>(info.param)) + "_" +
                  (std::get<1>(info.param) == BackfillMode::kNone   ? "none"
                   : std::get<1>(info.param) == BackfillMode::kEasy ? "easy"
                                                                    : "conservative");
  for (char& ch : n)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

// ---- 3. traffic and the idle clock ---------------------------------------------------------------

// On a 2:1 oversubscribed leaf-spine a ring's prediction depends on the traffic already on the
// links, so it depends on the order jobs are placed back. FinishRestore places them in start
// order, whatever the order of Restore: with jobs that all still run, that is the original's
// traffic exactly.
TEST(SchedulerRestore, TrafficIsRecomputedInStartOrder) {
  const TopologySpec spec = GenerateByName("leafspine:16:4:2").value();
  SchedulerConfig c = TestConfig();
  c.elastic = false;
  auto a = Make(spec, c);
  // Jobs spanning leaves (32 GPUs each) and small ones, started one per pass: later ones share
  // the uplinks of earlier ones.
  for (JobId id = 1; id <= 6; ++id) {
    ASSERT_TRUE(a->Submit(Job(id, id <= 3 ? 36 : 6), static_cast<Time>(id * 10)));
    a->Schedule(static_cast<Time>(id * 10));
    ASSERT_EQ(a->job(id)->state, JobState::kRunning);
  }
  std::set<double> rings;
  for (JobId id = 1; id <= 6; ++id) rings.insert(a->topology().job_ring_gbs(id));
  ASSERT_GT(rings.size(), 1u) << "the fabric should be contended";
  for (Order order : {Order::kById, Order::kReversed, Order::kShuffled}) {
    auto b = RestoreFrom(spec, *a, order, 3);
    for (JobId id = 1; id <= 6; ++id) {
      EXPECT_EQ(b->topology().job_ring_gbs(id), a->topology().job_ring_gbs(id)) << "job " << id;
      EXPECT_EQ(b->job(id)->busbw_gbs, a->job(id)->busbw_gbs) << "job " << id;
    }
    for (uint32_t d = 0; d < a->topology().domain_count(); ++d) {
      EXPECT_EQ(b->topology().crossing_gbs(DomainId(d)), a->topology().crossing_gbs(DomainId(d)));
    }
  }
}

// A restart counts as GPUs just freed: elastic jobs grow only grow_after_idle after it.
TEST(SchedulerRestore, ElasticGrowthWaitsGrowAfterIdleAfterTheRestart) {
  SchedulerConfig c = TestConfig();
  c.grow_after_idle = 300;
  auto s = Make(DemoCluster(), c);
  JobRecord r;
  r.spec = Job(1, 32);
  r.spec.min_gpus = 8;
  r.state = JobState::kRunning;
  for (uint32_t g = 0; g < 8; ++g) r.gpus.push_back(GpuId(g));
  r.walltime = r.run_walltime = 7200;
  ASSERT_TRUE(s->Restore(r, 5000));
  ASSERT_TRUE(s->FinishRestore(5000));
  for (Time t : {5000, 5100, 5299}) {
    for (const Decision& d : s->Schedule(t)) ADD_FAILURE() << "t=" << t << ": " << FormatDecision(d, s->topology());
  }
  const std::vector<Decision> ds = s->Schedule(5300);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].kind, DecisionKind::kResize);
  EXPECT_EQ(ds[0].gpus.size(), 32u);
}

// ---- 4. errors leave the state unchanged ----------------------------------------------------------

JobRecord Running(JobId id, std::vector<uint32_t> gpus, Time start = 100) {
  JobRecord r;
  r.spec = Job(id, static_cast<uint32_t>(gpus.size()));
  r.spec.submit = start;
  r.state = JobState::kRunning;
  for (uint32_t g : gpus) r.gpus.push_back(GpuId(g));
  r.start = r.last_checkpoint = r.last_checkpoint_request = start;
  r.walltime = r.run_walltime = 7200;
  return r;
}

JobRecord Pending(JobId id, uint32_t gpus) {
  JobRecord r;
  r.spec = Job(id, gpus);
  r.spec.submit = 50;
  r.walltime = 7200;
  return r;
}

TEST(SchedulerRestore, BadRecordsFailNamingTheJobAndChangeNothing) {
  SchedulerConfig c = TestConfig();
  c.limits.default_user.max_pending_jobs = 2;
  auto s = Make(DemoCluster(), c);
  ASSERT_TRUE(s->SetNodeState("node3", NodeState::kDown, 1000));
  ASSERT_TRUE(s->Restore(Running(1, {0, 1, 2, 3}), 1000));
  ASSERT_TRUE(s->Restore(Pending(2, 4), 1000));

  struct Case {
    std::string name;
    JobRecord record;
    std::string where, message;  // expected: where, and a part of the message
  };
  std::vector<Case> cases;
  cases.push_back({"GPU owned twice", Running(3, {3, 4}), "job 3", "GPU 3 (node0:3) is already owned by job 1"});
  cases.push_back({"unknown GPU", Running(3, {4, 999}), "job 3", "gpus: unknown GPU 999 (the cluster has 32)"});
  cases.push_back({"GPU listed twice", Running(3, {4, 4}), "job 3", "GPU 4 (node0:4) listed twice"});
  cases.push_back({"duplicate id", Running(1, {8, 9}), "job 1", "id 1: duplicate job id"});
  cases.push_back({"id 0", Running(0, {8, 9}), "job 0", "job ids must be in 1..2^62-1"});
  cases.push_back({"down node", Running(3, {8, 24}), "job 3", "GPU 24 (node3:0) is on node node3, which is down"});
  JobRecord pending_with_gpus = Pending(3, 2);
  pending_with_gpus.gpus = {GpuId(8), GpuId(9)};
  cases.push_back({"pending with GPUs", pending_with_gpus, "job 3",
                   "gpus: a pending job holds no GPUs, the record lists node1:0-1"});
  JobRecord running_without = Running(3, {});
  running_without.spec.shape.gpus = 2;
  cases.push_back(
      {"running without GPUs", running_without, "job 3", "gpus: a running job holds GPUs, the record lists none"});
  JobRecord shrink = Running(3, {8, 9, 10, 11});
  shrink.state = JobState::kCheckpointing;
  shrink.after_checkpoint = JobRecord::After::kShrink;
  shrink.shrink_to = {GpuId(8), GpuId(12)};
  cases.push_back({"shrink_to outside", shrink, "job 3", "shrink_to: GPU 12 is not one of the job's GPUs"});
  JobRecord claim = Pending(3, 2);
  claim.claim = {GpuId(40)};
  cases.push_back({"claim GPU unknown", claim, "job 3", "claim: unknown GPU 40"});
  JobRecord protocol = Running(3, {8, 9});
  protocol.after_checkpoint = JobRecord::After::kPreempt;
  cases.push_back({"protocol on a running job", protocol, "job 3", "after_checkpoint: set on a running job"});
  JobRecord suspended = Pending(3, 2);
  suspended.spec.suspended = true;
  cases.push_back({"suspended pending job", suspended, "job 3", "spec.suspended: set on a pending job"});
  JobRecord cls = Pending(3, 2);
  cls.spec.priority_class = "vip";
  cases.push_back({"unknown class", cls, "job 3", "priority_class: unknown class 'vip'"});
  JobRecord step = Pending(3, 8);
  step.spec.min_gpus = 2;
  step.spec.step_kind = ElasticStep::kMultiple;
  step.spec.step = 0;
  cases.push_back({"elastic step 0", step, "job 3", "step: elastic step multiple of 0"});
  JobRecord state = Pending(3, 2);
  state.state = static_cast<JobState>(42);
  cases.push_back({"unknown state", state, "job 3", "state: unknown value 42"});

  const std::string before = Dump(*s);
  for (const Case& k : cases) {
    const Status st = s->Restore(k.record, 1000);
    ASSERT_FALSE(st) << k.name;
    EXPECT_EQ(st.error().where, k.where) << k.name;
    EXPECT_NE(st.error().message.find(k.message), std::string::npos) << k.name << ": " << st.error().message;
    EXPECT_EQ(Dump(*s), before) << k.name;
  }
  // Time going back.
  const Status back = s->Restore(Running(3, {8}), 999);
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error().where, "time");
  EXPECT_EQ(Dump(*s), before);

  // The restore goes on: a drained node is fine for a running job.
  ASSERT_TRUE(s->Restore(Running(3, {8, 9}), 1000));
  auto notes = s->FinishRestore(1000);
  ASSERT_TRUE(notes);
  EXPECT_TRUE(notes->empty());
  EXPECT_EQ(s->CheckInvariants(), "");
  // No failed restore counted a pending job: alice has one of two.
  EXPECT_TRUE(s->ValidateSpec(Job(10, 1)));
  ASSERT_TRUE(s->Submit(Job(10, 1), 1000));
  EXPECT_FALSE(s->ValidateSpec(Job(11, 1)));
}

TEST(SchedulerRestore, DrainedNodesKeepTheirJobs) {
  auto s = Make(DemoCluster(), TestConfig());
  ASSERT_TRUE(s->SetNodeState("node1", NodeState::kDrain, 1000));
  ASSERT_TRUE(s->Restore(Running(1, {8, 9, 10, 11}), 1000));
  ASSERT_TRUE(s->FinishRestore(1000));
  EXPECT_EQ(s->topology().owner(GpuId(8)), 1u);
  EXPECT_EQ(s->CheckInvariants(), "");
  for (const Decision& d : s->Schedule(1000)) ADD_FAILURE() << FormatDecision(d, s->topology());
}

TEST(SchedulerRestore, OtherEventsWaitForFinishRestore) {
  auto s = Make(DemoCluster(), TestConfig());
  EXPECT_FALSE(s->FinishRestore(0)) << "no restore in progress";
  ASSERT_TRUE(s->Restore(Running(1, {0, 1}), 100));
  ASSERT_TRUE(s->Restore(Pending(2, 2), 100));
  const std::string where = "restore";
  EXPECT_FALSE(s->Submit(Job(3, 1), 100));
  EXPECT_FALSE(s->ValidateSpec(Job(3, 1)));
  EXPECT_EQ(s->Cancel(2, 100).error().where, where);
  EXPECT_EQ(s->Hold(2, 100).error().where, where);
  EXPECT_EQ(s->JobEnded(1, 100, true).error().where, where);
  EXPECT_EQ(s->CheckpointDone(1, 100, 1, "p").error().where, where);
  EXPECT_EQ(s->SetNodeState("node0", NodeState::kDrain, 100).error().where, where);
  EXPECT_FALSE(s->FinishRestore(99)) << "time going back";
  ASSERT_TRUE(s->FinishRestore(100));
  EXPECT_TRUE(s->Submit(Job(3, 1), 100));
  EXPECT_TRUE(s->Cancel(2, 100));
  EXPECT_EQ(s->CheckInvariants(), "");
}

// ---- 5. links to jobs that never come back ------------------------------------------------------

TEST(SchedulerRestore, DanglingLinksAreDroppedWithANote) {
  auto s = Make(DemoCluster(), TestConfig());
  // A victim checkpointing for job 50, which the store lost.
  JobRecord victim = Running(1, {0, 1, 2, 3, 4, 5, 6, 7});
  victim.state = JobState::kCheckpointing;
  victim.after_checkpoint = JobRecord::After::kPreempt;
  victim.preempted_for = 50;
  victim.checkpoint_deadline = 1200;
  // A preemptor waiting for job 51 (lost) and job 3 (restored later, checkpointing for it).
  JobRecord preemptor = Pending(2, 16);
  preemptor.spec.priority_class = "urgent";
  preemptor.victims = {51, 3};
  preemptor.claim = {GpuId(16), GpuId(17)};
  JobRecord shrinking = Running(3, {8, 9, 10, 11, 12, 13, 14, 15});
  shrinking.spec.shape.gpus = 8;
  shrinking.spec.min_gpus = 4;
  shrinking.state = JobState::kCheckpointing;
  shrinking.after_checkpoint = JobRecord::After::kShrink;
  shrinking.shrink_to = {GpuId(8), GpuId(9), GpuId(10), GpuId(11)};
  shrinking.preempted_for = 2;
  shrinking.checkpoint_deadline = 1200;
  // Dependencies on a lost job, on a restored one and on itself.
  JobRecord dependent = Pending(4, 2);
  dependent.spec.after_ok = {52, 3, 4};
  for (const JobRecord& r : {victim, preemptor, dependent, shrinking}) ASSERT_TRUE(s->Restore(r, 1000));
  auto notes = s->FinishRestore(1000);
  ASSERT_TRUE(notes);
  const std::vector<std::string> expected = {
      "job 1: preempted for unknown job 50: keeps running", "job 2: unknown victim 51 dropped",
      "job 4: dependency on unknown job 52 lifted", "job 4: dependency on itself dropped"};
  EXPECT_EQ(*notes, expected);
  EXPECT_EQ(s->job(1)->state, JobState::kCheckpointing);
  EXPECT_EQ(s->job(1)->preempted_for, kNoJob);
  EXPECT_EQ(s->job(1)->after_checkpoint, JobRecord::After::kNothing);
  EXPECT_EQ(s->job(2)->victims, std::vector<JobId>{3});
  EXPECT_EQ(s->job(2)->claim.size(), 2u);
  EXPECT_EQ(s->job(3)->preempted_for, 2u);
  EXPECT_EQ(s->job(4)->spec.after_ok, std::vector<JobId>{3});
  EXPECT_EQ(s->CheckInvariants(), "");
  // The restored protocol runs on: job 3 reports its checkpoint and shrinks for job 2; job 1's
  // deadline passes and it simply runs on.
  ASSERT_TRUE(s->CheckpointDone(3, 1100, 1, "c1"));
  std::string log;
  for (Time t : {1100, 1200}) {
    for (const Decision& d : s->Schedule(t)) log += FormatDecision(d, s->topology()) + "\n";
  }
  EXPECT_NE(log.find("t=1100 resize job=3 gpus=node1:0-3 removed=node1:4-7 (shrunk for job 2)"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("preempt job=1"), std::string::npos) << log;
  EXPECT_EQ(s->job(1)->state, JobState::kRunning);
  EXPECT_EQ(s->CheckInvariants(), "");
}

}  // namespace
}  // namespace phalanx
