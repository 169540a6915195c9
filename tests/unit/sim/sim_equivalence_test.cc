// Off/on equivalence of the simulator's speed-ups: each kept or skipped piece of work
// (SchedulerConfig's keep_domain_plan, keep_start_answers, skip_idle_backfill, the kept FIFO order
// and queue keys, reserve_shortcuts) replayed on random traces with it off and on gives the same
// decision log and per-job rows, byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../core/quality_scale.h"
#include "../core/test_clusters.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace phalanx {
namespace {

// A random trace of `count` jobs for the equivalence tests below: submits `max_gap` s apart at
// most, sizes drawn from `sizes`, 300 s plus up to `max_extra` s of work, five users.
Trace RandomTrace(uint64_t seed, int count, Time max_gap, std::span<const uint32_t> sizes, Duration max_extra) {
  std::mt19937_64 rng(seed);
  Trace trace;
  trace.source = "random";
  Time t = 0;
  for (int i = 0; i < count; ++i) {
    TraceJob j;
    j.id = std::to_string(i + 1);
    t += static_cast<Time>(rng() % static_cast<uint64_t>(max_gap));
    j.submit = t;
    j.gpus = sizes[rng() % sizes.size()];
    j.duration = 300 + static_cast<Duration>(rng() % static_cast<uint64_t>(max_extra));
    j.user = "u" + std::to_string(rng() % 5);
    j.status = "COMPLETED";
    trace.jobs.push_back(std::move(j));
  }
  return trace;
}

// "" when equal; else the first line where `a` and `b` differ, with its number (gtest's own
// report of two unequal multi-megabyte logs is an edit distance that does not fit in memory).
std::string FirstDifference(const std::string& a, const std::string& b) {
  if (a == b) return {};
  std::istringstream x(a), y(b);
  std::string la, lb;
  for (size_t line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(x, la)), gb = static_cast<bool>(std::getline(y, lb));
    if (!ga || !gb || la != lb)
      return "line " + std::to_string(line) + ":\n  off: " + (ga ? la : "(end)") + "\n  on:  " + (gb ? lb : "(end)");
  }
}

// The conditions of the off/on equivalence tests below: the decision log recorded and the
// invariants checked after every pass, walltimes users overstate (random, up to 3x), node
// failures (MTBF `mtbf` s, repaired in 3,000 s: killed and requeued jobs, GPUs missing).
SimOptions EquivalenceOptions(uint64_t seed, Duration mtbf = 80000) {
  SimOptions o;
  o.seed = seed;
  o.record_decisions = true;
  o.check_invariants = true;
  o.walltime.mode = WalltimeModel::Mode::kRandom;
  o.walltime.factor = 3;
  o.node_mtbf = mtbf;
  o.node_repair = 3000;
  return o;
}

// Replays `trace` under `policy` (a --policy spec) with the config flag `keep` off and on, and
// expects the same decision log and per-job rows, byte for byte: the two logs and CSVs ([0] off,
// [1] on), and the run with it on. Failures name the policy and the seed.
struct OffAndOn {
  std::string log[2], csv[2];
  SimResult on;
};
OffAndOn SameOffAndOn(const Trace& trace, const TopologySpec& spec, std::string_view policy, const SimOptions& o,
                      bool SchedulerConfig::*keep) {
  OffAndOn out;
  auto config = PolicyFromSpec(policy);
  EXPECT_TRUE(config) << policy;
  if (!config) return out;
  for (const bool on : {false, true}) {
    (*config).*keep = on;
    auto r = Simulate(trace, spec, *config, o);
    EXPECT_TRUE(r) << r.error().ToString();
    if (!r) return out;
    out.log[on] = r->decision_log;
    std::vector<PolicyRun> runs(1);
    runs[0].result = std::move(*r);
    out.csv[on] = FormatJobsCsv(runs);
    if (on) out.on = std::move(runs[0].result);
  }
  EXPECT_EQ(FirstDifference(out.log[0], out.log[1]), "") << policy << " seed " << o.seed;
  EXPECT_EQ(FirstDifference(out.csv[0], out.csv[1]), "") << policy << " seed " << o.seed;
  return out;
}

// SchedulerConfig::keep_domain_plan: the domain plan kept from pass to pass (and brought up to
// date by the allocations that changed) decides exactly as one built anew in every pass. Random
// traces of leaf-shaped multi-node jobs (the jobs Reserve asks the plan for) and one-node jobs
// under pressure, with node failures (GPUs unavailable until repaired, killed and requeued jobs),
// EASY and conservative backfill, walltimes users overstate: the same decision log and per-job
// rows, byte for byte.
TEST(SimKeptPlan, SameDecisionsAsAPlanBuiltEachPass) {
  const TopologySpec spec = GenerateByName("leafspine:16:4:2").value();
  // Four seeds; PHALANX_QUALITY_SCALE (tests/run.sh's ASan run: 0.25) runs fewer, the same paths
  // (97 s under ASan with four).
  const uint64_t seeds = std::clamp<uint64_t>(std::llround(4 * testing::QualityScale()), 1, 4);
  size_t waited_big = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    constexpr uint32_t kSizes[] = {1, 2, 4, 8, 8, 16, 16, 24, 32};
    const Trace trace = RandomTrace(seed, 160, 400, kSizes, 20000);
    for (const char* policy : {"phalanx", "phalanx:backfill=conservative"}) {
      SimOptions o = EquivalenceOptions(seed, 60000);
      o.rules.push_back(*ParseClassRule("gpus<=8:level=node"));
      o.rules.push_back(*ParseClassRule("gpus>=9:level=leaf,gpn=8"));
      const OffAndOn r = SameOffAndOn(trace, spec, policy, o, &SchedulerConfig::keep_domain_plan);
      for (const JobOutcome& j : r.on.jobs) waited_big += j.gpus > 8 && j.first_start > j.submit;
    }
  }
  // The runs exercise the plan: multi-node jobs waited (Reserve planned their blocks).
  EXPECT_GT(waited_big, 10 * seeds);
}

// SchedulerConfig::keep_start_answers: a start-now search kept for the next job of the pass that
// asks the same of the same Topology state (version and fingerprint) decides exactly as a search
// for each. Random traces of one-node jobs of 2-8 GPUs (split across nodes when the cluster is
// busy: the slow blocks they wait instead of, with a planned good block or beyond the depth
// without) with node failures; the preset (depth 100), depths 1 and 3, EASY and conservative
// backfill: the same decision log and per-job rows, byte for byte.
TEST(SimKeptStartAnswers, SameDecisionsAsASearchForEachJob) {
  const TopologySpec spec = GenerateByName("leafspine:8:4:2").value();
  const uint64_t seeds = std::clamp<uint64_t>(std::llround(4 * testing::QualityScale()), 1, 4);
  size_t waited_better = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    constexpr uint32_t kSizes[] = {1, 1, 2, 3, 4, 4, 6, 8};
    const Trace trace = RandomTrace(seed, 200, 300, kSizes, 12000);
    for (const char* policy :
         {"phalanx", "phalanx:patience_depth=1", "phalanx:patience_depth=3,backfill=conservative"}) {
      SimOptions o = EquivalenceOptions(seed);
      const OffAndOn r = SameOffAndOn(trace, spec, policy, o, &SchedulerConfig::keep_start_answers);
      // Waits for a better block (after which the next job asks the same of the same state).
      for (size_t at = r.log[1].find("a slower block is free now"); at != std::string::npos;
           at = r.log[1].find("a slower block is free now", at + 1)) {
        ++waited_better;
      }
    }
  }
  EXPECT_GT(waited_better, 50 * seeds);
}

// SchedulerConfig::skip_idle_backfill: a backfill cycle (Slurm's bf_interval) that would repeat
// an idle one -- nothing decided in the last cycle, no event since, a policy nothing of which
// changes with time alone -- is skipped, and the replay decides exactly as one that runs every
// cycle in full. slurm-like (FIFO, EASY, bf_interval 30 s) on random traces with node failures,
// also with a one-hour backfill window (the window reaching a job's start changes who reserves:
// the skipping stops there) and with Slurm's test limits cut to a few jobs: the same decision
// log (waits included) and per-job rows, byte for byte.
TEST(SimIdleBackfill, SameDecisionsAsEveryCycleInFull) {
  const TopologySpec spec = GenerateByName("leafspine:8:4:2").value();
  const uint64_t seeds = std::clamp<uint64_t>(std::llround(4 * testing::QualityScale()), 1, 4);
  uint64_t skipped = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    constexpr uint32_t kSizes[] = {1, 1, 2, 4, 8, 8, 16, 32};
    const Trace trace = RandomTrace(seed, 200, 300, kSizes, 12000);
    for (const char* policy :
         {"slurm-like", "slurm-like:backfill_window=3600", "slurm-like:backfill_max_jobs=4,main_queue_depth=2"}) {
      SimOptions o = EquivalenceOptions(seed);
      const OffAndOn r = SameOffAndOn(trace, spec, policy, o, &SchedulerConfig::skip_idle_backfill);
      skipped += r.on.counters.idle_cycles_skipped;
    }
  }
  EXPECT_GT(skipped, 1000 * seeds);
}

// SchedulerConfig::kept_fifo_order: a FIFO pass with Slurm's depth reads its first jobs from the
// order kept across passes, and decides exactly as one that orders every pending job. Random
// traces under pressure with node failures (killed jobs requeued: they re-enter the order at
// their submit time, ahead of later jobs); slurm-like, its limits cut to a few jobs (the depth
// stops both passes early: the jobs beyond keep their reasons), fifo-firstfit with a limit
// (strict order in every pass) and the phalanx preset in FIFO order with Slurm's limits
// (placement under pressure, elastic jobs): the same decision log (waits included) and per-job
// rows, byte for byte.
TEST(SimKeptFifoOrder, SameDecisionsAsAQueueOrderedEachPass) {
  const TopologySpec spec = GenerateByName("leafspine:8:4:2").value();
  const uint64_t seeds = std::clamp<uint64_t>(std::llround(4 * testing::QualityScale()), 1, 4);
  uint64_t kept = 0, passes = 0, requeued = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    constexpr uint32_t kSizes[] = {1, 1, 2, 4, 8, 8, 16, 32};
    const Trace trace = RandomTrace(seed, 200, 300, kSizes, 12000);
    for (const char* policy :
         {"slurm-like", "slurm-like:backfill_max_jobs=4,main_queue_depth=2", "fifo-firstfit:main_queue_depth=3",
          "phalanx:order=fifo,preemption=off,backfill_interval=30,backfill_max_jobs=6,main_queue_depth=3"}) {
      SimOptions o = EquivalenceOptions(seed);
      if (std::string_view(policy).starts_with("phalanx")) o.rules.push_back(*ParseClassRule("share=0.3:elastic=0.5"));
      const OffAndOn r = SameOffAndOn(trace, spec, policy, o, &SchedulerConfig::kept_fifo_order);
      kept += r.on.counters.kept_order_passes;
      passes += r.on.counters.passes - r.on.counters.idle_cycles_skipped;
      requeued += r.on.counters.preemptions;
    }
  }
  // Every pass of these policies can read the kept order (no preemption, nobody topped).
  EXPECT_EQ(kept, passes);
  EXPECT_GT(requeued, 5 * seeds);
}

// SchedulerConfig::kept_queue_keys: a pass orders the queue from keys kept across passes (most
// already in order) and does not read the record of a job the last pass left waiting on
// Priority that still cannot start; it decides exactly as a pass that reads every pending job's
// record. Random traces under pressure with node failures (requeued jobs re-enter the keys; a
// node going down or up makes them anew); ideal-backfill (multifactor order: priorities move
// every pass), with conservative backfill, the phalanx preset without preemption (placement
// under pressure, elastic jobs, the starvation guard's reservations after ten minutes),
// multifactor order with Slurm's depth and backfill interval (passes that are not backfill
// cycles read every record), and FIFO without backfill: the same decision log (waits
// included) and per-job rows, byte for byte. Jobs come in several shapes (node or leaf locality,
// whole nodes).
TEST(SimKeptQueueKeys, SameDecisionsAsEveryRecordReadEachPass) {
  const TopologySpec spec = GenerateByName("leafspine:8:4:2").value();
  const uint64_t seeds = std::clamp<uint64_t>(std::llround(4 * testing::QualityScale()), 1, 4);
  uint64_t skipped = 0, requeued = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    constexpr uint32_t kSizes[] = {1, 1, 2, 4, 8, 8, 16, 32};
    const Trace trace = RandomTrace(seed, 200, 300, kSizes, 12000);
    for (const char* policy : {"ideal-backfill", "ideal-backfill:backfill=conservative,reserve_depth=3",
                               "phalanx:preemption=off,reserve_after_wait=600",
                               "slurm-like:order=priority,backfill_max_jobs=6,main_queue_depth=3",
                               "fifo-firstfit:main_queue_depth=0,backfill=easy"}) {
      SimOptions o = EquivalenceOptions(seed);
      // Jobs of several shapes (a key's failures are those of its own shape).
      o.rules.push_back(*ParseClassRule("share=0.3,gpus<=8:level=node"));
      o.rules.push_back(*ParseClassRule("share=0.3,gpus>=4:prefer=leaf"));
      o.rules.push_back(*ParseClassRule("share=0.2,gpus>=8:gpn=4"));
      if (std::string_view(policy).starts_with("phalanx")) o.rules.push_back(*ParseClassRule("share=0.3:elastic=0.5"));
      const OffAndOn r = SameOffAndOn(trace, spec, policy, o, &SchedulerConfig::kept_queue_keys);
      skipped += r.on.counters.keyed_skips;
      requeued += r.on.counters.preemptions;
    }
  }
  EXPECT_GT(skipped, 10000 * seeds);
  EXPECT_GT(requeued, 5 * seeds);
}

// SchedulerConfig::reserve_shortcuts: Reserve's walks search without the blocks promised to
// others first, and a walk for a request an earlier walk of the pass made begins where that one
// ended (a pass only takes capacity away, until a preemptor starts on its claim or victims
// checkpoint: the floors are dropped then), skipping the steps before it when its own block is
// not free there, from the releases that walk had made; the replay decides exactly as one that
// searches every step in full. Random traces of mixed sizes under pressure with node failures;
// the preset (placement patience), its starvation guard after ten minutes (a reservation for
// most waiting jobs), conservative backfill, and preemption by class (claims, victims): the same
// decision log and per-job rows, byte for byte.
TEST(SimReserveShortcuts, SameDecisionsAsASearchAtEveryStep) {
  const TopologySpec spec = GenerateByName("leafspine:8:4:2").value();
  const uint64_t seeds = std::clamp<uint64_t>(std::llround(4 * testing::QualityScale()), 1, 4);
  uint64_t floored = 0, jumps = 0, kept = 0, preemptions = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    constexpr uint32_t kSizes[] = {1, 1, 2, 3, 4, 4, 8, 8, 16, 32};
    const Trace trace = RandomTrace(seed, 200, 300, kSizes, 12000);
    for (const char* policy : {"phalanx", "phalanx:reserve_after_wait=600", "phalanx:backfill=conservative",
                               "phalanx:reserve_after_wait=600,patience_depth=2"}) {
      SimOptions o = EquivalenceOptions(seed);
      if (std::string_view(policy).find("patience_depth") != std::string_view::npos) {
        o.checkpoint_answer_share = 1;
        o.rules.push_back(*ParseClassRule("gpus>=16:class=high"));
        o.rules.push_back(*ParseClassRule("gpus<=8:class=low,preemptible=yes"));
      }
      const OffAndOn r = SameOffAndOn(trace, spec, policy, o, &SchedulerConfig::reserve_shortcuts);
      floored += r.on.counters.floored_walks;
      jumps += r.on.counters.floor_jumps;
      kept += r.on.counters.floor_releases_kept;
      preemptions += r.on.counters.preemptions;
      EXPECT_EQ(r.on.counters.walk_print_mismatches, 0u) << policy << " seed " << seed;
    }
  }
  EXPECT_GT(floored, 10000 * seeds);
  // Walks that start at their floor, most of them from the releases the floor's walk had made.
  EXPECT_GT(jumps, 2000 * seeds);
  EXPECT_GT(kept, jumps * 9 / 10);
  EXPECT_GT(preemptions, 20 * seeds);
}

// A walk for a good block (placement under pressure) brings to its time only the domains it
// searches, and leaves out a domain the Placer remembers holding no fit in its state then, by a
// fingerprint of that state kept apart from the Topology (Reserve, `prints`). Philly's two kinds of
// node on many leaves, under pressure with node failures, the preset and its conservative
// variant: the same decision log and per-job rows as walks that bring the whole Topology to each
// time (reserve_shortcuts off); most domains are left out by fingerprint; and each kept
// fingerprint is the Topology's once the domain is brought to the walk's time, also in walks that
// start at their floor from the releases an earlier walk had made (the released jobs listed by
// domain again, their load changes on the fingerprints kept). Many 2-GPU jobs:
// their best placement reaches the best GPU link (a PCIe pair), where the Placer takes the
// fullest node of the whole cluster, which such a walk does not keep at t (it fails when those
// walks too bring only their domains to t).
TEST(SimReserveShortcuts, DomainsBroughtToTheWalksTimeOnlyWhenSearched) {
  const TopologySpec spec = testing::MixedNodeLeaves(6, 8, 3, 16);
  const uint64_t seeds = std::clamp<uint64_t>(std::llround(3 * testing::QualityScale()), 1, 3);
  uint64_t known = 0, tops_kept = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    constexpr uint32_t kSizes[] = {1, 1, 2, 2, 2, 3, 4, 6, 8, 8, 16};
    const Trace trace = RandomTrace(seed, 400, 80, kSizes, 20000);
    for (const char* policy : {"phalanx", "phalanx:backfill=conservative"}) {
      const OffAndOn r =
          SameOffAndOn(trace, spec, policy, EquivalenceOptions(seed), &SchedulerConfig::reserve_shortcuts);
      known += r.on.counters.walk_known_tops;
      tops_kept += r.on.counters.floor_tops_kept;
      EXPECT_EQ(r.on.counters.walk_print_mismatches, 0u) << policy << " seed " << seed;
    }
  }
  EXPECT_GT(known, 500 * seeds);
  EXPECT_GT(tops_kept, 500 * seeds);
}

}  // namespace
}  // namespace phalanx
