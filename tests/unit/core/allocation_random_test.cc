// Randomized allocate/release/drain sequences on generated fabrics. The Placer picks GPUs, the
// Topology commits them; the test keeps its own ledger (owner of every GPU, GPUs of every job,
// node states) and after every step checks the Topology against it and against a recount of
// every counter: free GPUs, entirely free nodes, the free-count histogram, and the jobs and
// traffic crossing every uplink. Calls that must fail (double allocation, busy or unavailable
// GPU, repeated GPU, out-of-range id, job already holding GPUs, ...) must change nothing.
//
// PHALANX_QUALITY_SCALE (a factor, default 1) scales step counts, for slow builds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/placement/placer.h"
#include "core/topology/node_models.h"
#include "core/topology/topology.h"
#include "quality_scale.h"

namespace phalanx {
namespace {

uint32_t Uniform(std::mt19937& rng, uint32_t lo, uint32_t hi) {
  if (hi <= lo) return lo;
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
}

// Everything observable about the Topology's state, for "a failed call changes nothing".
struct Snapshot {
  std::vector<JobId> owners;
  std::vector<NodeState> states;
  std::vector<uint32_t> free, free_nodes, hist, crossing_jobs;
  std::vector<double> crossing_gbs;
  std::map<JobId, std::vector<GpuId>> jobs;
  size_t job_count = 0;

  static Snapshot Of(const Topology& t, const std::map<JobId, std::vector<GpuId>>& known_jobs) {
    Snapshot s;
    for (uint32_t g = 0; g < t.gpu_count(); ++g) s.owners.push_back(t.owner(GpuId(g)));
    for (uint32_t n = 0; n < t.node_count(); ++n) s.states.push_back(t.node_state(NodeId(n)));
    for (uint32_t d = 0; d < t.domain_count(); ++d) {
      const DomainId id(d);
      s.free.push_back(t.free_gpus(id));
      s.free_nodes.push_back(t.free_nodes(id));
      for (uint32_t f = 0; f <= t.max_gpus_per_node(); ++f) s.hist.push_back(t.nodes_with_free(id, f));
      s.crossing_jobs.push_back(t.crossing_jobs(id));
      s.crossing_gbs.push_back(t.crossing_gbs(id));
    }
    for (const auto& [job, gpus] : known_jobs) {
      const auto held = t.job_gpus(job);
      s.jobs[job] = std::vector<GpuId>(held.begin(), held.end());
    }
    s.job_count = t.job_count();
    return s;
  }
  bool operator==(const Snapshot&) const = default;
};

class Ledger {
 public:
  Ledger(Topology& t, uint64_t seed)
      : t_(t),
        placer_(t),
        rng_(static_cast<uint32_t>(seed)),
        owner_(t.gpu_count(), kNoJob),
        state_(t.node_count(), NodeState::kUp) {
    t.fingerprint(t.root());  // kept from now on, and recounted by CheckInvariants
  }

  void Step(int step) {
    step_ = step;
    // Utilization swings between ~30% and ~97% so that both empty and packed states get
    // exercised (busy outcomes, contended uplinks, fragmented nodes).
    const double target = (step / 700) % 2 ? 0.97 : 0.3;
    const uint32_t r = Uniform(rng_, 0, 99);
    const double used = 1.0 - static_cast<double>(CountFree()) / static_cast<double>(t_.gpu_count());
    peak_used_ = std::max(peak_used_, used);
    if (r < 65) {
      if (used < target || jobs_.empty() || r < 15) {
        PlaceAndCommit();
      } else {
        ReleaseOne();
      }
    } else if (r < 75) {
      ChangeNodeState();
    } else {
      FailingCall();
    }
    Verify();
  }

  int placed() const { return placed_; }
  int not_placed() const { return not_placed_; }
  double peak_used() const { return peak_used_; }
  int failed_calls() const { return failed_calls_; }

 private:
  std::string Where() const { return t_.name() + " step " + std::to_string(step_); }

  uint32_t CountFree() const {
    uint32_t n = 0;
    for (uint32_t g = 0; g < t_.gpu_count(); ++g)
      n += owner_[g] == kNoJob && state_[t_.node_of(GpuId(g)).value] == NodeState::kUp;
    return n;
  }

  PlacementRequest RandomRequest() {
    PlacementRequest r;
    const uint32_t kind = Uniform(rng_, 0, 9);
    const uint32_t gpn = t_.max_gpus_per_node();
    if (kind < 5) {
      static constexpr uint32_t kSizes[] = {1, 1, 2, 2, 3, 4, 4, 6, 8, 8, 12, 16, 16, 24, 32, 48, 64};
      r.gpus = kSizes[Uniform(rng_, 0, std::size(kSizes) - 1)];
    } else if (kind < 8) {
      r.nodes = Uniform(rng_, 1, 6);
      r.gpus_per_node = Uniform(rng_, 1, gpn);
      r.gpus = r.nodes * r.gpus_per_node;
    } else {
      r.gpus = Uniform(rng_, 1, 2 * gpn);
    }
    r.exclusive = Uniform(rng_, 0, 5) == 0;
    r.rail_aligned = Uniform(rng_, 0, 5) == 0;
    const uint32_t fit = Uniform(rng_, 0, 5);
    if (fit >= 4) {
      r.fit = fit == 4 ? FitMode::kPrefer : FitMode::kRequire;
      static constexpr Level kLevels[] = {Level::kGroup, Level::kNode, Level::kNvlDomain, Level::kLeaf, Level::kSpine};
      r.level = kLevels[Uniform(rng_, 0, std::size(kLevels) - 1)];
    }
    return r;
  }

  void PlaceAndCommit() {
    const PlacementRequest r = RandomRequest();
    const PlaceOutcome out = placer_.Place(r);
    EXPECT_EQ(out.status == PlaceStatus::kUnsatisfiable, !placer_.Unsatisfiable(r).empty())
        << Where() << ": " << out.reason;
    if (out.status != PlaceStatus::kPlaced) {
      ++not_placed_;
      EXPECT_FALSE(out.reason.empty()) << Where();
      return;
    }
    const Placement& p = out.placement;
    ASSERT_EQ(p.gpus.size(), r.gpus) << Where();
    std::vector<GpuId> all = p.gpus;
    all.insert(all.end(), p.held.begin(), p.held.end());
    std::sort(all.begin(), all.end());
    ASSERT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end()) << Where() << ": placement repeats a GPU";
    for (GpuId g : all) {
      ASSERT_LT(g.value, t_.gpu_count()) << Where();
      ASSERT_EQ(owner_[g.value], kNoJob) << Where() << ": placer chose a GPU of job " << owner_[g.value];
      ASSERT_EQ(state_[t_.node_of(g).value], NodeState::kUp)
          << Where() << ": placer chose a GPU on an unavailable node";
    }
    const JobId job = next_job_++;
    const double ring = p.prediction.busbw_gbs;
    ASSERT_TRUE(t_.Allocate(job, all, ring).has_value()) << Where();
    for (GpuId g : all) owner_[g.value] = job;
    jobs_[job] = all;
    ring_[job] = std::llround(ring * 1000.0);  // the topology charges whole MB/s
    ++placed_;
  }

  void ReleaseOne() {
    if (jobs_.empty()) {
      ExpectFails([&] { return t_.Release(next_job_ + 7); }, "release of an unknown job");
      return;
    }
    auto it = jobs_.begin();
    std::advance(it, Uniform(rng_, 0, static_cast<uint32_t>(jobs_.size()) - 1));
    const JobId job = it->first;
    ASSERT_TRUE(t_.Release(job).has_value()) << Where();
    for (GpuId g : it->second) owner_[g.value] = kNoJob;
    jobs_.erase(it);
    ring_.erase(job);
    ExpectFails([&] { return t_.Release(job); }, "second release of a job");
  }

  void ChangeNodeState() {
    const NodeId n(Uniform(rng_, 0, static_cast<uint32_t>(t_.node_count()) - 1));
    // Mostly back to Up, so the cluster does not drain away.
    const uint32_t r = Uniform(rng_, 0, 9);
    const NodeState s = r < 5 ? NodeState::kUp : r < 8 ? NodeState::kDrain : NodeState::kDown;
    ASSERT_TRUE(t_.SetNodeState(n, s).has_value()) << Where();
    state_[n.value] = s;
  }

  // Runs `call`, which must fail and leave the state exactly as it was.
  template <typename Call>
  void ExpectFails(Call call, std::string_view what) {
    const Snapshot before = Snapshot::Of(t_, jobs_);
    const Status s = call();
    EXPECT_FALSE(s.has_value()) << Where() << ": " << what << " succeeded";
    EXPECT_TRUE(Snapshot::Of(t_, jobs_) == before) << Where() << ": failed " << what << " changed the state";
    ++failed_calls_;
  }

  std::vector<GpuId> RandomFree(uint32_t k) {
    std::vector<GpuId> free;
    for (uint32_t g = 0; g < t_.gpu_count(); ++g) {
      if (owner_[g] == kNoJob && state_[t_.node_of(GpuId(g)).value] == NodeState::kUp) free.push_back(GpuId(g));
    }
    std::shuffle(free.begin(), free.end(), rng_);
    free.resize(std::min<size_t>(k, free.size()));
    return free;
  }

  void FailingCall() {
    const JobId fresh = next_job_++;
    std::vector<GpuId> gpus = RandomFree(Uniform(rng_, 1, 4));
    switch (Uniform(rng_, 0, 8)) {
      case 0:  // the job already holds GPUs
        if (jobs_.empty() || gpus.empty()) break;
        ExpectFails([&] { return t_.Allocate(jobs_.begin()->first, gpus, 10); }, "allocation to a job holding GPUs");
        return;
      case 1:  // double allocation: another job's GPUs again
        if (jobs_.empty()) break;
        ExpectFails([&] { return t_.Allocate(fresh, jobs_.rbegin()->second, 10); }, "double allocation");
        return;
      case 2:  // one busy GPU among free ones
        if (jobs_.empty()) break;
        gpus.insert(gpus.begin() + Uniform(rng_, 0, static_cast<uint32_t>(gpus.size())), jobs_.begin()->second.front());
        ExpectFails([&] { return t_.Allocate(fresh, gpus, 10); }, "allocation of a busy GPU");
        return;
      case 3:  // a GPU listed twice
        if (gpus.empty()) break;
        gpus.push_back(gpus[Uniform(rng_, 0, static_cast<uint32_t>(gpus.size()) - 1)]);
        std::shuffle(gpus.begin(), gpus.end(), rng_);
        ExpectFails([&] { return t_.Allocate(fresh, gpus, 10); }, "allocation of a repeated GPU");
        return;
      case 4:  // out-of-range ids
        gpus.push_back(Uniform(rng_, 0, 1) ? GpuId()
                                           : GpuId(static_cast<uint32_t>(t_.gpu_count()) + Uniform(rng_, 0, 5)));
        std::shuffle(gpus.begin(), gpus.end(), rng_);
        ExpectFails([&] { return t_.Allocate(fresh, gpus, 10); }, "allocation of an out-of-range GPU");
        return;
      case 5: {  // an unowned GPU on a drained or down node
        for (uint32_t g = 0; g < t_.gpu_count(); ++g) {
          if (owner_[g] == kNoJob && state_[t_.node_of(GpuId(g)).value] != NodeState::kUp) {
            gpus.push_back(GpuId(g));
            ExpectFails([&] { return t_.Allocate(fresh, gpus, 10); }, "allocation on an unavailable node");
            return;
          }
        }
        break;
      }
      case 6:  // job id 0, or no GPUs
        if (Uniform(rng_, 0, 1) && !gpus.empty()) {
          ExpectFails([&] { return t_.Allocate(kNoJob, gpus, 10); }, "allocation to job 0");
        } else {
          ExpectFails([&] { return t_.Allocate(fresh, std::span<const GpuId>(), 10); }, "allocation of no GPUs");
        }
        return;
      case 7:  // unknown node
        ExpectFails(
            [&] {
          return t_.SetNodeState(NodeId(static_cast<uint32_t>(t_.node_count()) + Uniform(rng_, 0, 3)),
                                 NodeState::kDrain);
            },
            "state change of an unknown node");
        return;
      default: ExpectFails([&] { return t_.Release(fresh); }, "release of an unknown job"); return;
    }
    ExpectFails([&] { return t_.Release(fresh); }, "release of an unknown job");
  }

  // The Topology against the ledger, and every counter against a recount.
  void Verify() {
    const std::string bad = t_.CheckInvariants();
    ASSERT_TRUE(bad.empty()) << Where() << ":\n" << bad;
    ASSERT_EQ(t_.job_count(), jobs_.size()) << Where();
    std::vector<uint32_t> seen(t_.gpu_count(), 0);
    for (const auto& [job, gpus] : jobs_) {
      const auto held = t_.job_gpus(job);
      ASSERT_TRUE(std::equal(held.begin(), held.end(), gpus.begin(), gpus.end())) << Where() << ": job " << job;
      for (GpuId g : held) ASSERT_EQ(++seen[g.value], 1u) << Where() << ": GPU " << g.value << " in two jobs";
    }
    const size_t nd = t_.domain_count();
    // Prefix sums over GPUs (free) and nodes (entirely free): every domain is a contiguous range.
    std::vector<uint32_t> gpu_free(t_.gpu_count() + 1, 0), node_free(t_.node_count(), 0), whole(t_.node_count() + 1, 0);
    for (uint32_t g = 0; g < t_.gpu_count(); ++g) {
      ASSERT_EQ(t_.owner(GpuId(g)), owner_[g]) << Where() << ": owner of GPU " << g;
      const bool up = state_[t_.node_of(GpuId(g)).value] == NodeState::kUp;
      const bool free = owner_[g] == kNoJob && up;
      ASSERT_EQ(t_.is_free(GpuId(g)), free) << Where() << ": GPU " << g;
      gpu_free[g + 1] = gpu_free[g] + free;
      node_free[t_.node_of(GpuId(g)).value] += owner_[g] == kNoJob;
    }
    std::vector<uint32_t> hist(nd * (t_.max_gpus_per_node() + 1), 0);
    for (uint32_t n = 0; n < t_.node_count(); ++n) {
      ASSERT_EQ(t_.node_state(NodeId(n)), state_[n]) << Where();
      const bool up = state_[n] == NodeState::kUp;
      whole[n + 1] = whole[n] + (up && node_free[n] == t_.node_gpu_count(NodeId(n)));
      if (!up) continue;
      for (DomainId a = t_.node_domain(NodeId(n)); a.valid(); a = t_.domain(a).parent) {
        hist[a.value * (t_.max_gpus_per_node() + 1) + node_free[n]]++;
      }
    }
    // Crossing jobs and traffic: a job crosses the uplink of every non-GPU domain that holds some
    // but not all of its GPUs.
    std::vector<uint32_t> cross_jobs(nd, 0);
    std::vector<int64_t> cross_mbs(nd, 0);
    std::vector<uint32_t> count(nd, 0);
    for (const auto& [job, gpus] : jobs_) {
      std::vector<DomainId> touched;
      for (GpuId g : gpus) {
        for (DomainId a = t_.domain(t_.gpu_domain(g)).parent; a.valid(); a = t_.domain(a).parent) {
          if (count[a.value]++ == 0) touched.push_back(a);
        }
      }
      for (DomainId d : touched) {
        if (gpus.size() > 1 && count[d.value] < gpus.size()) {
          cross_jobs[d.value]++;
          cross_mbs[d.value] += ring_[job];
        }
        count[d.value] = 0;
      }
    }
    for (uint32_t i = 0; i < nd; ++i) {
      const DomainId d(i);
      const Domain& dom = t_.domain(d);
      ASSERT_EQ(t_.free_gpus(d), gpu_free[dom.first_gpu + dom.gpu_count] - gpu_free[dom.first_gpu])
          << Where() << ": " << dom.name;
      ASSERT_EQ(t_.free_nodes(d), whole[dom.first_node + dom.node_count] - whole[dom.first_node])
          << Where() << ": " << dom.name;
      for (uint32_t f = 0; f <= t_.max_gpus_per_node(); ++f) {
        ASSERT_EQ(t_.nodes_with_free(d, f), hist[i * (t_.max_gpus_per_node() + 1) + f])
            << Where() << ": " << dom.name << " f=" << f;
      }
      ASSERT_EQ(t_.crossing_jobs(d), cross_jobs[i]) << Where() << ": " << dom.name;
      // Loads are kept in integer MB/s, so the recount must match exactly.
      ASSERT_EQ(std::llround(t_.crossing_gbs(d) * 1000.0), cross_mbs[i]) << Where() << ": " << dom.name;
    }
  }

  Topology& t_;
  Placer placer_;
  std::mt19937 rng_;
  std::vector<JobId> owner_;
  std::vector<NodeState> state_;
  std::map<JobId, std::vector<GpuId>> jobs_;  // sorted GPUs
  std::map<JobId, int64_t> ring_;             // MB/s
  JobId next_job_ = 1;
  int step_ = 0;
  int placed_ = 0;
  int not_placed_ = 0;
  double peak_used_ = 0;
  int failed_calls_ = 0;
};

void RunSequence(const Result<TopologySpec>& spec, uint64_t seed, int steps) {
  ASSERT_TRUE(spec.has_value()) << spec.error().ToString();
  auto built = Topology::Build(*spec);
  ASSERT_TRUE(built.has_value()) << built.error().ToString();
  Topology t = *std::move(built);
  Ledger ledger(t, seed);
  const int n = std::max(1, static_cast<int>(steps * testing::QualityScale()));
  for (int i = 0; i < n; ++i) {
    ledger.Step(i);
    if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) {
      std::cout << "[allocation-random] " << t.name() << " seed=" << seed << " failed at step " << i << std::endl;
      return;
    }
  }
  std::cout << "[allocation-random] " << t.name() << " seed=" << seed << " steps=" << n << " placed=" << ledger.placed()
            << " not_placed=" << ledger.not_placed() << " peak_used=" << ledger.peak_used()
            << " failed_calls_checked=" << ledger.failed_calls() << " jobs_left=" << t.job_count() << std::endl;
}

TEST(AllocationRandomTest, SuperPodSmall) {
  RunSequence(GenerateSuperPod({.scalable_units = 2, .nodes_per_su = 8}), 11, 20'000);
}

TEST(AllocationRandomTest, LeafSpineOversubscribed) {
  RunSequence(GenerateLeafSpine({.nodes = 24, .nodes_per_leaf = 8, .oversubscription = 2.0, .model = "hgx-a100"}), 22,
              20'000);
}

TEST(AllocationRandomTest, LeafSpinePcieNodes) {
  RunSequence(GenerateLeafSpine({.nodes = 12, .nodes_per_leaf = 4, .oversubscription = 2.0, .model = "l40s-pcie"}), 33,
              15'000);
}

TEST(AllocationRandomTest, Nvl72TwoRacks) { RunSequence(GenerateNvl72({.racks = 2, .racks_per_leaf = 1}), 44, 20'000); }

TEST(AllocationRandomTest, Mixed) { RunSequence(GenerateMixed(), 55, 20'000); }

}  // namespace
}  // namespace phalanx
