// WhatIf (core/sched/internal/what_if.h): however its releases and holds were made -- one job or
// many at once, with holds or apart, GPUs held, given back and held again -- undoing it leaves
// the Topology as it was, and while in force the Topology is as the same changes one by one
// would leave it. Retarget, from whatever it has in force, leaves the Topology as a fresh WhatIf
// making the target's changes would; and the WalkTwin follows the Topology it copies through
// its journal.
#include "core/sched/internal/what_if.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/sched/internal/walk_twin.h"
#include "test_clusters.h"

namespace phalanx {
namespace {

using testing::AllocateRandomJobs;
using testing::Build;
using testing::TwoTier;

// Every counter a search reads, per domain, the fingerprints and the what-if counts.
std::string CountersOf(const Topology& t) {
  std::string out = std::to_string(t.held_gpus()) + (t.none_suspended() ? "-" : "s") + ";";
  for (uint32_t i = 0; i < t.domain_count(); ++i) {
    const DomainId d(i);
    out += std::to_string(t.free_gpus(d)) + "/" + std::to_string(t.crossing_mbs(d)) + "/" +
           std::to_string(t.fingerprint(d).a) + "/" + std::to_string(t.fingerprint(d).b) + ":";
    for (uint32_t f = 0; f <= t.max_gpus_per_node(); ++f) out += std::to_string(t.nodes_with_free(d, f)) + ",";
  }
  for (uint32_t g = 0; g < t.gpu_count(); ++g) out += t.is_free(GpuId(g)) ? "f" : "b";
  return out;
}

TEST(WhatIf, UndoesEveryMixOfReleasesAndHolds) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 60; ++round) {
    Topology real = Build(TwoTier(2, 2));                                // 32 GPUs
    std::vector<JobId> ids(AllocateRandomJobs(real, rng, 4, 6).size());  // a few GPUs free
    std::iota(ids.begin(), ids.end(), JobId{1});
    const std::string before = CountersOf(real);
    Topology shadow = real;  // the same changes, one GPU and one job at a time
    std::vector<uint8_t> shadow_held(real.gpu_count(), 0);
    auto shadow_hold = [&](GpuId g) {
      if (!shadow.is_free(g)) return;
      ASSERT_TRUE(shadow.Hold(std::vector<GpuId>{g}));
      shadow_held[g.value] = 1;
    };
    {
      WhatIf what_if(real);
      what_if.Block({});
      for (int step = 0; step < 30; ++step) {
        const GpuId g(static_cast<uint32_t>(rng() % real.gpu_count()));
        const JobId job = ids[rng() % ids.size()];
        switch (rng() % 6) {
          case 0:
            what_if.ReleaseJob(job);
            (void)shadow.Suspend(job);
            break;
          case 1: {  // several at once, holding some wanted GPUs
            std::vector<JobId> jobs{job, ids[rng() % ids.size()]};
            std::vector<GpuId> want;
            for (uint32_t x = 0; x < real.gpu_count(); ++x) {
              if (rng() % 4 == 0) want.push_back(GpuId(x));
            }
            what_if.ReleaseJobsAndHold(jobs, want);
            for (JobId j : jobs) (void)shadow.Suspend(j);
            for (GpuId w : want) shadow_hold(w);
            break;
          }
          case 2:
            if (what_if.HoldOne(g)) shadow_hold(g);
            break;
          case 3:  // given back, maybe to be held again later
            what_if.UnholdOne(g);
            if (shadow_held[g.value]) {
              ASSERT_TRUE(shadow.Unhold(std::vector<GpuId>{g}));
              shadow_held[g.value] = 0;
            }
            break;
          case 4: {
            std::vector<GpuId> block{g, GpuId((g.value + 1) % real.gpu_count())};
            what_if.Extend(0, block);
            for (GpuId b : block) {
              if (shadow.is_free(b)) {
                ASSERT_TRUE(shadow.Hold(std::vector<GpuId>{b}));
              }
            }
            break;
          }
          default:
            what_if.ReleaseJobsAndHold(std::vector<JobId>{job}, {});
            (void)shadow.Suspend(job);
            break;
        }
        ASSERT_EQ(real.free_gpus(real.root()), shadow.free_gpus(shadow.root())) << "round " << round;
        ASSERT_EQ(real.held_gpus(), shadow.held_gpus()) << "round " << round;
        ASSERT_EQ(real.fingerprint(real.root()), shadow.fingerprint(shadow.root())) << "round " << round;
      }
    }
    EXPECT_EQ(CountersOf(real), before) << "round " << round;
    EXPECT_TRUE(real.no_what_if());
    EXPECT_EQ(real.CheckInvariants(), "");
  }
}

// The target of a Retarget: some jobs released, and of the GPUs free once they are, some held
// (by 64-GPU word, as Reserve's walk gives them).
struct Target {
  std::vector<JobId> jobs;
  std::vector<uint64_t> hold;
};

Target RandomTarget(const Topology& now, const std::vector<JobId>& ids, std::mt19937_64& rng) {
  Target out;
  for (JobId id : ids) {
    if (rng() % 3 == 0) out.jobs.push_back(id);
  }
  Topology after = now;
  for (JobId id : out.jobs) (void)after.Suspend(id);
  out.hold.assign((now.gpu_count() + 63) / 64, 0);
  for (uint32_t g = 0; g < now.gpu_count(); ++g) {
    if (after.is_free(GpuId(g)) && rng() % 2 == 0) out.hold[g >> 6] |= uint64_t{1} << (g & 63);
  }
  return out;
}

// The Topology as a fresh WhatIf leaves it after the target's changes.
std::string FreshCounters(const Topology& now, const Target& target) {
  Topology fresh = now;
  std::vector<GpuId> held;
  for (uint32_t g = 0; g < fresh.gpu_count(); ++g) {
    if ((target.hold[g >> 6] >> (g & 63)) & 1) held.push_back(GpuId(g));
  }
  WhatIf what_if(fresh);
  what_if.ReleaseJobsAndHold(target.jobs, held);
  return CountersOf(fresh);
}

TEST(WhatIf, RetargetLeavesWhatAFreshWhatIfWouldFromAnyStateInForce) {
  std::mt19937_64 rng(11);
  uint64_t kept_jobs = 0, kept_gpus = 0;
  for (int round = 0; round < 40; ++round) {
    Topology real = Build(TwoTier(2, 2));  // 32 GPUs
    std::vector<JobId> ids(AllocateRandomJobs(real, rng, 4, 6).size());
    std::iota(ids.begin(), ids.end(), JobId{1});
    const Topology now = real;
    const std::string before = CountersOf(real);
    {
      WhatIf::Buffers buffers;
      WhatIf what_if(real, buffers);
      what_if.Block({});
      Target last;
      for (int step = 0; step < 12; ++step) {
        const Target target = RandomTarget(now, ids, rng);
        for (JobId j : target.jobs) kept_jobs += std::count(last.jobs.begin(), last.jobs.end(), j);
        what_if.Retarget(target.jobs, target.hold);
        ASSERT_EQ(CountersOf(real), FreshCounters(now, target)) << "round " << round << " step " << step;
        ASSERT_TRUE(what_if.empty(0));
        for (size_t w = 0; w < target.hold.size() && !last.hold.empty(); ++w)
          kept_gpus += std::popcount(target.hold[w] & last.hold[w]);
        last = target;
        // Then changes as a walk makes them once live: more jobs released, GPUs held and given
        // back, the promised block extended.
        for (int k = 0; k < 6; ++k) {
          const GpuId g(static_cast<uint32_t>(rng() % real.gpu_count()));
          switch (rng() % 4) {
            case 0: what_if.ReleaseJob(ids[rng() % ids.size()]); break;
            case 1: (void)what_if.HoldOne(g); break;
            case 2: what_if.UnholdOne(g); break;
            default: what_if.Extend(0, std::vector<GpuId>{g}); break;
          }
        }
      }
    }
    EXPECT_EQ(CountersOf(real), before) << "round " << round;
    EXPECT_TRUE(real.no_what_if());
    EXPECT_EQ(real.CheckInvariants(), "");
  }
  EXPECT_GT(kept_jobs, 100u);  // the retargets kept releases and holds in force, not only made them
  EXPECT_GT(kept_gpus, 100u);
}

// The twin is the Topology it follows again after each change there (from its journal, or a copy
// when the journal is full), whatever its what-if had in force; the journal is kept from the
// twin's making on.
TEST(WalkTwin, FollowsTheTopologyThroughItsJournal) {
  std::mt19937_64 rng(13);
  Topology real = Build(TwoTier(2, 2));
  std::vector<JobId> ids(AllocateRandomJobs(real, rng, 8, 6).size());
  std::iota(ids.begin(), ids.end(), JobId{1});
  JobId next = ids.size() + 1;
  const Placer placer(real);
  WalkTwin twin(real, placer, {});
  uint64_t changes = 0, overflows = 0;
  for (int step = 0; step < 200; ++step) {
    overflows += real.journal_full();
    twin.Sync(real);
    // Nothing in force: the twin is the Topology.
    twin.what_if.Retarget({}, std::vector<uint64_t>((real.gpu_count() + 63) / 64, 0));
    ASSERT_EQ(CountersOf(twin.topo), CountersOf(real)) << "step " << step;
    const Target target = RandomTarget(real, ids, rng);
    twin.what_if.Retarget(target.jobs, target.hold);
    ASSERT_EQ(CountersOf(twin.topo), FreshCounters(real, target)) << "step " << step;
    // Changes that stay: a job ends, one starts on free GPUs, a node drains or comes back; the
    // journal overflows now and then (a copy is made then: a burst of three times its size, as
    // some draws change nothing, a release with no job left or a start with no GPU free).
    const int burst = step % 50 == 49 ? 3 * static_cast<int>(Topology::kJournalMax) : 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < burst; ++k) {
      switch (rng() % 3) {
        case 0:
          if (!ids.empty()) {
            const size_t i = rng() % ids.size();
            ASSERT_TRUE(real.Release(ids[i]));
            ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(i));
          }
          break;
        case 1: {
          std::vector<GpuId> free;
          for (uint32_t g = 0; g < real.gpu_count() && free.size() < 1 + rng() % 4; ++g) {
            if (real.is_free(GpuId(g))) free.push_back(GpuId(g));
          }
          if (!free.empty()) {
            ASSERT_TRUE(real.Allocate(next, free, 50.0));
            ids.push_back(next++);
          }
          break;
        }
        default: {
          const NodeId n(static_cast<uint32_t>(rng() % real.node_count()));
          ASSERT_TRUE(real.SetNodeState(n, rng() % 2 ? NodeState::kUp : NodeState::kDrain));
          break;
        }
      }
      ++changes;
    }
  }
  EXPECT_GT(changes, 4 * Topology::kJournalMax);
  // A copy only after an overflow: from the first change on, the journal was kept.
  EXPECT_EQ(twin.copies, overflows);
  EXPECT_GT(overflows, 0u);
}

}  // namespace
}  // namespace phalanx
