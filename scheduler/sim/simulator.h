// Simulator: replays a trace through the scheduling core on a simulated clock.
//
// It re-implements no scheduling rule. It only turns the trace into events for a Scheduler
// (Submit at submit time; JobEnded when a job's remaining work is done; CheckpointDone a
// configurable delay after a Checkpoint decision and every checkpoint interval; optional node
// failures) and calls Schedule(now) once per distinct event time (all events of one timestamp
// are delivered first). A timer queue also wakes the core when something it promised comes due:
// checkpoint deadlines, walltime ends, reservation starts, elastic growth after idle time.
// Then it carries out the decisions (start/resize/preempt/kill) on its model of the jobs.
//
// Work model: a job's work is gpus x duration GPU-seconds; it progresses at the number of GPUs it
// holds (elastic jobs run longer when shrunk, shorter when grown). Progress saved by a checkpoint
// survives a preemption; the rest is lost. Details and every option: docs/simulator.md.
//
// The simulator neither reads files nor a clock: the caller passes the trace and the topology,
// and progress goes to a callback. Same inputs and seed -> byte-identical results.
// Thread-safety: Simulate() is a pure function of its arguments (it may be called concurrently
// with different arguments; the progress callback runs on the calling thread).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/sched/config.h"
#include "core/sched/job.h"
#include "core/topology/spec.h"
#include "sim/class_rule.h"
#include "sim/job_mapping.h"
#include "sim/metrics.h"
#include "sim/pass_profile.h"
#include "sim/trace.h"

namespace phalanx {

// A node state change at a given time.
struct NodeEvent {
  Time at = 0;
  std::string node;
  NodeState state = NodeState::kUp;
};

struct SimOptions {
  uint64_t seed = 1;
  WalltimeModel walltime;
  std::vector<ClassRule> rules;
  // Costs of preemption (docs/simulator.md, "Costs of preemption"); the same for every policy.
  // A job that answers a Checkpoint decision saves its state as of the signal and takes
  // `checkpoint_delay` seconds to write it (GPUs held, no progress: overhead). A seeded share
  // `checkpoint_answer_share` of the jobs answers at all; the others run on until the core's
  // deadline and lose the work since their last periodic save: every job saves on its own every
  // `checkpoint_interval` seconds of a run (its class rule's ckpt where set; 0: never). A
  // requeued job is held `requeue_delay` seconds before it may start again (Slurm delays a
  // requeued batch job by its credential lifetime + 1 s: 121 s by default), and every resume
  // and resize spends `restart_overhead` seconds on its GPUs before computing again.
  Duration checkpoint_delay = 30;
  double checkpoint_answer_share = 0.8;
  Duration checkpoint_interval = 3600;
  Duration requeue_delay = 121;
  Duration restart_overhead = 120;
  // Placement-dependent run time (docs/simulator.md#runtime-model). A trace duration is the
  // job's run time at the best placement of its size on this topology; a multi-GPU job spends
  // `comm_share` of each step in all-reduce, which slows down by best/actual predicted bus
  // bandwidth: step = (1 - c) + c x best/actual. 0: run time ignores placement. A slowed job's
  // walltime grows in proportion when it starts (see the doc), so no job is killed for it.
  double comm_share = 0;
  // Elastic jobs: a seeded share of the multi-GPU jobs is elastic down to half its size
  // (MapTraceJob), and an elastic job of trace size g0 running on g GPUs does its work at
  // g0 x (g / g0)^elastic_scaling GPU-seconds per second (before the placement slowdown):
  // runtime = work / (g x efficiency(g)), efficiency(g) = (g0 / g)^(1 - elastic_scaling), so
  // a shrunk job loses less than its share of GPUs and a grown one gains less (1: linear).
  double elastic_share = 0;
  double elastic_scaling = 1;
  Duration sample_interval = 0;       // time-series step; 0: makespan / 1000 (at least 60 s)
  bool wake_for_reservations = true;  // a pass at every reservation start
  // Node failures: explicit events, and/or seeded random ones (exponential time between failures
  // per node with mean `node_mtbf`, each down for `node_repair`); 0 disables the random ones.
  std::vector<NodeEvent> node_events;
  Duration node_mtbf = 0;
  Duration node_repair = 3600;
  // Diagnostics: a decision log in the scenario-file format (FormatDecision lines, waits shown
  // when they change, refused events, a final line) and the events fed to the core as a
  // scenario script; invariant checks after every pass (slow).
  bool record_decisions = false;
  bool check_invariants = false;
  // Where the replay's time goes (SimResult::pass_profile): seconds on a monotonic clock, read
  // before and after every pass. Given by the caller (the CLI: std::chrono::steady_clock), so the
  // simulator itself reads no clock; unset: no profile.
  std::function<double()> pass_clock;
  // Called with the fraction of trace jobs submitted, at most ~200 times per run.
  std::function<void(double)> progress;
};

struct SimResult {
  std::string policy;
  std::string topology;
  uint32_t cluster_gpus = 0;
  std::vector<JobOutcome> jobs;  // in trace order
  std::vector<Sample> series;
  RunCounters counters;
  std::string decision_log;                 // when record_decisions
  std::string event_script;                 // when record_decisions: a .scn body ("at T ..." lines)
  std::optional<PassProfile> pass_profile;  // when SimOptions::pass_clock is set
};

// Replays `trace` on `topology` with `config` (a policy preset, possibly adjusted). Fails on an
// invalid topology or configuration, a class rule naming an unknown class, or a core invariant
// broken (with check_invariants). Jobs the core refuses at submit are reported as rejected.
Result<SimResult> Simulate(const Trace& trace, const TopologySpec& topology, const SchedulerConfig& config,
                           const SimOptions& options);

// The JobSpec the simulator submits for trace job `index` (MapTraceJob with the options' seed,
// walltime model and class rules). Exposed for tests and for the direct-core comparison.
JobSpec MakeJobSpec(const TraceJob& job, size_t index, const SimOptions& options);

}  // namespace phalanx
