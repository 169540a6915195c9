// ClusterSnapshot: the numbers /metrics and the history sampler report, read from the core in
// one go on the io thread (one consistent snapshot: GPUs by state add up to the total, the
// queue by reason to the pending jobs). docs/monitoring.md names each one.
//
// BestBusbw: the predicted ring bandwidth of the best placement of N GPUs on the empty cluster
// (a private copy of the topology with every job released and every node up), cached per N;
// placement efficiency is a running job's predicted bandwidth over that.
// Thread-safety: TakeSnapshot on the io thread (it reads the Controller); BestBusbw is not
// thread-safe (one owner).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/placement/placer.h"
#include "core/topology/topology.h"
#include "service/controller.h"

namespace phalanx::service {

class BestBusbw {
 public:
  explicit BestBusbw(const Topology& cluster);
  // 0 when `gpus` cannot be placed on the empty cluster.
  double For(uint32_t gpus);

 private:
  Topology empty_;
  std::unique_ptr<Placer> placer_;  // over empty_
  std::map<uint32_t, double> cache_;
};

// Jobs by size, for wait-time and reservation figures: "1", "2-8", "9-64", "65+" GPUs.
std::string_view JobSizeBucket(uint32_t gpus);
inline constexpr std::string_view kJobSizeBuckets[] = {"1", "2-8", "9-64", "65+"};

struct LevelSnapshot {
  std::string level;  // "node", "leaf", ... (levels present, from the top)
  uint32_t domains = 0;
  uint32_t largest_free_block = 0;  // most free GPUs inside one domain of the level
  uint32_t whole_free_domains = 0;  // domains with every GPU free
  // Share of the idle GPUs that lie outside wholly free domains of the level (0..1; 0 when no
  // GPU is idle): how much of what is free a job wanting whole domains of the level cannot use.
  double fragmentation = 0;
};

struct ClusterSnapshot {
  Time now = 0;
  // GPUs: allocated (held by a job, on any node), else idle (free on an up node), drained or
  // down (free on a drained / down node). They add up to gpus_total.
  uint32_t gpus_total = 0, gpus_allocated = 0, gpus_idle = 0, gpus_drained = 0, gpus_down = 0;
  uint32_t nodes_up = 0, nodes_drained = 0, nodes_down = 0;
  std::map<std::string, uint32_t> jobs_by_state;    // pending, running, checkpointing (always present)
  std::map<std::string, uint32_t> queue_by_reason;  // pending jobs by wait reason (WaitKindName)
  std::vector<LevelSnapshot> levels;
  double fgd = 0;  // shape-aware fragmentation (GetFragmentation's fgd)
  // GPUs held by running and checkpointing jobs, by the job's user / account.
  std::map<std::string, uint32_t> user_gpus, account_gpus;
  // GPU-weighted mean of busbw / best busbw over running jobs of > 1 GPU (capped at 1 per job);
  // empty when there is none.
  std::optional<double> placement_efficiency;
  // Per job known to the core: preemptions and GPU-seconds lost (the sampler turns them into
  // per-interval amounts).
  std::map<JobId, std::pair<uint32_t, double>> job_losses;
  // Pending jobs that had a predicted start: the longest time past it, by size bucket (0 when
  // none is late). `first_predicted` holds each pending job's first predicted start (kept by the
  // caller across snapshots); TakeSnapshot updates it and drops jobs no longer pending.
  std::map<std::string, double> reservation_overdue_s;
};

ClusterSnapshot TakeSnapshot(Controller& c, BestBusbw* best, std::map<JobId, Time>* first_predicted);

}  // namespace phalanx::service
