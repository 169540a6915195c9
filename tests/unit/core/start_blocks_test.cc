// StartBlocks (core/sched/internal/start_blocks.h): the GPUs it holds while jobs start now are
// those of the reservations that begin before the last job's end, free GPUs only, whatever way
// it got there: prefixes that grow and shrink, reservations appended in between, jobs started
// and ended meanwhile, a preemptor that leaves out its own claim.
#include "core/sched/internal/start_blocks.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "test_clusters.h"

namespace phalanx {
namespace {

// What the held GPUs must be: every free GPU that an applied reservation lists.
std::vector<uint8_t> Expected(const Topology& t, const std::vector<Reservation>& rs, Time end, JobId except) {
  std::vector<uint8_t> held(t.gpu_count(), 0);
  for (const Reservation& r : rs) {
    if (r.start >= end || r.job == except) continue;
    for (GpuId g : r.gpus) {
      const JobId owner = t.owner(g);
      const bool up = t.node_state(t.node_of(g)) == NodeState::kUp;
      if (up && (owner == kNoJob || owner == Topology::kHeld)) held[g.value] = 1;
    }
  }
  return held;
}

TEST(StartBlocks, HoldsTheFreeGpusOfTheReservationsBeforeTheEndHoweverReached) {
  std::mt19937 rng(29);
  for (int round = 0; round < 60; ++round) {
    auto built = Topology::Build(testing::TwoTier(2, 3));  // 48 GPUs
    ASSERT_TRUE(built) << built.error().message;
    Topology& t = *built;
    std::vector<Reservation> rs;
    JobId next_job = 1;
    std::vector<JobId> running;
    auto some_gpus = [&](size_t most) {
      std::vector<GpuId> gpus;
      const size_t k = 1 + rng() % most;
      const uint32_t from = static_cast<uint32_t>(rng() % t.gpu_count());
      for (size_t i = 0; i < k && from + i < t.gpu_count(); ++i) gpus.push_back(GpuId(from + static_cast<uint32_t>(i)));
      return gpus;
    };
    auto reserve = [&](JobId job) {
      const Time start = static_cast<Time>(rng() % 10) * 100;
      rs.push_back({job, start, start + 1000, some_gpus(12)});
    };
    for (int i = 0; i < 4; ++i) reserve(next_job++);
    StartBlocks blocks(t);
    bool set = false;
    Time end = 0;
    JobId except = kNoJob;               // a preemptor whose claim is left out, if it has one
    auto ask = [&](Time e, JobId job) {  // a job that would end at e asks to start now
      blocks.Set(rs, e, job);
      set = true;
      end = e;
      except = kNoJob;
      for (const Reservation& r : rs) except = r.job == job ? job : except;
    };
    for (int step = 0; step < 200; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 4) {
        ask(static_cast<Time>(rng() % 12) * 100, rng() % 4 == 0 ? rs[rng() % rs.size()].job : next_job);
      } else if (op < 6) {  // a reservation made: taken at once unless a preemptor asked last
        reserve(next_job++);
        blocks.Appended(rs);
        if (except != kNoJob) continue;  // the next Set makes them
      } else if (op < 8) {               // a job starts on free GPUs that are not blocked (after its Set)
        if (set) ask(end, except);
        std::vector<GpuId> free;
        for (GpuId g : some_gpus(6)) {
          if (t.is_free(g)) free.push_back(g);
        }
        if (!free.empty() && t.Allocate(next_job, free, 10.0)) running.push_back(next_job);
        ++next_job;
      } else if (op < 9) {  // a job ends (its GPUs may be wanted)
        if (running.empty()) continue;
        const size_t k = rng() % running.size();
        ASSERT_TRUE(t.Release(running[k]));
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        continue;  // blocks made anew at the next Set or Appended, not before
      } else {
        blocks.Clear();
        set = false;
      }
      const std::vector<uint8_t> want = set ? Expected(t, rs, end, except) : std::vector<uint8_t>(t.gpu_count(), 0);
      size_t held = 0;
      for (uint32_t g = 0; g < t.gpu_count(); ++g) {
        ASSERT_EQ(t.owner(GpuId(g)) == Topology::kHeld, want[g] == 1)
            << "round " << round << " step " << step << " GPU " << g;
        ASSERT_EQ(blocks.blocks(GpuId(g)), want[g] == 1);
        held += want[g];
      }
      ASSERT_EQ(blocks.blocked_gpus(), held);
      ASSERT_EQ(t.CheckInvariants(), "");
    }
    blocks.Clear();
    EXPECT_EQ(t.held_gpus(), 0u);
    EXPECT_EQ(t.CheckInvariants(), "");
  }
}

}  // namespace
}  // namespace phalanx
